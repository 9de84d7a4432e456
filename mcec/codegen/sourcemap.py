"""Source maps: which `.mce` span produced which lines of the generated module.

The emitter records, for each statement it builds, the span of the spec
construct behind it. Black then reflows the text, so line numbers are only
known afterwards. Black never changes the statement structure, so walking the
statements of the libcst tree and of ``ast.parse(formatted)`` in the same
pre-order pairs them up one to one; each recorded statement gets the line range
it ended up on.
"""

from __future__ import annotations

import ast
import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from mcec.span import Span


@dataclass(frozen=True, slots=True)
class MappedRange:
    """Generated lines ``first..last`` (1-based, inclusive) came from ``span``."""

    first: int
    last: int
    span: Span
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class SourceMap:
    """Line ranges of the generated module, each with the spec span it stems from."""

    ranges: tuple[MappedRange, ...]
    #: Tables for the lookups, made on the first one: the innermost range of each covered line,
    #: and (first line, position) of every range, sorted. A scan of all ranges per lookup made
    #: mapping F mypy findings onto a module of R statements cost F × R (issue 36).
    _innermost: dict[int, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    _starts: list[tuple[int, int]] = field(default_factory=list, init=False, repr=False, compare=False)

    def lookup(self, line: int) -> Span | None:
        """The span of the innermost recorded statement covering ``line``, if any."""
        entry = self.entry(line)
        return entry.span if entry is not None else None

    def nearest(self, line: int) -> MappedRange | None:
        """The recorded statement closest before ``line`` (or the first one): where a finding on a
        line no statement covers (a blank or continuation line) is reported, never 1:1."""
        if not self.ranges:
            return None
        self._tables()
        after = bisect.bisect_right(self._starts, (line, len(self.ranges)))
        if after == 0:
            return self.ranges[0]
        closest = self._starts[after - 1][0]
        # of the ranges starting on that line, the first recorded (a function before its header)
        return self.ranges[self._starts[bisect.bisect_left(self._starts, (closest, -1))][1]]

    def entry(self, line: int) -> MappedRange | None:
        """The innermost recorded statement covering ``line``, if any (of equally short ones, the
        first recorded)."""
        if not self.ranges:
            return None
        self._tables()
        position = self._innermost.get(line)
        return None if position is None else self.ranges[position]

    def _tables(self) -> None:
        if self._starts:
            return
        # Longest first, so each line ends up with the shortest range covering it; among equally
        # long ones the first recorded is painted last, so it wins.
        order = sorted(range(len(self.ranges)), key=lambda i: (self.ranges[i].first - self.ranges[i].last, -i))
        for position in order:
            entry = self.ranges[position]
            for line in range(entry.first, entry.last + 1):
                self._innermost[line] = position
        self._starts.extend(sorted((entry.first, position) for position, entry in enumerate(self.ranges)))


def _cst_statements(body: Sequence[cst.BaseStatement]) -> Iterator[cst.CSTNode]:
    for statement in body:
        yield statement
        if isinstance(statement, cst.FunctionDef | cst.If | cst.With):
            assert isinstance(statement.body, cst.IndentedBlock)
            yield from _cst_statements(statement.body.body)
        elif isinstance(statement, cst.Try):
            assert isinstance(statement.body, cst.IndentedBlock)
            yield from _cst_statements(statement.body.body)
            for handler in statement.handlers:
                assert isinstance(handler.body, cst.IndentedBlock)
                yield from _cst_statements(handler.body.body)


def _ast_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for statement in body:
        yield statement
        if isinstance(statement, ast.AsyncFunctionDef | ast.FunctionDef | ast.If | ast.AsyncWith | ast.With):
            yield from _ast_statements(statement.body)
        elif isinstance(statement, ast.Try):
            yield from _ast_statements(statement.body)
            for handler in statement.handlers:
                yield from _ast_statements(handler.body)


def build_source_map(
    module: cst.Module, spans: dict[int, Span], formatted: str, hints: dict[int, str] | None = None
) -> SourceMap:
    """Pair the recorded statements of ``module`` with their lines in ``formatted``."""
    ranges: list[MappedRange] = []
    map_statements(module.body, ast.parse(formatted).body, 0, spans, hints or {}, ranges)
    return SourceMap(tuple(ranges))


def map_statements(
    body: Sequence[cst.BaseStatement],
    placed_body: list[ast.stmt],
    offset: int,
    spans: dict[int, Span],
    hints: dict[int, str],
    ranges: list[MappedRange],
) -> None:
    """Append to ``ranges`` the line ranges of the recorded statements of ``body``, paired with
    ``placed_body`` (the same statements as parsed from their text, whose first line is line
    ``offset + 1`` of the module): a module is mapped a top-level statement at a time."""
    for node, placed in zip(_cst_statements(body), _ast_statements(placed_body), strict=True):
        span = spans.get(id(node))
        hint = hints.get(id(node))
        if span is not None:
            first = placed.lineno + offset
            if isinstance(placed, ast.AsyncFunctionDef | ast.FunctionDef):
                last = placed.body[0].lineno + offset - 1 if placed.body else first
                last = max(first, last)
                # the whole function is also recorded, as the fallback for its body
                ranges.append(MappedRange(first, (placed.end_lineno or placed.lineno) + offset, span))
            else:
                last = (placed.end_lineno or placed.lineno) + offset
            ranges.append(MappedRange(first, last, span, hint))
