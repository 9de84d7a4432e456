"""``mcec run --stream``: the answer printed as it arrives (docs/language.md §14).

:class:`StreamPrinter` is the event sink ``mcec run --stream`` attaches for the run:
a streaming llm step's text (:class:`~agentmonad.events.TextDelta`) is written as it
arrives, as text; each typed partial of a structured answer
(:class:`~agentmonad.events.PartialOutput`) is written as one line of JSON, the
partial's fields (``null`` for those not arrived yet). Text of another step than
the one written last starts on a new line, and the run's output ends with a line
break, so the Outcome JSON the command prints next starts on a line of its own.
"""

from __future__ import annotations

import json
from typing import TextIO

from agentmonad.events import Effect, Event, PartialOutput, TextDelta
from mcec.run.runner import shown

__all__ = ["StreamPrinter"]


class StreamPrinter:
    """An event sink writing streamed text and partials to ``out`` (see the module docstring)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        #: the effect whose text was written last, and whether the line is still open
        self._effect: Effect | None = None
        self._open = False

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
                self.out.write(json.dumps(shown(event.value), ensure_ascii=False) + "\n")
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
