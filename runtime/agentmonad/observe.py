"""A run's events in Python: :func:`observe` iterates over them, :func:`emit` sends one.

The event types and what they mean are in :mod:`agentmonad.events`; this module holds what
reads the run context (the sink attached where the code runs, ``RunContext.span`` the span
open there): :func:`emit`; the spans the runtime opens — :class:`EffectSpan` (the effect
seam), :class:`GroupSpan` (``run_group``), :func:`run_observed` (a run's
``RunStarted``/``RunEnded``); :func:`observe`; and the process-wide run sinks
(:func:`add_run_sink`: what :func:`agentmonad.otel.instrument` installs, so that every run in
the process reports to it without a ``with hooks(…)`` block around each call).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Generic, TypeVar, final

from contextvars import Token

from .context import RunContext, current_run_context, hooks, reset_run_context, set_run_context
from .events import (
    Effect,
    Fanout,
    EffectEnded,
    EffectStarted,
    EachProgress,
    Event,
    EventSink,
    GroupEnded,
    GroupStarted,
    OpenSpan,
    OutcomeKind,
    RunEnded,
    RunStarted,
    failure_kind,
    new_span_id,
    now,
    outcome_kind,
)
from .outcome import Err, Outcome, Site

__all__ = [
    "emit",
    "current_span",
    "current_effect",
    "EffectSpan",
    "GroupSpan",
    "run_observed",
    "run_sink",
    "observed_run",
    "add_run_sink",
    "remove_run_sink",
    "RUN_SINKS",
    "observe",
    "Observed",
]

_A = TypeVar("_A")
_R = TypeVar("_R")


def emit(event: Event) -> None:
    """Send ``event`` to the event sink attached here, if any (what the runtime's parts and
    user code that wants to report something call)."""
    sink = current_run_context().events
    if sink is not None:
        sink.emit(event)



# ------------------------------------------------------------------------- spans


def current_span() -> int | None:
    """The innermost span open here (a run, an effect, a group), or ``None`` (none open, or no
    event sink attached)."""
    opened = current_run_context().span
    return opened.span if opened is not None else None


def current_effect() -> Effect | None:
    """The innermost effect running here (``None`` outside any, or with no event sink
    attached): what a model call that streams attributes its ``TextDelta`` to."""
    opened = current_run_context().span
    return opened.effect if opened is not None else None


def _enter(effect: Effect | None) -> tuple[OpenSpan, OpenSpan | None, Token[RunContext]]:
    """Open a span inside the current one: the run context code runs in from now on says so."""
    run = current_run_context()
    opened = OpenSpan(new_span_id(), effect)
    return opened, run.span, set_run_context(run.with_span(opened))


@final
class EffectSpan:
    """One effect, open while it runs (the effect seam makes one when an event sink is attached):
    tells the sink it started now, and how it ended with :meth:`ended` or :meth:`failed`. The
    effect runs inside it: its model requests, tool calls and streamed text are attributed to it."""

    __slots__ = ("sink", "effect", "opened", "parent", "token", "started")

    def __init__(self, sink: EventSink, effect: Effect) -> None:
        self.sink = sink
        self.effect = effect
        self.opened, self.parent, self.token = _enter(effect)
        self.started = now()
        sink.emit(EffectStarted(effect, self.opened.span, self.parent.span if self.parent else None, self.started))

    def ended(self, result: object) -> None:
        """The effect returned ``result``."""
        self._close(outcome_kind(result), type(result.error).__name__ if type(result) is Err else None)

    def failed(self, exc: BaseException) -> None:
        """The effect raised ``exc``."""
        self._close(failure_kind(exc), type(exc).__name__)

    def _close(self, kind: OutcomeKind, error: str | None) -> None:
        reset_run_context(self.token)
        at = now()
        opened = self.opened
        self.sink.emit(
            EffectEnded(
                self.effect, opened.span, kind, at - self.started, opened.prompt_tokens, opened.completion_tokens,
                error, at,
            )
        )


@final
class GroupSpan:
    """A ``par``/``each`` group, open while its branches run (``run_group`` makes one when an
    event sink is attached; the branches' tasks start inside it)."""

    __slots__ = ("sink", "site", "index", "total", "done", "failed_count", "opened", "parent", "token", "started")

    def __init__(self, sink: EventSink, site: Site | None, total: int) -> None:
        self.sink = sink
        self.site = site
        self.index = current_run_context().index
        self.total = total
        self.done = 0
        self.failed_count = 0
        self.opened, self.parent, self.token = _enter(None)
        self.started = now()
        sink.emit(GroupStarted(site, self.index, total, self.opened.span, self.parent.span if self.parent else None))

    def branch_done(self, failed: bool) -> None:
        """One more branch finished (``failed``: with an ``Err`` or a Defect)."""
        self.done += 1
        self.failed_count += failed
        self.sink.emit(EachProgress(self.site, self.index, self.done, self.total, self.failed_count, self.opened.span))

    def ended(self, result: object) -> None:
        """The group's outcome is ``result``."""
        self._close(outcome_kind(result))

    def failed(self, exc: BaseException) -> None:
        """The group raised ``exc`` (a Defect, a cancellation)."""
        self._close(failure_kind(exc))

    def _close(self, kind: OutcomeKind) -> None:
        reset_run_context(self.token)
        at = now()
        self.sink.emit(GroupEnded(self.site, self.opened.span, kind, at - self.started, at))


# ------------------------------------------------------------------------- runs


#: The process-wide run sinks (:func:`add_run_sink`): each is called when a run starts (a
#: compiled pipeline called from outside any run, ``run_observed``) and gives the event sink that
#: run reports to, or ``None`` for none. Empty (the default), a run looks at nothing more than its
#: run context; compiled code tests this list, one global read, before it looks at all.
RUN_SINKS: list[Callable[[], EventSink | None]] = []


def add_run_sink(sink_for_run: Callable[[], EventSink | None]) -> None:
    """Make every run that starts in this process from now on report to ``sink_for_run()`` (called
    once per run; ``None``: not this one), besides any sink attached where it starts."""
    if sink_for_run not in RUN_SINKS:
        RUN_SINKS.append(sink_for_run)


def remove_run_sink(sink_for_run: Callable[[], EventSink | None]) -> None:
    """Undo :func:`add_run_sink` (nothing if it was not added)."""
    if sink_for_run in RUN_SINKS:
        RUN_SINKS.remove(sink_for_run)


def _sink_of(run: RunContext) -> EventSink | None:
    """The event sink a run starting in ``run`` reports to: the one attached there and each
    process-wide run sink's for this run, or ``None`` when nothing listens."""
    sink = run.events
    for make in RUN_SINKS:  # a loop, not a comprehension: this is every uninstrumented run's cost
        made = make()
        if made is not None:
            sink = made if sink is None else Fanout(sink, made)
    return sink


def run_sink() -> EventSink | None:
    """The event sink a run starting here reports to (:func:`observed_run`), or ``None``: no run
    starts here (the code runs inside a run's span already: a pipeline called by a step, or by
    another pipeline of the run) or nothing listens. What a compiled pipeline asks at entry, while
    :data:`agentmonad.context.HOOKS_ALIVE` or :data:`RUN_SINKS` is not empty."""
    run = current_run_context()
    if run.span is not None:
        return None
    return _sink_of(run)


async def observed_run(
    sink: EventSink, pipeline: str, site: Site | None, call: Callable[[], Awaitable[_R]]
) -> _R:
    """``await call()``, a run of ``pipeline`` (declared at ``site``, ``None`` when not known),
    told to ``sink`` (:func:`run_sink`'s) as :class:`RunStarted`/:class:`RunEnded` around its
    events; ``sink`` is attached for the run's code."""
    run = current_run_context()
    attached = run if run.events is sink else run.with_hooks(events=sink)
    opened = OpenSpan(new_span_id(), None)
    parent = run.span
    token = set_run_context(attached.with_span(opened))
    started = now()
    sink.emit(RunStarted(pipeline, site, opened.span, parent.span if parent else None, started))
    kind: OutcomeKind = "defect"
    try:
        outcome = await call()
        kind = outcome_kind(outcome)
        return outcome
    except BaseException as exc:
        kind = failure_kind(exc)
        raise
    finally:
        reset_run_context(token)
        at = now()
        sink.emit(RunEnded(pipeline, opened.span, kind, at - started, at))


async def run_observed(
    pipeline: str, site: Site | None, call: Callable[[], Awaitable[Outcome[Any, Any, _A]]]
) -> Outcome[Any, Any, _A]:
    """``await call()`` (a run of ``pipeline``), told to the event sink attached here and to the
    process-wide run sinks (:func:`add_run_sink`) as :class:`RunStarted`/:class:`RunEnded` around
    its events. ``site`` is where the pipeline is declared, for the run's span; ``None`` is fine
    (the run then has no site). Just the call with nothing listening, or inside a span already (a
    run nested in a step, or one :func:`observe` already tells): a run is told once, where it
    starts. (A compiled pipeline tells its own run when called from outside any: this is for
    code that is not one, and for the interpreter.)"""
    sink = run_sink()
    if sink is None:
        return await call()
    return await observed_run(sink, pipeline, site, call)


class _QueueSink:
    """An event sink that puts every event on a queue (what :func:`observe` attaches)."""

    __slots__ = ("queue",)

    def __init__(self, queue: asyncio.Queue[Event | None]) -> None:
        self.queue = queue

    def emit(self, event: Event) -> None:
        self.queue.put_nowait(event)


@final
class Observed(Generic[_A]):
    """A run whose events are iterated over (:func:`observe`): ``async for event in observed``
    starts the run and yields each event as it happens; once the iteration ends, the run's
    Outcome is :attr:`outcome` (``await observed`` runs it to the end, events dropped, and gives
    it). A Defect (or another exception) the run raised is raised when the iteration ends."""

    def __init__(self, pipeline: str, site: Site | None, call: Callable[[], Awaitable[Outcome[Any, Any, _A]]]) -> None:
        self._pipeline = pipeline
        self._site = site
        self._call = call
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[Outcome[Any, Any, _A]] | None = None

    @property
    def outcome(self) -> Outcome[Any, Any, _A]:
        """The run's Outcome (only once the iteration is over)."""
        if self._task is None or not self._task.done():
            raise RuntimeError("the run has not finished: iterate over its events first")
        return self._task.result()

    async def _run(self) -> Outcome[Any, Any, _A]:
        try:
            with hooks(events=_QueueSink(self._queue)):
                return await run_observed(self._pipeline, self._site, self._call)
        finally:
            self._queue.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        if self._task is not None:
            raise RuntimeError("a run's events can be iterated over once")
        self._task = asyncio.get_running_loop().create_task(self._run())
        try:
            while (event := await self._queue.get()) is not None:
                yield event
        finally:
            if not self._task.done():  # the consumer stopped early: the run stops too
                self._task.cancel()
                await asyncio.wait([self._task])
        self._task.result()  # raises what the run raised

    def __await__(self) -> Any:
        return self._drain().__await__()

    async def _drain(self) -> Outcome[Any, Any, _A]:
        async for _ in self:
            pass
        return self.outcome


def observe(
    call: Callable[[], Awaitable[Outcome[Any, Any, _A]]], *, pipeline: str = "run", site: Site | None = None
) -> Observed[_A]:
    """A run of ``call()`` (a compiled pipeline: ``lambda: module.answer(state, question)``, or
    ``lambda: program.run(state)``) to iterate over::

        run = observe(lambda: module.answer(state, question), pipeline="answer")
        async for event in run:
            print(event)
        outcome = run.outcome

    ``pipeline`` names the run in :class:`RunStarted`. Events are queued without bound: a
    consumer slower than the run sees every event late, none is lost.
    """
    return Observed(pipeline, site, call)
