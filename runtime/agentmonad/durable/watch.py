"""The event sink a process attaches to the durable runs it runs itself (``mcec run --durable
--stream``, ``agentmonad.durable.runs.run(…, events=sink)``; docs/language.md §13 "Streaming a durable run").

A watched run's events are those of any run: its effects, and the pieces of the answers its
``stream llm`` steps stream as they arrive. A model call *replayed* from its record (the run
resumed after it) is not made again, and its pieces were never recorded — the answer was — so
:class:`WatchedJournal` (over the run's journal) tells the sink that recorded answer as one piece, as a backend that
cannot stream tells a whole answer (a ``TextDelta`` of the whole text, or one ``PartialOutput``
of the whole value, of the partial type the runtime makes for its class).

A durable run's body runs as a DBOS workflow (:func:`agentmonad.durable.runs.execute`), which DBOS calls
in a task, and on resume a thread, of its own: a context variable set by the caller does not
reach it. So the caller names the sink here for the run's id while it runs the run, and the
workflow's body looks it up by its run id when it starts. A run another process runs (a
worker's) finds no sink here: its events stay in that process.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ..events import Effect, EventSink
from .journal import DurableJournal

if TYPE_CHECKING:
    from ..context import Branches, Guard, Journal, RunContext
    from ..llm.streaming import Streaming


__all__ = ["WatchedJournal", "sink_for", "watched", "watching"]

_T = TypeVar("_T")

_sinks: dict[str, EventSink] = {}
_lock = threading.Lock()


@contextmanager
def watching(run_id: str, sink: EventSink | None) -> Iterator[None]:
    """While this holds, the run ``run_id`` tells ``sink`` what it does when this process runs
    it (``None``: nothing to attach)."""
    if sink is None:
        yield
        return
    with _lock:
        _sinks[run_id] = sink
    try:
        yield
    finally:
        with _lock:
            if _sinks.get(run_id) is sink:
                del _sinks[run_id]


def sink_for(run_id: str) -> EventSink | None:
    """The sink :func:`watching` names for ``run_id`` (None: none)."""
    with _lock:
        return _sinks.get(run_id)


def watched(journal: DurableJournal, streams: dict[str, Streaming], sink: EventSink | None) -> Journal:
    """The journal to attach to a run (``journal``, or a :class:`WatchedJournal` over it when
    ``sink`` watches the run; ``streams``: how each ``stream llm`` site of its spec streams)."""
    return journal if sink is None else WatchedJournal(journal, sink, streams)


class WatchedJournal:
    """The journal attached to a watched run (a sink attached): ``journal``'s, except that each
    ``stream llm`` answer it replays is told to the sink whole (see the module docstring)."""

    __slots__ = ("journal", "_sink", "_streams")

    def __init__(self, journal: DurableJournal, sink: EventSink, streams: dict[str, Streaming]) -> None:
        self.journal = journal
        self._sink = sink
        self._streams = streams

    async def perform(self, effect: Effect, call: Callable[[], Awaitable[_T]]) -> _T:
        """The journal's ``perform``; a streamed answer it gives from its record is told to the sink."""
        streaming = self._streams.get(str(effect.site)) if effect.kind == "model" else None
        if streaming is None:
            return await self.journal.perform(effect, call)
        called = False

        async def calling() -> _T:
            nonlocal called
            called = True
            return await call()

        result = await self.journal.perform(effect, calling)
        if not called:
            _tell_whole(streaming, self._sink, effect, result)
        return result

    def perform_sync(self, effect: Effect, call: Callable[[], _T]) -> _T:
        """The journal's (a model call is async: nothing to tell)."""
        return self.journal.perform_sync(effect, call)

    def branches(self, context: RunContext) -> Branches:
        """The journal's."""
        return self.journal.branches(context)

    def deadline_entered(self, deadline: Guard) -> None:
        """The journal's."""
        self.journal.deadline_entered(deadline)

    def deadline_expired(self, deadline: Guard) -> None:
        """The journal's."""
        self.journal.deadline_expired(deadline)


def _tell_whole(streaming: Streaming, sink: EventSink, effect: Effect, result: object) -> None:
    """Tell ``sink`` a replayed answer (``result``, the step's outcome) as one piece."""
    from pydantic import TypeAdapter

    from ..llm.streaming import Listener
    from ..outcome import Ok

    if not isinstance(result, Ok):
        return  # a recorded error: no answer to tell
    value = result.value
    listener = Listener(streaming, sink.emit, effect, None)
    if isinstance(value, str):
        listener.text(value)
        return
    name = type(value).__name__
    if name not in streaming.partials:
        return  # an answer that does not stream (a Literal, a list): its value comes whole anyway
    text = TypeAdapter(type(value)).dump_json(value).decode()
    if streaming.shape.kind == "object":
        listener.text(text)
    else:  # a union's member class: the arguments of the function call naming it
        listener.call(name, text)
