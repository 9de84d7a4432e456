"""``mcec run`` on a terminal: the step running now and, for each ``each``, a progress bar.

:class:`ProgressDisplay` is an event sink (``agentmonad.events``) drawing with rich on
stderr while the run lasts, and erasing itself when it ends (the result and ``--trace``
follow on a clean screen). ``mcec run`` attaches it only when stderr is a terminal, and
imports this module (and rich) only then.
"""

from __future__ import annotations

from types import TracebackType
from typing import TextIO, assert_never

from rich.console import Console, RenderableType
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, Task, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

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


class _Bar(ProgressColumn):
    """A bar for a group's row; none on the running step's row (it has no total)."""

    def __init__(self) -> None:
        super().__init__()
        self.bar = BarColumn()

    def render(self, task: Task) -> RenderableType:
        """The bar, or nothing for a row without a total."""
        return Text("") if task.total is None else self.bar.render(task)


class ProgressDisplay:
    """Draws a run's progress on ``stream`` (a terminal): a line naming the step that started
    last, and a bar per ``each`` group running (done/total, failures, rate). Use it as a
    context manager around the run."""

    def __init__(self, stream: TextIO) -> None:
        self.console = Console(file=stream, stderr=True)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            _Bar(),
            TextColumn("{task.fields[count]}"),
            TextColumn("{task.fields[failed]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.step = self.progress.add_task("starting", total=None, count="", failed="", rate="")
        #: The bar of each ``each`` group running, by its span: when it started, whether it is
        #: inside another group's branch.
        self.bars: dict[int, tuple[TaskID, float, bool]] = {}
        #: Every group seen (``par`` ones too), by span.
        self.groups: set[int] = set()

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.progress.stop()

    def emit(self, event: Event) -> None:
        """Show what ``event`` changes."""
        if isinstance(event, GroupStarted):
            self.groups.add(event.span)
        match event:
            case RunStarted(pipeline=name, site=site):
                self.progress.update(self.step, description=f"running {name}{_where(site)}")
            case EffectStarted(effect=effect):
                name = effect.site.step if effect.site is not None else effect.kind
                self.progress.update(self.step, description=f"{effect.kind} {name}{_where(effect.site)}")
            case GroupStarted(site=site, total=total, span=span, parent=parent) if site is None or site.step == "each":
                bar = self.progress.add_task(f"each{_where(site)}", total=total, count=f"0/{total}", failed="", rate="")
                self.bars[span] = (bar, now(), parent in self.groups)
            case EachProgress(span=span, done=done, failed=failed, at=at) if span in self.bars:
                bar, started, _ = self.bars[span]
                rate = f"{done / (at - started):.1f}/s" if at > started else ""
                self.progress.update(
                    bar, completed=done, count=f"{done}/{event.total}", failed=f"{failed} failed" if failed else "", rate=rate
                )
            case GroupEnded(span=span) if span in self.bars:
                # an outermost group's bar stays, complete, until the run ends; a nested one goes
                # (an `each` inside an `each` would otherwise leave a bar per element)
                bar, _, nested = self.bars.pop(span)
                if nested:
                    self.progress.remove_task(bar)
            case (
                EffectStarted() | EffectEnded() | GroupStarted() | EachProgress() | GroupEnded() | RunEnded()
                | ModelRequest() | TextDelta() | PartialOutput() | ToolCalled() | PlanChecked()
            ):
                pass
            case _:
                assert_never(event)
