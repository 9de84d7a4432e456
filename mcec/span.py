"""Source files and spans: where a piece of `.mce` text sits.

Every syntax node, typed node and diagnostic has a :class:`Span`. A span
stores its *frame* and two character offsets (``start``/``end``, ``end``
exclusive) relative to it; lines and columns are 1-based (columns count code
points, as editors do) and are computed from the offsets when asked, since only
diagnostics, sites and source maps need them.

A frame is either a :class:`SourceFile` (offsets from the start of the text) or
a :class:`Frame`, which the parser makes for each declaration: the nodes of one
declaration hold their offsets relative to it. A frame can be moved (into a new
version of the text, some characters on), and every span held in it moves with
it: after an edit, the language server re-uses an unchanged declaration as the
same object, its spans, the diagnostics and the typed nodes made from it
included, however far it moved (:mod:`mcec.syntax.incremental`). Only that
re-parse moves frames; everywhere else a span's position never changes.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from dataclasses import FrozenInstanceError, dataclass, field
from typing import ClassVar

__all__ = ["Frame", "SourceFile", "Span"]


class Frame:
    """Where one declaration's text is now: in ``source``, ``base`` characters on from where
    it was parsed. The spans made in it add ``base`` to their offsets when read.

    Moved only by :func:`mcec.syntax.incremental.reparse` (and put back by
    :meth:`mcec.syntax.tree.Module.place`), when the declaration is re-used in
    a new version of the text.
    """

    __slots__ = ("base", "source")

    def __init__(self, source: SourceFile, base: int = 0) -> None:
        self.source = source
        self.base = base

    def __repr__(self) -> str:
        return f"Frame({self.source.path!r}, base={self.base})"


class Span:
    """A half-open range ``[start, end)`` of a source file's text.

    Stored: its frame and two offsets relative to the frame; ``source``,
    ``start`` and ``end`` are read through the frame, and ``path``, ``line``,
    ``column``, ``end_line`` and ``end_column`` through
    :meth:`SourceFile.position`, each time. Made with offsets into the frame's
    source as it is now (``Span(frame, start, end)``). Equality and hash are
    those of ``(source, start, end)``, where the span is now: a span is a key
    of a dict only while its frame does not move (no re-parse happens while a
    check runs).
    """

    __slots__ = ("_end", "_frame", "_start")

    _frame: SourceFile | Frame
    _start: int
    _end: int

    def __init__(self, frame: SourceFile | Frame, start: int, end: int) -> None:
        base = frame.base
        object.__setattr__(self, "_frame", frame)
        object.__setattr__(self, "_start", start - base)
        object.__setattr__(self, "_end", end - base)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[object, ...]:
        return (Span, (self.source, self.start, self.end))  # a copy is a plain span of the text as it is

    @classmethod
    def file_start(cls, path: str) -> Span:
        """A zero-width span at line 1, column 1 of ``path``, for a problem with a whole file.

        Used where there is no text to point into (a file that could not be read
        or written, a tool failing for the file as a whole): its source is an
        empty :class:`SourceFile`, so no excerpt is shown.
        """
        return cls(SourceFile(path, ""), 0, 0)

    @property
    def frame(self) -> SourceFile | Frame:
        """What the offsets are relative to: the declaration's :class:`Frame`, or the whole file."""
        return self._frame

    @property
    def source(self) -> SourceFile:
        """The text the span is in (its frame's, now)."""
        return self._frame.source

    @property
    def start(self) -> int:
        """0-based offset of the first character, in ``source``."""
        return self._frame.base + self._start

    @property
    def end(self) -> int:
        """0-based offset just past the last character, in ``source``."""
        return self._frame.base + self._end

    def at(self, start: int, end: int) -> Span:
        """A span of ``source[start:end]`` in the same frame (it moves with this one)."""
        return Span(self._frame, start, end)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Span):
            return NotImplemented
        if self._frame is other._frame:
            return self._start == other._start and self._end == other._end
        return self.start == other.start and self.end == other.end and self.source == other.source

    def __hash__(self) -> int:
        source = self._frame.source
        return hash((source.path, source.text, self.start, self.end))

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
        # in the frame both share (so it moves with them), else in the file
        frame = self._frame if self._frame is other._frame else self.source
        return Span(frame, first.start, last.end)


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A spec's text plus a line index, for turning offsets into spans and line/column."""

    #: A source is the frame of the spans into it that belong to no declaration: its offsets are the file's.
    base: ClassVar[int] = 0

    path: str
    text: str
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    #: True when the text is all ASCII: a column is then also a UTF-16 column (the language server's).
    ascii: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A line starts at 0 and after every "\n": line i starts after the i
        # earlier lines and their newlines.
        lines = self.text.split("\n")
        lengths_before = itertools.accumulate(map(len, lines[:-1]), initial=0)
        starts = tuple(map(operator.add, lengths_before, range(len(lines))))
        object.__setattr__(self, "_line_starts", starts)
        object.__setattr__(self, "ascii", self.text.isascii())

    @property
    def line_count(self) -> int:
        """Number of lines: one more than the number of newlines (so text ending in a newline counts an empty last line)."""
        return len(self._line_starts)

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a 0-based offset (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    @property
    def source(self) -> SourceFile:
        """The file itself (as a frame, a source is its own source)."""
        return self

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

