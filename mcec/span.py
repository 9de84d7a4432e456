"""Source files and spans: where a piece of `.mce` text sits.

Every syntax node, typed node and diagnostic carries a :class:`Span`. Lines and
columns are 1-based (columns count code points, as editors do); ``start``/``end``
are 0-based character offsets into the file's text, ``end`` exclusive.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open range of source text, with both offsets and line/column."""

    path: str
    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}"

    def cover(self, other: Span) -> Span:
        """The smallest span containing both ``self`` and ``other`` (same file)."""
        first = self if self.start <= other.start else other
        last = self if self.end >= other.end else other
        return Span(
            self.path, first.start, last.end, first.line, first.column, last.end_line, last.end_column
        )


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A spec's text plus a line index, for turning offsets into spans and back."""

    path: str
    text: str
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        starts.extend(i + 1 for i, ch in enumerate(self.text) if ch == "\n")
        object.__setattr__(self, "_line_starts", tuple(starts))

    @property
    def line_count(self) -> int:
        """Number of lines (a trailing newline does not start a new line of text)."""
        return len(self._line_starts)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a 0-based offset."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of ``text[start:end]``."""
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(self.path, start, end, line, column, end_line, end_column)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        if line < 1 or line > len(self._line_starts):
            return ""
        begin = self._line_starts[line - 1]
        stop = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return self.text[begin:stop].rstrip("\r")
