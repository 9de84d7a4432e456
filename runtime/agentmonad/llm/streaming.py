"""What a streaming LLM step tells the run's event sink while the answer arrives (docs/language.md §14).

A step declared ``stream llm`` streams when an event sink is attached where it
runs (``RunContext.events``: ``mcec run --stream``, ``agentmonad.observe.observe``,
a tracer); with none attached it makes the plain call, exactly as a step without
``stream``. Streaming, it gives the backend a :class:`Listener` (the
:class:`~agentmonad.llm.wire.Deltas` of one request), which turns the pieces
into events of :mod:`agentmonad.events`, attributed to the model call's effect:

- an answer of text (``-> str``, or the ``str`` of a union) — a :class:`TextDelta`
  per piece, as it arrives;
- an answer of a record class (``-> Answer``, or the class a union's function
  call names) — a :class:`PartialOutput` whenever what has arrived reads as a
  new partial (:class:`~agentmonad.llm.partial.PartialReader`): an instance of
  the class's partial type;
- any other answer (``Literal``, ``list[…]``, ``int``) — nothing until the value.

A reply that does not validate is sent back as without streaming (a repair);
the next attempt streams from the start again (its partials begin empty).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..events import Effect, Event, PartialOutput, TextDelta
from ..observe import current_effect, current_span
from .output import Shape
from .partial import PartialReader, partials_for

__all__ = ["Listener", "Streaming"]


class Streaming:
    """What a streaming step knows once, when it is built: the partial type of each class its
    answer may be (by class name: a union's function call names its class)."""

    __slots__ = ("shape", "partials")

    def __init__(self, shape: Shape, given: Mapping[type, type] | None) -> None:
        self.shape = shape
        self.partials = partials_for(shape.record_classes(), given)

    def listener(self, emit: Callable[[Event], None]) -> Listener:
        """The deltas of one request, sent as events to ``emit`` (the sink attached here)."""
        return Listener(self, emit, current_effect(), current_span())


class Listener:
    """The :class:`~agentmonad.llm.wire.Deltas` of one request of a streaming step."""

    __slots__ = ("streaming", "emit", "effect", "span", "_reader", "_call")

    def __init__(self, streaming: Streaming, emit: Callable[[Event], None], effect: Effect | None, span: int | None) -> None:
        self.streaming = streaming
        self.emit = emit
        self.effect = effect
        self.span = span
        kind = streaming.shape.kind
        only = next(iter(streaming.partials.values()), None) if kind == "object" else None
        self._reader: PartialReader | None = PartialReader(only) if only is not None else None
        self._call: str | None = None

    def text(self, chunk: str) -> None:
        """Text: a delta for a text answer, more JSON for an object answer."""
        if not chunk:
            return
        if self._reader is not None:
            self._partial(chunk)
        elif self.streaming.shape.text_streams():
            self.emit(TextDelta(self.effect, chunk, self.span))

    def call(self, name: str, chunk: str) -> None:
        """More arguments of the first function call: partials of the class it names."""
        if self._call != name:  # the first piece of this call (or, oddly, a renamed one)
            self._call = name
            partial = self.streaming.partials.get(name)
            self._reader = PartialReader(partial) if partial is not None else None
        if chunk and self._reader is not None:
            self._partial(chunk)

    def _partial(self, chunk: str) -> None:
        assert self._reader is not None
        value = self._reader.feed(chunk)
        if value is not None:
            self.emit(PartialOutput(self.effect, value, self.span))
