"""``mcec run`` on a terminal: the step running now and, for each ``each``, a progress bar.

:class:`ProgressDisplay` is an event sink (``agentmonad.events``) drawing with rich on
stderr while the run lasts, and erasing itself when it ends (the result and ``--trace``
follow on a clean screen). ``mcec run`` attaches it only when stderr is a terminal, and
imports this module (and rich) only then.
"""

from __future__ import annotations

from types import TracebackType
from typing import TextIO, assert_never

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from agentmonad.events import (
    EachProgress,
    EffectEnded,
    EffectStarted,
    Event,
    GroupEnded,
    GroupStarted,
    ModelRequest,
    PartialOutput,
    PlanChecked,
    RunEnded,
    RunStarted,
    TextDelta,
    ToolCalled,
    now,
)
from agentmonad.outcome import Site

__all__ = ["ProgressDisplay"]


def _where(site: Site | None) -> str:
    return f" ({site.file}:{site.line})" if site is not None else ""


class ProgressDisplay:
    """Draws a run's progress on ``stream`` (a terminal): a line naming the step that started
    last, and a bar per ``each`` group running (done/total, failures, rate). Use it as a
    context manager around the run."""

    def __init__(self, stream: TextIO) -> None:
        self.console = Console(file=stream, stderr=True)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[failed]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.step = self.progress.add_task("starting", total=None, failed="", rate="")
        #: The bar of each ``each`` group running, by its span, and when it started.
        self.bars: dict[int, tuple[TaskID, float]] = {}

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.progress.stop()

    def emit(self, event: Event) -> None:
        """Show what ``event`` changes."""
        match event:
            case RunStarted(pipeline=name, site=site):
                self.progress.update(self.step, description=f"running {name}{_where(site)}")
            case EffectStarted(effect=effect) if effect.kind != "fn":
                name = effect.site.step if effect.site is not None else effect.kind
                self.progress.update(self.step, description=f"{effect.kind} {name}{_where(effect.site)}")
            case GroupStarted(site=site, total=total, span=span) if site is None or site.step == "each":
                bar = self.progress.add_task(f"each{_where(site)}", total=total, failed="", rate="")
                self.bars[span] = (bar, now())
            case EachProgress(span=span, done=done, failed=failed, at=at) if span in self.bars:
                bar, started = self.bars[span]
                rate = f"{done / (at - started):.1f}/s" if at > started else ""
                self.progress.update(bar, completed=done, failed=f"{failed} failed" if failed else "", rate=rate)
            case GroupEnded(span=span) if span in self.bars:
                self.progress.remove_task(self.bars.pop(span)[0])
            case (
                EffectStarted() | EffectEnded() | GroupStarted() | EachProgress() | GroupEnded() | RunEnded()
                | ModelRequest() | TextDelta() | PartialOutput() | ToolCalled() | PlanChecked()
            ):
                pass
            case _:
                assert_never(event)
