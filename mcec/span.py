"""Source files and spans: where a piece of `.mce` text sits.

Every syntax node, typed node and diagnostic has a :class:`Span`. A span
stores only its :class:`SourceFile` and two 0-based character offsets
(``start``/``end``, ``end`` exclusive); lines and columns are 1-based (columns
count code points, as editors do) and are computed from the offsets when asked,
since only diagnostics, sites and source maps need them.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True)
class Span:
    """A half-open range ``[start, end)`` of a source file's text.

    Only the file and the two offsets are stored; ``path``, ``line``,
    ``column``, ``end_line`` and ``end_column`` are derived through
    :meth:`SourceFile.position` each time they are read. Equality and hash are
    those of ``(source, start, end)``.
    """

    source: SourceFile
    start: int
    end: int

    @classmethod
    def file_start(cls, path: str) -> Span:
        """A zero-width span at line 1, column 1 of ``path``, for a problem with a whole file.

        Used where there is no text to point into (a file that could not be read
        or written, a tool failing for the file as a whole): its source is an
        empty :class:`SourceFile`, so no excerpt is shown.
        """
        return cls(SourceFile(path, ""), 0, 0)

    @property
    def path(self) -> str:
        """The path of the file the span is in."""
        return self.source.path

    @property
    def line(self) -> int:
        """1-based line of ``start``."""
        return self.source.position(self.start)[0]

    @property
    def column(self) -> int:
        """1-based column (in code points) of ``start``."""
        return self.source.position(self.start)[1]

    @property
    def end_line(self) -> int:
        """1-based line of ``end``."""
        return self.source.position(self.end)[0]

    @property
    def end_column(self) -> int:
        """1-based column (in code points) of ``end`` (one past the last character)."""
        return self.source.position(self.end)[1]

    def __str__(self) -> str:
        line, column = self.source.position(self.start)
        return f"{self.source.path}:{line}:{column}"

    def __repr__(self) -> str:
        # The source is shown by path only: its text may be megabytes.
        line, column = self.source.position(self.start)
        end_line, end_column = self.source.position(self.end)
        return f"Span({self.source.path!r}, {line}:{column}-{end_line}:{end_column})"

    def cover(self, other: Span) -> Span:
        """The smallest span containing both ``self`` and ``other`` (same file)."""
        first = self if self.start <= other.start else other
        last = self if self.end >= other.end else other
        return Span(self.source, first.start, last.end)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A spec's text plus a line index, for turning offsets into spans and line/column."""

    path: str
    text: str
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A line starts at 0 and after every "\n": line i starts after the i
        # earlier lines and their newlines.
        lines = self.text.split("\n")
        lengths_before = itertools.accumulate(map(len, lines[:-1]), initial=0)
        starts = tuple(map(operator.add, lengths_before, range(len(lines))))
        object.__setattr__(self, "_line_starts", starts)

    @property
    def line_count(self) -> int:
        """Number of lines: one more than the number of newlines (so text ending in a newline counts an empty last line)."""
        return len(self._line_starts)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a 0-based offset (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        """The span of ``text[start:end]``."""
        return Span(self, start, end)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its newline."""
        if line < 1 or line > len(self._line_starts):
            return ""
        begin = self._line_starts[line - 1]
        stop = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return self.text[begin:stop].rstrip("\r")

