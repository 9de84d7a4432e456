"""``mcec fmt``: the canonical layout of `.mce` files (what black is to Python).

The core is pure: :func:`format_source` takes a :class:`~mcec.span.SourceFile`
and returns the formatted text (or the syntax errors that stop it); only
:func:`run_fmt` touches files. Like black, every result is self-checked before
it is returned: the output must parse to the same tree (spans aside, compared
by :func:`tree_key`), keep every comment in order, and format to itself. A
failed self-check raises :class:`FormatError`, and the command then refuses to
write the file (exit 3) instead of changing what the spec means.

The canonical style
-------------------

* One declaration per line, in source order (nothing is sorted or moved), with
  single spaces between tokens: ``step n : A -> B ! E = m.f``,
  ``from m import A, B as C``, ``list[str]``, ``A | B``, ``each(limit=3) e``.
* Runs of ``step``/``async step``/``fn``/``tool`` declarations not separated by
  a blank line are a table: their ``:`` columns line up, and so do their ``=``
  columns (a signature too long to reach the ``=`` column within
  :data:`ALIGN_LIMIT` characters keeps a single space and does not widen the
  others, and no padding takes a line past :data:`LINE_LENGTH`). Consecutive
  ``server`` declarations align their ``=``.
* Blank lines the author wrote between declarations, statements and comments
  are kept, at most one; none at the start of the file or of a block. The file
  ends with exactly one newline (an empty spec stays empty); line endings are
  ``\\n`` and a byte-order mark is dropped.
* Block pipelines indent statements by 4 spaces, one statement per line, ``}``
  on its own line; an empty block is ``{}``. The optional word ``step`` before
  a statement is kept or left out as written (it is part of the tree).
* An expression stays on one line when it fits in :data:`LINE_LENGTH` columns
  and no comment sits inside it. Otherwise ``pipeline … =`` ends its line and
  the expression goes on the next, indented; a ``par`` group too long for its
  line puts one branch per line (comma after each but the last, ``>`` back at
  the group's indentation); ``>>=``, ``catch`` and ``orelse`` continuation lines
  start with their operator, 4 spaces in; parentheses are those the grammar
  needs, plus those the author wrote around a chain or a ``catch`` that a
  looser operator applies to (``(a >>= b) catch E => h``), where leaving them
  out would surprise a reader; other redundant ones are dropped. Long
  parenthesised parts break as ``(`` … ``)``.
* v2 control flow: ``match { A => a, "s" => b, 3 => c, _ => d }``,
  ``if p then a else b``, ``loop(8) e``, ``retry(3, on=E1 | E2, backoff=0.5) e``
  (``on`` before ``backoff``, each only when written), ``timeout(10) e``; seconds
  in their shortest form (``30``, ``0.5``), literals (in ``Literal["a", 3]`` and
  patterns) with JSON escapes. Every keyword form is a term, and so are the bodies
  of ``loop``/``retry``/``timeout`` and the parts of an ``if`` (a chain there is
  parenthesised); an arm's body is a whole expression and never is. A ``match``
  too long for its line puts one arm per line, one level in, each ending with
  ``,``, their ``=>`` aligned (unless that would pass :data:`ALIGN_LIMIT`), and
  ``}`` back at the indentation of the line that opened it; a chain that ends in
  such a ``match`` keeps its other parts on that opening line when they fit
  (``loop(8) (decide >>= match {`` … ``})``). An ``if`` too long for its line
  breaks before ``then`` and ``else``, one level in.
* Comments are never dropped or reordered. A comment alone on its line stays on
  its own line, indented like the code that follows it (one level in before a
  closing ``}`` or ``>``); a comment after code stays at the end of that line,
  two spaces after it. A comment inside a construct that is printed on one
  line (say, between ``step`` and its name) moves to its own line just above.
  Comment text is kept as written, minus trailing whitespace.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias, assert_never

from mcec import syntax as s
from mcec.diagnostics import Diagnostic
from mcec.syntax import parse
from mcec.syntax.parser import MAX_DIGITS
from mcec.span import SourceFile, Span

__all__ = [
    "ALIGN_LIMIT",
    "COMMANDS",
    "FormatError",
    "FormatResult",
    "LINE_LENGTH",
    "add_fmt",
    "format_source",
    "format_text",
    "run_fmt",
    "tree_key",
]

#: Expressions are broken over several lines when they would pass this column.
LINE_LENGTH = 100
#: A declaration table aligns ``=`` only up to this column.
ALIGN_LIMIT = 80
INDENT = 4

_BLANK_LINE = re.compile(r"\n[ \t\f\r\v]*\n")


class FormatError(Exception):
    """The formatter's self-check failed: its output would not mean the same
    spec. This is a bug in mcec; the file is left untouched."""


@dataclass(frozen=True, slots=True)
class FormatResult:
    """The outcome of formatting one spec.

    ``text`` is the formatted spec, or ``None`` when the spec does not parse;
    ``diagnostics`` are the syntax errors that stopped it.
    """

    source: SourceFile
    text: str | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def changed(self) -> bool:
        """True when the formatted text differs from the file as read."""
        return self.text is not None and self.text != self.source.text


# ---------------------------------------------------------------- comparing trees


def tree_key(node: object) -> object:
    """A comparable value for a syntax tree that ignores every span and the path.

    Two specs mean the same when their ``tree_key``\\s are equal; comments are
    compared separately (by text, in order), since their positions change.

    >>> from mcec.span import SourceFile
    >>> a = parse(SourceFile("a.mce", "fn f : int -> int = m.f")).module
    >>> b = parse(SourceFile("b.mce", "fn f:int->int\\n  = m.f  # hi")).module
    >>> tree_key(a) == tree_key(b)
    True
    """
    if isinstance(node, s.Module):
        return ("Module", tuple(tree_key(d) for d in node.decls))
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        items: list[object] = [type(node).__name__]
        for f in dataclasses.fields(node):
            if f.name in s.POSITION_FIELDS:
                continue
            value = getattr(node, f.name)
            if isinstance(value, Span) or (value is None and f.name.endswith("span")):
                continue
            items.append(tree_key(value))
        return tuple(items)
    if isinstance(node, tuple):
        return tuple(tree_key(item) for item in node)
    return node


def _comment_texts(module: s.Module) -> list[str]:
    return [c.text.rstrip() for c in module.comments]


# ---------------------------------------------------------------- printing pieces


def _qual(name: s.QualName) -> str:
    return name.dotted


def _type(t: s.TypeExpr) -> str:
    match t:
        case s.Name():
            return t.text
        case s.QualName():
            return _qual(t)
        case s.TypeApply():
            return f"{_qual(t.head)}[{', '.join(_type(a) for a in t.args)}]"
        case s.TypeUnion():
            return " | ".join(_type(m) for m in t.members)
        case s.TypeLiteral():
            return _literal(t.value)
        case _:
            assert_never(t)


#: The characters a string literal writes as a short JSON escape.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _literal(value: str | int) -> str:
    """A literal of ``Literal[…]`` or a pattern: an int as digits, a string double-quoted with JSON escapes.

    Printable characters are written as themselves (``"é"``); quotes, backslashes and the
    characters that are not printable (line breaks, controls, U+2028) are escaped.

    >>> print(_literal('say "hi"\\n'), _literal("é"), _literal(3))
    "say \\"hi\\"\\n" "é" 3
    """
    if isinstance(value, int):
        return str(value)
    escaped = (
        _SHORT_ESCAPES.get(ch) or (ch if ch.isprintable() else json.dumps(ch)[1:-1]) for ch in value
    )
    return '"' + "".join(escaped) + '"'


def _pattern(pattern: s.Pattern) -> str:
    match pattern:
        case s.Name():
            return pattern.text
        case s.QualName():
            return _qual(pattern)
        case s.TypeLiteral():
            return _literal(pattern.value)
        case _:
            assert_never(pattern)


def _errors(errors: s.ErrorList | None) -> str:
    return "" if errors is None else " ! " + " | ".join(_type(e) for e in errors.errors)


def _signature(input_type: s.TypeExpr, output_type: s.TypeExpr, errors: s.ErrorList | None) -> str:
    return f"{_type(input_type)} -> {_type(output_type)}{_errors(errors)}"


_Aligned: TypeAlias = s.StepDecl | s.FnDecl | s.ToolDecl


def _within_limit(*layouts: str) -> str:
    """The first of ``layouts`` (most aligned first) that fits in :data:`LINE_LENGTH` columns, else the last:
    alignment never pushes a line that fits past the limit."""
    return next((text for text in layouts if len(text) <= LINE_LENGTH), layouts[-1])


def _table_parts(decl: _Aligned) -> tuple[str, str, str]:
    """(head, signature, implementation) of a table declaration."""
    match decl:
        case s.StepDecl():
            head = f"{'async step' if decl.is_async else 'step'} {decl.name.text}"
            return head, _signature(decl.input, decl.output, decl.errors), _qual(decl.impl)
        case s.FnDecl():
            return f"fn {decl.name.text}", _signature(decl.input, decl.output, None), _qual(decl.impl)
        case s.ToolDecl():
            head = f"tool {decl.name.text}"
            return head, _signature(decl.input, decl.output, decl.errors), f"{decl.server.text}.{decl.tool_name.text}"
        case _:
            assert_never(decl)


# ---------------------------------------------------------------- output lines


@dataclass(slots=True)
class _Line:
    """One output line of code, before comments are placed.

    ``first``/``last`` are the source offsets of the line's first token and the
    end of its last token from the tree: a comment between them was inside the
    line; one after ``last`` on the same source line trails it. ``item`` lines
    start a declaration or statement (blank lines may precede them); ``close``
    lines hold a closing bracket (comments before them are indented one level
    more); ``opens`` lines end with an opening bracket (no blank line follows).
    """

    indent: int
    text: str
    first: int
    last: int
    kind: str = "cont"
    opens: bool = False

    @property
    def comment_indent(self) -> int:
        """Where a comment placed just before this line is indented."""
        return self.indent + INDENT if self.kind == "close" else self.indent


# ---------------------------------------------------------------- the formatter


class _Formatter:
    """Lays out one parsed module; comments are placed afterwards by :meth:`render`."""

    def __init__(self, module: s.Module, text: str) -> None:
        self.module = module
        self.text = text
        self.comments = sorted(module.comments, key=lambda c: c.start)
        self.comment_starts = [c.start for c in self.comments]
        self.comment_ends_by_start = {c.start: c.start + len(c.text) for c in self.comments}
        self.comment_starts_by_end = {c.start + len(c.text): c.start for c in self.comments}
        self._flat: dict[int, str] = {}
        self._breaks: dict[int, bool] = {}

    # -- helpers

    def has_comment(self, lo: int, hi: int) -> bool:
        """True when a comment starts in the source range ``[lo, hi)``."""
        index = bisect.bisect_left(self.comment_starts, lo)
        return index < len(self.comment_starts) and self.comment_starts[index] < hi

    def bracket_after(self, offset: int, bracket: str) -> int:
        """The offset of ``bracket`` as the next token at or after ``offset`` (or ``offset``).

        Parentheses leave no node in the tree, but the grammar needs them
        wherever the formatter prints them, so the source has them too; their
        real offsets keep comments next to them where they were.
        """
        index = offset
        while index < len(self.text):
            if self.text[index].isspace():
                index += 1
            elif index in self.comment_ends_by_start:
                index = self.comment_ends_by_start[index]
            else:
                break
        return index if self.text.startswith(bracket, index) else offset

    def bracket_before(self, offset: int, bracket: str) -> int:
        """The offset of ``bracket`` as the token just before ``offset`` (or ``offset``)."""
        index = offset
        while index > 0:
            if index in self.comment_starts_by_end:
                index = self.comment_starts_by_end[index]
            elif self.text[index - 1].isspace():
                index -= 1
            else:
                break
        return index - 1 if index > 0 and self.text[index - 1] == bracket else offset

    def gap_has_blank(self, lo: int, hi: int) -> bool:
        """True when the source between ``lo`` and ``hi`` contains an empty line."""
        return hi > lo and _BLANK_LINE.search(self.text, lo, hi) is not None

    # -- expressions on one line

    def flat(self, e: s.Expr) -> str:
        """``e`` on one line, with only the parentheses the grammar needs."""
        key = id(e)
        cached = self._flat.get(key)
        if cached is not None:
            return cached
        match e:
            case s.Ref():
                text = e.name
            case s.Bind():
                text = " >>= ".join(self.flat_term(p) for p in e.parts)
            case s.Par():
                text = "par <" + ", ".join(self.flat(b) for b in e.branches) + ">"
            case s.Each() | s.Local() | s.SubAgent() | s.Loop() | s.Retry() | s.Timeout() | s.Budget() | s.Spawn():
                text = self.prefix(e) + self.flat_term(e.body)
            case s.Catch():
                text = f"{self.flat_catch_body(e.body)} {self.catch_clause(e)}{self.flat_term(e.handler)}"
            case s.OrElse():
                text = f"{self.flat_or_body(e.body)} orelse {self.flat_or_operand(e.fallback)}"
            case s.Match():
                text = "match { " + ", ".join(f"{_pattern(a.pattern)} => {self.flat(a.body)}" for a in e.arms) + " }"
            case s.IfElse():
                condition, then, otherwise = (self.flat_term(p) for p in (e.condition, e.then, e.otherwise))
                text = f"if {condition} then {then} else {otherwise}"
            case _:
                assert_never(e)
        self._flat[key] = text
        return text

    def flat_term(self, e: s.Expr) -> str:
        return f"({self.flat(e)})" if _needs_term_parens(e) else self.flat(e)

    def flat_catch_body(self, e: s.Expr) -> str:
        return f"({self.flat(e)})" if self.catch_body_parens(e) else self.flat(e)

    def flat_or_body(self, e: s.Expr) -> str:
        return f"({self.flat(e)})" if self.kept_parens(e) else self.flat(e)

    def flat_or_operand(self, e: s.Expr) -> str:
        return f"({self.flat(e)})" if self.or_operand_parens(e) else self.flat(e)

    # -- parentheses the grammar does not need but a reader does

    def written_in_parens(self, e: s.Expr) -> bool:
        """True when the source has ``( e )`` (parentheses leave no node in the tree)."""
        return self.bracket_before(e.start, "(") != e.start and self.text.startswith(")", self.bracket_after(e.end, ")"))

    def kept_parens(self, e: s.Expr) -> bool:
        """Parentheses the user wrote around a chain or a ``catch`` that an operator binding more
        loosely applies to (``(a >>= b) catch E => h``, ``(a catch E => h) orelse f``): kept,
        since without them the precedence would surprise a reader."""
        return isinstance(e, (s.Bind, s.Catch)) and self.written_in_parens(e)

    def catch_body_parens(self, e: s.Expr) -> bool:
        return isinstance(e, s.OrElse) or self.kept_parens(e)

    def or_operand_parens(self, e: s.Expr) -> bool:
        return isinstance(e, s.OrElse) or self.kept_parens(e)

    def prefix(self, e: _Prefixed) -> str:
        """What is written before the body of a combinator that takes one term: ``each(limit=3) ``,
        ``local ``, ``local(state=f) ``, ``loop(8) ``, ``retry(3, on=E1 | E2, backoff=0.5) ``, ``timeout(10) ``."""
        match e:
            case s.Each():
                return "each " if e.limit is None else f"each(limit={e.limit}) "
            case s.Local():
                return "local "
            case s.SubAgent():
                return f"local(state={e.adapter.text}) "
            case s.Loop():
                return f"loop({e.bound}) "
            case s.Retry():
                on = "" if e.on is None else ", on=" + " | ".join(_type(t) for t in e.on)
                backoff = ""
                if e.backoff is not None and e.backoff_span is not None:
                    backoff = f", backoff={self.seconds(e.backoff, e.backoff_span)}"
                return f"retry({e.attempts}{on}{backoff}) "
            case s.Timeout():
                return f"timeout({self.seconds(e.seconds, e.seconds_span)}) "
            case s.Budget():
                return f"budget({e.tokens}) "
            case s.Spawn():
                return f"spawn({e.toolbox.text}) "
            case _:
                assert_never(e)

    def seconds(self, value: float, written: Span) -> str:
        """A number of seconds in its shortest form (``30``, ``0.5``, never ``30.0``), or as written
        when that form would have more digits than a number may (``999999999999999999`` is ``1e18``)."""
        text = str(int(value)) if value.is_integer() else format(Decimal(repr(value)), "f")
        if any(len(digits) > MAX_DIGITS for digits in text.split(".")):
            return self.text[written.start : written.end]
        return text

    @staticmethod
    def catch_clause(e: s.Catch) -> str:
        return "catch " + " | ".join(_type(t) for t in e.errors) + " => "

    # -- must an expression break?

    def must_break(self, e: s.Expr) -> bool:
        """True when a comment sits at one of ``e``'s line-break points (or a child's).

        Such a comment can only stay where it is if the expression is broken
        there; comments elsewhere inside one-line constructs move above the line.
        """
        key = id(e)
        cached = self._breaks.get(key)
        if cached is not None:
            return cached
        match e:
            case s.Ref():
                result = False
            case s.Bind():
                result = any(self.must_break(p) for p in e.parts) or any(
                    self.has_comment(a.end, b.start) for a, b in zip(e.parts, e.parts[1:])
                )
            case s.Par():
                bounds = [e.keyword.end, *(x for b in e.branches for x in (b.start, b.end)), e.end]
                result = any(self.must_break(b) for b in e.branches) or any(
                    self.has_comment(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)
                )
            case s.Each() | s.Local() | s.SubAgent() | s.Loop() | s.Retry() | s.Timeout() | s.Budget() | s.Spawn():
                result = self.must_break(e.body)
            case s.Match():
                bounds = [e.keyword.end, *(x for a in e.arms for x in (a.start, a.end)), e.end]
                result = any(self.must_break(a.body) for a in e.arms) or any(
                    self.has_comment(bounds[i], bounds[i + 1]) for i in range(0, len(bounds), 2)
                )
            case s.IfElse():
                result = (
                    any(self.must_break(part) for part in (e.condition, e.then, e.otherwise))
                    or self.has_comment(e.condition.end, e.then.start)
                    or self.has_comment(e.then.end, e.otherwise.start)
                )
            case s.Catch():
                result = (
                    self.must_break(e.body)
                    or self.must_break(e.handler)
                    or self.has_comment(e.body.end, e.keyword.start)
                )
            case s.OrElse():
                result = (
                    self.must_break(e.body)
                    or self.must_break(e.fallback)
                    or self.has_comment(e.body.end, e.keyword.start)
                )
            case _:
                assert_never(e)
        self._breaks[key] = result
        return result

    # -- expressions over lines

    def layout(self, e: s.Expr, indent: int, column: int, tail: int) -> list[_Line]:
        """``e`` as lines; the first continues the current line at ``column``.

        ``indent`` is the indentation of the line ``e`` starts on; ``tail`` is
        how many characters will follow ``e`` on its last line.
        """
        if not self.must_break(e):
            text = self.flat(e)
            if column + len(text) + tail <= LINE_LENGTH:
                return [_Line(indent, text, e.start, e.end)]
        return self.broken(e, indent, column, tail)

    def layout_term(self, e: s.Expr, indent: int, column: int, tail: int) -> list[_Line]:
        return self.layout_group(e, indent, column, tail) if _needs_term_parens(e) else self.layout(e, indent, column, tail)

    def layout_group(self, e: s.Expr, indent: int, column: int, tail: int) -> list[_Line]:
        """``( e )``: on one line when it fits, else ``(`` / ``e`` indented / ``)``."""
        if not self.must_break(e):
            text = f"({self.flat(e)})"
            if column + len(text) + tail <= LINE_LENGTH:
                return [_Line(indent, text, e.start, e.end)]
        opening = self.bracket_before(e.start, "(")
        closing = self.bracket_after(e.end, ")")
        hugged = self.hugged_chain(e, indent, column + 1, tail + 1) if isinstance(e, s.Bind) else None
        if hugged is not None:
            hugged[0].text = "(" + hugged[0].text
            hugged[0].first = opening
            hugged[-1].text += ")"
            hugged[-1].last = closing + 1
            return hugged
        inner = self.layout(e, indent + INDENT, indent + INDENT, 0)
        inner[0].indent = indent + INDENT
        return [
            _Line(indent, "(", opening, opening + 1, opens=True),
            *inner,
            _Line(indent, ")", closing, closing + 1, kind="close"),
        ]

    def broken(self, e: s.Expr, indent: int, column: int, tail: int) -> list[_Line]:
        """``e`` over several lines (the style's rules per construct)."""
        deeper = indent + INDENT
        match e:
            case s.Ref():
                return [_Line(indent, e.name, e.start, e.end)]
            case s.Bind():
                hugged = self.hugged_chain(e, indent, column, tail)
                if hugged is not None:
                    return hugged
                lines = self.layout_term(e.parts[0], indent, column, 0)
                for index, part in enumerate(e.parts[1:], start=1):
                    last = index == len(e.parts) - 1
                    lines.extend(self.prefixed(">>= ", part, deeper, tail if last else 0, term=True))
                return lines
            case s.Par():
                lines = [_Line(indent, "par <", e.start, e.keyword.end, opens=True)]
                for index, branch in enumerate(e.branches):
                    last = index == len(e.branches) - 1
                    branch_lines = self.layout(branch, deeper, deeper, 0 if last else 1)
                    branch_lines[0].indent = deeper
                    if not last:
                        branch_lines[-1].text += ","
                    lines.extend(branch_lines)
                lines.append(_Line(indent, ">", e.end - 1, e.end, kind="close"))
                return lines
            case s.Each() | s.Local() | s.SubAgent() | s.Loop() | s.Retry() | s.Timeout() | s.Budget() | s.Spawn():
                prefix = self.prefix(e)
                lines = self.layout_term(e.body, indent, column + len(prefix), tail)
                lines[0].text = prefix + lines[0].text
                lines[0].first = e.start
                return lines
            case s.Catch():
                body = (
                    self.layout_group(e.body, indent, column, 0)
                    if self.catch_body_parens(e.body)
                    else self.layout(e.body, indent, column, 0)
                )
                clause = self.prefixed(self.catch_clause(e), e.handler, deeper, tail, term=True)
                clause[0].first = e.keyword.start
                return body + clause
            case s.OrElse():
                body = (
                    self.layout_group(e.body, indent, column, 0)
                    if self.kept_parens(e.body)
                    else self.layout(e.body, indent, column, 0)
                )
                if self.or_operand_parens(e.fallback):
                    fallback = self.layout_group(e.fallback, deeper, deeper + len("orelse "), tail)
                else:
                    fallback = self.layout(e.fallback, deeper, deeper + len("orelse "), tail)
                fallback[0].text = "orelse " + fallback[0].text
                fallback[0].indent = deeper
                fallback[0].first = e.keyword.start
                return body + fallback
            case s.Match():
                brace = self.bracket_after(e.keyword.end, "{")
                lines = [_Line(indent, "match {", e.start, brace + 1, opens=True)]
                patterns = [_pattern(arm.pattern) for arm in e.arms]
                width = max(len(p) for p in patterns)
                if deeper + width + len(" => ") > ALIGN_LIMIT:
                    width = 0
                for arm, pattern in zip(e.arms, patterns):
                    arm_lines = self.prefixed(f"{pattern.ljust(width)} => ", arm.body, deeper, 1, term=False)
                    arm_lines[0].first = arm.start
                    arm_lines[-1].text += ","
                    lines.extend(arm_lines)
                lines.append(_Line(indent, "}", e.end - 1, e.end, kind="close"))
                return lines
            case s.IfElse():
                lines = self.layout_term(e.condition, indent, column + len("if "), 0)
                lines[0].text = "if " + lines[0].text
                lines[0].first = e.start
                lines.extend(self.prefixed("then ", e.then, deeper, 0, term=True))
                lines.extend(self.prefixed("else ", e.otherwise, deeper, tail, term=True))
                return lines
            case _:
                assert_never(e)

    def hugged_chain(self, e: s.Bind, indent: int, column: int, tail: int) -> list[_Line] | None:
        """``a >>= b >>= match {`` … ``}``: a chain that ends in a ``match`` keeps its other parts on
        the line that opens the match, when they fit there and no comment sits between the parts
        (else None: the chain breaks before each ``>>=``)."""
        *head, last = e.parts
        if not isinstance(last, s.Match):
            return None
        gaps = zip(e.parts, e.parts[1:])
        if any(self.must_break(p) for p in head) or any(self.has_comment(a.end, b.start) for a, b in gaps):
            return None
        text = "".join(self.flat_term(p) + " >>= " for p in head)
        if column + len(text) + len("match {") > LINE_LENGTH:
            return None
        lines = self.broken(last, indent, column + len(text), tail)
        lines[0].text = text + lines[0].text
        lines[0].first = e.start
        return lines

    def prefixed(self, prefix: str, e: s.Expr, indent: int, tail: int, *, term: bool) -> list[_Line]:
        """A continuation line ``prefix e`` at ``indent``."""
        column = indent + len(prefix)
        lines = self.layout_term(e, indent, column, tail) if term else self.layout(e, indent, column, tail)
        lines[0].text = prefix + lines[0].text
        lines[0].indent = indent
        return lines

    # -- declarations

    def declarations(self) -> list[_Line]:
        """Every declaration's lines, with the tables aligned."""
        decls = self.module.decls
        lines: list[_Line] = []
        index = 0
        while index < len(decls):
            decl = decls[index]
            if isinstance(decl, (s.StepDecl, s.FnDecl, s.ToolDecl, s.ServerDecl)):
                group_type = s.ServerDecl if isinstance(decl, s.ServerDecl) else _Aligned
                end = index + 1
                while end < len(decls) and _same_table(decls[end], group_type) and not self.gap_has_blank(
                    decls[end - 1].end, decls[end].start
                ):
                    end += 1
                group = decls[index:end]
                if group_type is s.ServerDecl:
                    lines.extend(self.server_table([d for d in group if isinstance(d, s.ServerDecl)]))
                else:
                    lines.extend(self.table([d for d in group if isinstance(d, (s.StepDecl, s.FnDecl, s.ToolDecl))]))
                index = end
                continue
            lines.extend(self.declaration(decl))
            index += 1
        return lines

    def table(self, group: list[_Aligned]) -> list[_Line]:
        parts = [_table_parts(d) for d in group]
        # A row too long even without the alignment is broken out of the table and takes no part in it.
        rows = [len(f"{head} : {sig} = {impl}") <= LINE_LENGTH for head, sig, impl in parts]
        colon = max((len(head) for (head, _, _), row in zip(parts, rows) if row), default=0)
        fitting = [len(sig) for (_, sig, _), row in zip(parts, rows) if row and colon + 3 + len(sig) <= ALIGN_LIMIT]
        equals = max(fitting, default=0)
        lines = []
        for decl, (head, sig, impl), row in zip(group, parts, rows):
            if not row:
                lines.extend(self.long_table_row(decl, head, sig, impl))
                continue
            text = _within_limit(
                f"{head.ljust(colon)} : {sig.ljust(equals)} = {impl}",
                f"{head.ljust(colon)} : {sig} = {impl}",
                f"{head} : {sig} = {impl}",
            )
            lines.append(_Line(0, text, decl.start, decl.end, kind="item"))
        return lines

    def long_table_row(self, decl: _Aligned, head: str, sig: str, impl: str) -> list[_Line]:
        """A step, fn or tool too long for one line, out of the table's alignment.

        The implementation moves to a line of its own; if the signature still
        does not fit beside the name, the signature and the ``!`` clause get a
        line each too (types themselves are never broken)::

            step name : A -> B ! E         step a_long_name
                = impl.name                    : dict[str, list[A]] -> B
                                               ! E1 | E2
                                               = impl.a_long_name
        """
        errors = None if isinstance(decl, s.FnDecl) else decl.errors
        signature_end = (errors or decl.output).end
        impl_start = decl.server.start if isinstance(decl, s.ToolDecl) else decl.impl.start
        impl_line = _Line(INDENT, f"= {impl}", impl_start, decl.end)
        first = f"{head} : {sig}"
        if len(first) <= LINE_LENGTH:
            return [_Line(0, first, decl.start, signature_end, kind="item"), impl_line]
        return [*_broken_header(decl, head, errors), impl_line]

    def server_table(self, group: list[s.ServerDecl]) -> list[_Line]:
        width = max(len(d.name.text) for d in group)
        lines = []
        for decl in group:
            literal = self.text[decl.command_span.start : decl.command_span.end]
            text = _within_limit(
                f"server {decl.name.text.ljust(width)} = stdio {literal}", f"server {decl.name.text} = stdio {literal}"
            )
            lines.append(_Line(0, text, decl.start, decl.end, kind="item"))
        return lines

    def declaration(self, decl: s.Decl) -> list[_Line]:
        match decl:
            case s.PipelineDecl():
                return self.pipeline(decl)
            case s.FromImport():
                names = ", ".join(n.name.text + (f" as {n.alias.text}" if n.alias else "") for n in decl.names)
                text = f"from {_qual(decl.module)} import {names}"
            case s.ModuleImport():
                text = f"import {_qual(decl.module)}" + (f" as {decl.alias.text}" if decl.alias else "")
            case s.StateDecl():
                text = f"state {_type(decl.type)}" + (f" merge {_qual(decl.merge)}" if decl.merge else "")
            case s.ErrorDecl():
                text = f"error {_type(decl.type)}"
            case s.ModelDecl():
                return self.model(decl)
            case s.LlmDecl():
                # the template as written: a triple-quoted one keeps its lines (docs/language.md §10)
                signature = _signature(decl.input, decl.output, None)
                stream = "stream " if decl.stream else ""
                text = f"{stream}llm {decl.name.text} : {signature} = {decl.model.text} {self.template(decl.template)}"
            case s.AskDecl():
                text = f"ask {decl.name.text} : {_signature(decl.input, decl.output, None)}"
                if decl.template is not None:
                    text += f" = {self.template(decl.template)}"
                if decl.within_span is not None:
                    text += f" within {self.written(decl.within_span)}"
            case s.ToolboxDecl():
                signature = _signature(decl.input, decl.output, decl.errors)
                text = f"toolbox {decl.name.text} : {signature} = " + ", ".join(e.text for e in decl.entries)
                if len(text) > LINE_LENGTH or any(self.has_comment(decl.start, e.start) for e in decl.entries):
                    return self.toolbox(decl, signature)
            case s.RenameDecl():
                text = f"rename {decl.old.text} -> {decl.new.text}"
            case s.StepDecl() | s.FnDecl() | s.ToolDecl() | s.ServerDecl():
                # tables: the caller lays these out together
                raise FormatError(f"{type(decl).__name__} belongs in a table")
            case _:
                assert_never(decl)
        return [_Line(0, text, decl.start, decl.end, kind="item")]

    def toolbox(self, decl: s.ToolboxDecl, signature: str) -> list[_Line]:
        """A toolbox too long for one line (or with comments inside): its head, then one entry a line."""
        first = decl.entries[0]
        lines = [_Line(0, f"toolbox {decl.name.text} : {signature} =", decl.start, first.start - 1, kind="item")]
        for i, entry in enumerate(decl.entries):
            last = i == len(decl.entries) - 1
            lines.append(_Line(INDENT, entry.text + ("" if last else ","), entry.start, entry.end))
        return lines

    def model(self, decl: s.ModelDecl) -> list[_Line]:
        """``model n = openai "ID"``, options in parentheses as written (``name=value, …``); options
        that do not fit in the line width go one per line, with a trailing comma."""
        head = f"model {decl.name.text} = {decl.provider.text} {self.written(decl.model_id_span)}"
        if not decl.options:
            return [_Line(0, head, decl.start, decl.end, kind="item")]
        options = [f"{o.name.text}={self.written(o.value_span)}" for o in decl.options]
        text = f"{head} ({', '.join(options)})"
        if len(text) <= LINE_LENGTH:
            return [_Line(0, text, decl.start, decl.end, kind="item")]
        lines = [_Line(0, head + " (", decl.start, decl.model_id_span.end, kind="item", opens=True)]
        lines.extend(_Line(INDENT, f"{text},", o.start, o.end) for o, text in zip(decl.options, options))
        lines.append(_Line(0, ")", decl.end - 1, decl.end, kind="close"))
        return lines

    def written(self, span: Span) -> str:
        """The source text of ``span``, as written (string literals keep their escapes)."""
        return self.text[span.start : span.end]

    def template(self, template: s.Template) -> str:
        """An llm's template: ``"…"`` and ``\"\"\"…\"\"\"`` as written, ``file "PATH"`` with one space."""
        if template.is_file:
            literal = self.written(template.span)[len("file") :].lstrip()
            return f"file {literal}"
        return self.written(template.span)

    def pipeline(self, decl: s.PipelineDecl) -> list[_Line]:
        header = f"pipeline {decl.name.text} : {_signature(decl.input, decl.output, decl.errors)}"
        if len(header) + 2 > LINE_LENGTH:  # no room for " {" or " ="
            return self.long_pipeline(decl)
        header_end = (decl.errors or decl.output).end
        body = decl.body
        if isinstance(body, s.Block):
            if not body.statements and not self.has_comment(header_end, body.end):
                return [_Line(0, header + " {}", decl.start, decl.end, kind="item")]
            lines = [_Line(0, header + " {", decl.start, header_end, kind="item", opens=True)]
            lines.extend(self.statements(body))
            return lines
        flat_ok = not self.must_break(body) and not self.has_comment(header_end, body.start)
        if flat_ok:
            text = f"{header} = {self.flat(body)};"
            if len(text) <= LINE_LENGTH:
                return [_Line(0, text, decl.start, body.end, kind="item")]
        lines = [_Line(0, header + " =", decl.start, header_end, kind="item", opens=True)]
        part = self.layout(body, INDENT, INDENT, 1)
        part[0].indent = INDENT
        part[-1].text += ";"
        return lines + part

    def statements(self, body: s.Block) -> list[_Line]:
        """The statements of a block, one level in, and its closing brace."""
        lines: list[_Line] = []
        for statement in body.statements:
            prefix = "step " if statement.has_step_keyword else ""
            part: list[_Line] = self.layout(statement.expr, INDENT, INDENT + len(prefix), 1)
            part[0].text = prefix + part[0].text
            part[0].indent = INDENT
            part[0].first = statement.start
            part[0].kind = "item"
            part[-1].text += ";"
            lines.extend(part)
        lines.append(_Line(0, "}", body.end - 1, body.end, kind="close"))
        return lines

    def long_pipeline(self, decl: s.PipelineDecl) -> list[_Line]:
        """A pipeline whose header does not fit on one line: the signature and ``!`` clause one level in.

        ::

            pipeline name                         pipeline name
                : dict[str, list[A]] -> B             : dict[str, list[A]] -> B
                ! E1 | E2 {                           ! E1 | E2
                step a >>= b;                         = a >>= b;
            }
        """
        lines = _broken_header(decl, f"pipeline {decl.name.text}", decl.errors)
        body = decl.body
        if isinstance(body, s.Block):
            if not body.statements and not self.has_comment(lines[-1].last, body.end):
                lines[-1].text += " {}"
                lines[-1].last = body.end
                return lines
            lines[-1].text += " {"
            lines[-1].opens = True
            return lines + self.statements(body)
        part = self.prefixed("= ", body, INDENT, 1, term=False)
        part[-1].text += ";"
        return lines + part

    # -- comments and blank lines

    def render(self, lines: list[_Line]) -> str:
        """Place the comments among ``lines`` and join everything into the file's text."""
        out: list[str] = []
        comments = self.comments
        next_comment = 0
        prev_end: int | None = None  # source end of the last thing emitted
        prev_line: _Line | None = None  # the last code line emitted (and whether it got a trailing comment)
        prev_index = -1
        prev_trailing = False
        after_opener = False

        def blank_before(start: int, allowed: bool) -> None:
            if (
                allowed
                and not after_opener
                and prev_end is not None
                and out
                and self.gap_has_blank(prev_end, start)
            ):
                out.append("")

        def own_line(comment: s.Comment, indent: int, start: int, allowed: bool) -> None:
            nonlocal prev_end, after_opener
            blank_before(start, allowed)
            out.append(" " * indent + comment.text.rstrip())
            prev_end = max(prev_end or 0, comment.end)
            after_opener = False

        def trails(comment: s.Comment) -> bool:
            return (
                prev_line is not None
                and not prev_trailing
                and comment.start >= prev_line.last
                and "\n" not in self.text[prev_line.last : comment.start]
            )

        def attach_trailing(comment: s.Comment) -> None:
            nonlocal prev_end, prev_trailing
            out[prev_index] += "  " + comment.text.rstrip()
            prev_end = max(prev_end or 0, comment.end)
            prev_trailing = True

        for line in lines:
            allowed = line.kind in ("item", "close")
            # comments before the line: trailing the previous line, or on their own
            while next_comment < len(comments) and comments[next_comment].start < line.first:
                comment = comments[next_comment]
                if trails(comment):
                    attach_trailing(comment)
                else:
                    own_line(comment, line.comment_indent, comment.start, allowed)
                next_comment += 1
            # comments inside the line: hoisted above it
            while next_comment < len(comments) and comments[next_comment].start < line.last:
                own_line(comments[next_comment], line.comment_indent, line.first, line.kind == "item")
                next_comment += 1
            blank_before(line.first, line.kind == "item")
            out.append(" " * line.indent + line.text)
            prev_index = len(out) - 1
            prev_line = line
            prev_trailing = False
            prev_end = max(prev_end or 0, line.last)
            after_opener = line.opens
        while next_comment < len(comments):
            comment = comments[next_comment]
            if trails(comment):
                attach_trailing(comment)
            else:
                own_line(comment, 0, comment.start, True)
            next_comment += 1
        return "\n".join(out) + "\n" if out else ""


#: The combinators written as a keyword (with its arguments) before the one term that is their body.
_Prefixed: TypeAlias = s.Each | s.Local | s.SubAgent | s.Loop | s.Retry | s.Timeout | s.Budget | s.Spawn


def _needs_term_parens(e: s.Expr) -> bool:
    """True when ``e`` needs parentheses where the grammar wants a term (bind parts, handlers, the
    bodies of ``each``/``local``/``loop``/``retry``/``timeout``, the three parts of an ``if``):
    the operator forms do; every keyword form is a term (a ``match`` arm's body is a whole expression)."""
    match e:
        case s.Bind() | s.Catch() | s.OrElse():
            return True
        case (
            s.Ref() | s.Par() | s.Each() | s.Local() | s.SubAgent() | s.Match() | s.IfElse() | s.Loop() | s.Retry() | s.Timeout()
            | s.Budget() | s.Spawn()
        ):
            return False
        case _:
            assert_never(e)


def _broken_header(
    decl: _Aligned | s.PipelineDecl, head: str, errors: s.ErrorList | None
) -> list[_Line]:
    """A declaration's head (``step name``, ``pipeline name``) alone, then ``: A -> B`` and ``! E…`` one level in."""
    lines = [
        _Line(0, head, decl.start, decl.name.end, kind="item"),
        _Line(INDENT, f": {_signature(decl.input, decl.output, None)}", decl.input.start, decl.output.end),
    ]
    if errors is not None:
        lines.append(_Line(INDENT, _errors(errors).lstrip(), errors.start, errors.end))
    return lines


def _same_table(decl: s.Decl, group_type: object) -> bool:
    if group_type is s.ServerDecl:
        return isinstance(decl, s.ServerDecl)
    return isinstance(decl, (s.StepDecl, s.FnDecl, s.ToolDecl))


# ---------------------------------------------------------------- the pure entry points


def _format_module(module: s.Module, text: str) -> str:
    formatter = _Formatter(module, text)
    return formatter.render(formatter.declarations())


def _self_check(source: SourceFile, module: s.Module, formatted: str) -> None:
    """Black's safety net: the output parses to the same tree, keeps every comment, and is stable."""
    again = parse(SourceFile(source.path, formatted))
    if again.module is None:
        first = next((d for d in again.diagnostics if d.is_error), None)
        reason = f": {first.message} at line {first.span.line}" if first is not None else ""
        raise FormatError(f"the formatted text of {source.path} does not parse{reason}")
    if tree_key(again.module) != tree_key(module):
        raise FormatError(f"formatting {source.path} would change its meaning")
    if _comment_texts(again.module) != _comment_texts(module):
        raise FormatError(f"formatting {source.path} would lose or reorder comments")
    if _format_module(again.module, formatted) != formatted:
        raise FormatError(f"formatting {source.path} is not stable (a second run changes it again)")


def format_source(source: SourceFile) -> FormatResult:
    """Format one spec: its canonical text, or the syntax errors that prevent it.

    Pure (no I/O) and self-checked; raises :class:`FormatError` when the
    self-check fails (a bug). A spec that parses to a tree is formatted even if
    it has other problems (``mcec check`` reports those).

    >>> from mcec.span import SourceFile
    >>> print(format_source(SourceFile("x.mce", "fn f:int->int=m.f  # pure")).text, end="")
    fn f : int -> int = m.f  # pure
    """

    def run() -> FormatResult:
        parsed = parse(source)
        if parsed.module is None:
            return FormatResult(source, None, parsed.diagnostics)
        # Offsets count a byte-order mark as one character, so the text is used as
        # read; the mark itself is never printed (it is not a token).
        formatted = _format_module(parsed.module, source.text)
        _self_check(source, parsed.module, formatted)
        return FormatResult(source, formatted, ())

    return run()


def format_text(text: str, path: str = "<text>") -> str:
    """The canonical form of ``text``; raises ``ValueError`` when it does not parse.

    >>> format_text("pipeline p:int->int{a;step b>>=c;}")
    'pipeline p : int -> int {\\n    a;\\n    step b >>= c;\\n}\\n'
    """
    result = format_source(SourceFile(path, text))
    if result.text is None:
        first = result.diagnostics[0] if result.diagnostics else None
        raise ValueError(first.message if first is not None else f"{path} does not parse")
    return result.text
