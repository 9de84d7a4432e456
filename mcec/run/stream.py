"""``mcec run --stream``: the answer printed as it arrives (docs/language.md §14).

:class:`StreamPrinter` is the event sink ``mcec run --stream`` attaches for the run:
a streaming llm step's text (:class:`~agentmonad.events.TextDelta`) is written as it
arrives, as text; each typed partial of a structured answer
(:class:`~agentmonad.events.PartialOutput`) is written as lines of JSON, one a change
since the call's previous partial (:mod:`mcec.run.changes`: its first partial whole, then
what was added — a partial holds the whole answer so far, and printing each whole made the
output quadratic in the answer, issue 47). Text of another step than
the one written last starts on a new line, and the run's output ends with a line
break, so the Outcome JSON the command prints next starts on a line of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TextIO

from agentmonad.events import Effect, Event, PartialOutput, TextDelta
from mcec.run.changes import Change, changes
from agentmonad.report import shown

__all__ = ["StreamPrinter"]

#: No partial printed yet for a call.
_NOTHING = object()


class StreamPrinter:
    """An event sink writing streamed text and partials to ``out`` (see the module docstring)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        #: the effect whose text was written last, and whether the line is still open
        self._effect: Effect | None = None
        self._open = False
        #: the partial of each streamed call printed last, as JSON values
        self._partials: dict[Effect | None, object] = {}

    def emit(self, event: Event) -> None:
        """Write a streamed piece; every other event is not this printer's."""
        match event:
            case TextDelta():
                if self._open and event.effect != self._effect:
                    self.out.write("\n")
                self.out.write(event.text)
                self._effect, self._open = event.effect, not event.text.endswith("\n")
            case PartialOutput():
                self.end_line()
                new = shown(event.value)
                old = self._partials.get(event.effect, _NOTHING)
                found: Iterable[Change] = changes(old, new) if old is not _NOTHING else [{"path": [], "set": new}]
                self.out.write("".join(json.dumps(change, ensure_ascii=False, separators=(",", ":")) + "\n" for change in found))
                self._partials[event.effect] = new
                self._effect = event.effect
            case _:
                return
        self.out.flush()

    def end_line(self) -> None:
        """End the line of text written last, if it is open."""
        if self._open:
            self.out.write("\n")
            self._open = False

    def close(self) -> None:
        """The run is over: end the open line (what is printed next starts on a line of its own)."""
        self.end_line()
        self.out.flush()
