"""Text to syntax tree: :func:`parse`, the only module that knows Lark exists.

Lark builds an LALR parser from ``grammar/mce.lark`` (:mod:`mcec.syntax.grammar`)
with its contextual lexer and an embedded transformer, :class:`_Builder`: at
each reduction Lark calls the method named after the rule, which makes the
:mod:`mcec.syntax.tree` node from the rule's children. No parse tree is built
and nothing recurses, so a 100,000-step chain or 10,000 nested parentheses
parse in one pass. Positions come from the tokens: :meth:`_Builder.span` is the
one place where Lark's positions become :class:`~mcec.span.Span`\\ s.

Syntax errors (MCE001, or MCE016 for a reserved word where a name belongs) are
described in words by :mod:`mcec.syntax.errors`, which receives plain data
(the token found, the terminals the parser accepts there, the kinds on its
stack), never a Lark object. After an error the parser re-synchronises at the
next line that starts with a declaration keyword and parses on, so one run
reports several syntax errors (at most :data:`MAX_SYNTAX_ERRORS`).

Nesting is bounded: an expression or type may nest at most :data:`MAX_DEPTH`
levels (docs/language.md §2). Every later phase walks the tree recursively, within
Python's default recursion limit, and the generated code must stay within
CPython's own parser limits; deeper input is MCE001 here, so everything the
parser accepts also checks, compiles and runs.

Decision: ``ParseResult.module`` is ``None`` when any syntax error (MCE001, a
reserved word used as a name, a number out of range) was found. A Python
keyword used as a name (MCE016) does not stop the tree from being built, so
``module`` is then set and the checker may still run.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, assert_never

import lark
from lark import Token

from mcec.diagnostics import Diagnostic, error
from mcec.span import Frame, SourceFile, Span
from mcec.syntax import tree as s
from mcec.syntax.errors import ErrorSite, StackItem, describe_bad_character, describe_unexpected, reserved_word
from mcec.syntax.grammar import PYTHON_KEYWORDS, grammar_parser, tables

__all__ = ["MAX_DEPTH", "MAX_DIGITS", "MAX_SYNTAX_ERRORS", "ParseResult", "PlanParse", "parse", "parse_plan", "parse_region"]

#: At most this many syntax errors are reported per file; later ones are usually echoes.
MAX_SYNTAX_ERRORS: Final = 20
#: How deep expressions and types may nest (``par <local (a catch E => …)>``, ``list[list[…]]``).
MAX_DEPTH: Final = 100
#: The most digits a number may have (Python converts at most 4,300 digits to an int).
MAX_DIGITS: Final = 18

_GRAMMAR: Final = tables()
_RESERVED: Final = _GRAMMAR.reserved_words
#: A line starting with one of these (in column 1) begins a declaration: where the
#: parser re-synchronises after a syntax error.
_RESYNC: Final = re.compile(
    "^(?:" + "|".join(sorted(_GRAMMAR.keywords.get(t) or _GRAMMAR.spelling[t] for t in _GRAMMAR.declaration_start)) + ")(?![A-Za-z0-9_])",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What :func:`parse` returns: the tree (``None`` after a syntax error) and diagnostics in source order."""

    module: s.Module | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        """True when a tree was built and no error was reported."""
        return self.module is not None and not any(d.is_error for d in self.diagnostics)


def parse(source: SourceFile) -> ParseResult:
    """Parse one `.mce` file.

    Never raises on any input: every problem becomes a diagnostic. ``module`` is
    ``None`` when a syntax error was found; diagnostics are sorted by position.
    """
    text = source.text
    if text.startswith("\ufeff"):
        # A byte-order mark is allowed at the very start; a space keeps offsets equal.
        text = " " + text[1:]
    with _LOCK:
        state = _State(source)
        _BUILDER.state = state
        try:
            decls = _parse_with_recovery(state, text)
        finally:
            _BUILDER.state = None
    if not state.failed:
        for decl in decls:
            _check_depth(decl, state)
    diagnostics = tuple(sorted(dict.fromkeys(state.diagnostics), key=Diagnostic.sort_key))
    if state.failed:
        return ParseResult(None, diagnostics)
    module = s.Module(source.path, tuple(decls), tuple(state.comments), Span(source, 0, len(source.text)))
    return ParseResult(module, diagnostics)


@dataclass(frozen=True, slots=True)
class PlanParse:
    """What :func:`parse_plan` returns: the plan's expression (``None`` after a syntax error)
    and the diagnostics."""

    expr: s.Expr | None
    diagnostics: tuple[Diagnostic, ...]


#: Terminals that start a declaration or an import: in a plan, an attempt to reach outside
#: the toolbox (MCE031), not a mere syntax error.
_DECLARING: Final = frozenset(_GRAMMAR.declaration_start) | {"FROM", "IMPORT", "SEMI", "DOT"}


def parse_plan(source: SourceFile) -> PlanParse:
    """Parse plan text (docs/language.md §12): one expression of the grammar's ``expr``, nothing else.

    Never raises. The first syntax error is reported (no recovery: a plan is one
    expression); a declaration, an import or a ``;`` where the expression could
    end or start is MCE031, since a plan can declare and import nothing.
    """
    text = source.text
    opening = _PLAN_OPENING.match(text)
    if opening is not None and opening.group(1) in _GRAMMAR.declaration_words:
        word = opening.group(1)
        return PlanParse(None, (_outside_plan(word, Span(source, opening.start(1), opening.end(1))),))
    with _LOCK:
        state = _State(source)
        _BUILDER.state = state
        try:
            expr: s.Expr = _lark().parse(text, start="plan")  # type: ignore[assignment]  # the builder's `plan`
        except lark.UnexpectedInput as exc:
            diagnostic, _ = _describe(source, exc)
            token = getattr(exc, "token", None)
            if isinstance(token, Token) and token.type in _DECLARING:
                start, end = _offsets(token)
                diagnostic = _outside_plan(str(token), Span(source, start, end))
            return PlanParse(None, (diagnostic,))
        finally:
            _BUILDER.state = None
    if state.failed:
        return PlanParse(None, tuple(sorted(dict.fromkeys(state.diagnostics), key=Diagnostic.sort_key)))
    return PlanParse(expr, tuple(state.diagnostics))


#: The first word of a plan (after spaces and comments).
_PLAN_OPENING: Final = re.compile(r"(?:\s|#[^\n]*)*([A-Za-z_][A-Za-z0-9_]*)")


def _outside_plan(word: str, span: Span) -> Diagnostic:
    """MCE031 for a declaration, an import, a ``;`` or a dotted Python path in plan text."""
    if word == ".":
        return error(
            "MCE031",
            "a plan cannot name a Python path: it reaches only its toolbox's names",
            span,
            help="use a name the toolbox lists; a plan has no access to modules",
        )
    return error(
        "MCE031",
        f"a plan cannot contain `{word}`: it is one expression over its toolbox",
        span,
        help="write only an expression of the toolbox's names: no declarations, imports or `;`",
    )


def parse_region(source: SourceFile, start: int, end: int) -> tuple[list[s.Decl], list[s.Comment]] | None:
    """The declarations and comments of ``source.text[start:end]``, with spans in ``source``;
    ``None`` if that stretch is not a sequence of declarations free of diagnostics.

    :func:`mcec.syntax.incremental.reparse` parses the stretch an edit touched with this.
    """
    text = source.text[start:end]
    if start == 0 and text.startswith("\ufeff"):
        text = " " + text[1:]
    with _LOCK:
        state = _State(source, offset=start)
        _BUILDER.state = state
        try:
            decls: list[s.Decl] = _lark().parse(text, start="start")  # type: ignore[assignment]  # the builder's `start`
        except lark.UnexpectedInput:
            return None
        finally:
            _BUILDER.state = None
    for decl in decls:
        _check_depth(decl, state)
    if state.failed or state.diagnostics:
        return None
    return decls, state.comments


# ---------------------------------------------------------------- the parser


@dataclass(slots=True)
class _State:
    """What one parse collects while Lark calls the builder."""

    source: SourceFile
    #: Where the text given to Lark starts in the source (its tokens' offsets are relative to it).
    offset: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)
    comments: list[s.Comment] = field(default_factory=list)
    #: True once an error that stops the tree from being built was reported.
    failed: bool = False
    #: The frame of the declaration being built: its nodes' spans are made in it, so they move
    #: with it (:class:`mcec.span.Frame`); a new one is started once a declaration is built.
    frame: Frame = field(init=False)

    def __post_init__(self) -> None:
        self.frame = Frame(self.source)


#: Lark calls the builder's methods, which read the parse's state from the
#: builder: one parse at a time.
_LOCK: Final = threading.Lock()


@functools.cache
def _lark() -> lark.Lark:
    """The LALR parser with the builder embedded (grammar analysis takes a while: once per process)."""
    parser = grammar_parser(
        "parser",
        start=["start", "plan"],
        lexer="contextual",
        transformer=_BUILDER,
        lexer_callbacks={"COMMENT": _BUILDER.comment},
        maybe_placeholders=False,
    )
    # Lark hands a rule without a builder method on as a Tree: for a rule that
    # leaves a node, that would be a bug found far from here.
    unbuilt = {
        str(rule.origin.name)
        for rule in parser.rules
        if not str(rule.origin.name).startswith("_") and not rule.options.expand1
    } - {name for name in dir(_Builder) if not name.startswith("_")}
    assert not unbuilt, f"grammar rules without a builder method: {sorted(unbuilt)}"
    return parser


def _parse_with_recovery(state: _State, text: str) -> list[s.Decl]:
    """Parse ``text``; after a syntax error, go on at the next declaration to report more.

    A run after an error parses the text with everything before its start
    blanked out (newlines kept), so offsets, lines and columns stay those of
    the file. Only a file without errors gives declarations.
    """
    parser = _lark()
    errors = 0
    base = 0
    while True:
        masked = text if base == 0 else re.sub(r"[^\n]", " ", text[:base]) + text[base:]
        try:
            decls: list[s.Decl] = parser.parse(masked, start="start")  # type: ignore[assignment]  # the builder's `start`
            return decls
        except lark.UnexpectedInput as exc:
            diagnostic, resume = _describe(state.source, exc)
        state.failed = True
        state.diagnostics.append(diagnostic)
        errors += 1
        if resume is None or errors >= MAX_SYNTAX_ERRORS:
            return []
        found = _RESYNC.search(text, max(resume, base + 1))
        if found is None:
            return []
        base = found.start()


def _describe(source: SourceFile, exc: lark.UnexpectedInput) -> tuple[Diagnostic, int | None]:
    """The diagnostic for a Lark error, and the offset to resume after (``None``: stop)."""
    if isinstance(exc, lark.UnexpectedCharacters):
        offset = exc.pos_in_stream if exc.pos_in_stream is not None else 0
        return describe_bad_character(source, offset), offset + 1
    if not isinstance(exc, lark.UnexpectedToken):
        return error("MCE001", "syntax error", source.span(0, 0)), None
    token = exc.token
    at_end = token.type == "$END"
    if at_end:
        start = end = len(source.text.rstrip())
        found_text = ""
    else:
        start, end = _offsets(token)
        found_text = str(token)
    values = exc.interactive_parser.parser_state.value_stack if exc.interactive_parser is not None else []
    stack = tuple(_stack_item(value) for value in values)
    site = ErrorSite(
        found_type=token.type,
        found_text=found_text,
        start=start,
        end=end,
        expected=frozenset(exc.accepts or exc.expected),
        stack=stack,
    )
    resume: int | None = None if at_end else start
    if resume is not None and len(stack) >= 2 and stack[-2].kind == "DOT" and stack[-1].kind in _GRAMMAR.keywords:
        # `m.f.` then `pipeline p …` on the next line: the keyword was read as an attribute
        # name; resume there so that its declaration is parsed too.
        resume = stack[-1].start
    return describe_unexpected(source, site), resume


def _stack_item(value: object) -> StackItem:
    """One entry of the parser's stack as plain data: a terminal's name, a node's class name, or ``?``
    for what a ``_rule`` or an ``x*`` helper left (no node of its own)."""
    if isinstance(value, Token):
        start, end = _offsets(value)
        return StackItem(value.type, start, end)
    if isinstance(value, s.Node):
        return StackItem(type(value).__name__, value.start, value.end)
    return StackItem("?", -1, -1)


def _offsets(token: Token) -> tuple[int, int]:
    """A token's offsets (Lark's ``start_pos``/``end_pos``)."""
    start = token.start_pos if token.start_pos is not None else 0
    end = token.end_pos if token.end_pos is not None else start + len(token)
    return start, end


# ---------------------------------------------------------------- building nodes

#: A child of a rule, as Lark hands it to the builder.
_Child = Any
_D = TypeVar("_D", bound=s.Node)


class _Builder(lark.Transformer[Token, list[s.Decl]]):
    """Makes :mod:`mcec.syntax.tree` nodes; one method per grammar rule, called with the rule's children.

    Children are tokens (named terminals are kept), the nodes of sub-rules, and
    the flattened parts of ``x*`` repetitions. A node's span runs from its
    first child to its last.
    """

    def __init__(self) -> None:
        super().__init__()
        self.state: _State | None = None

    # -- positions and names

    @property
    def current(self) -> _State:
        """The parse in progress."""
        assert self.state is not None, "the builder is used only inside parse()"
        return self.state

    def span(self, first: _Child, last: _Child | None = None) -> Span:
        """The span from the start of ``first`` to the end of ``last`` (default: ``first``), tokens or nodes."""
        offset = self.current.offset
        start = _offsets(first)[0] + offset if isinstance(first, Token) else first.start
        closing = first if last is None else last
        end = _offsets(closing)[1] + offset if isinstance(closing, Token) else closing.end
        return Span(self.current.frame, start, end)

    def declared(self, decl: _D) -> _D:
        """``decl``, built: the declarations after it get frames of their own."""
        self.current.frame = Frame(self.current.source)
        return decl

    def comment(self, token: Token) -> Token:
        """Lexer callback: remember a ``#`` comment for ``Module.comments``."""
        text = str(token).rstrip("\r")
        start = _offsets(token)[0] + self.current.offset
        self.current.comments.append(s.Comment(text, Span(self.current.source, start, start + len(text))))
        return token

    def check_name(self, name: s.Name, what: str) -> None:
        """MCE016 for a name the generated module cannot bind: a Python keyword, a dunder
        (``__debug__`` cannot be assigned at all; ``__name__``, ``__annotations__`` … are the
        module's own), or a name Python would NFKC-normalise differently."""
        text = name.text
        binds = what not in ("an attribute name", "a module or implementation name")  # those are read, not bound
        if binds and len(text) > 4 and text.startswith("__") and text.endswith("__"):
            self.current.diagnostics.append(
                error(
                    "MCE016",
                    f"`{text}` cannot be used as {what}: names that begin and end with `__` are Python's own",
                    name.span,
                    help=f"import it under another name: `{text} as {text.strip('_')}`"
                    if what == "an imported name"
                    else f"the generated module could not bind it safely; choose another name, such as `{text.strip('_')}`",
                )
            )
        elif text in PYTHON_KEYWORDS:
            self.current.diagnostics.append(
                error(
                    "MCE016",
                    f"`{text}` is a Python keyword and cannot be used as {what}",
                    name.span,
                    help=f"the generated Python module could not use it; choose another name, such as `{text}_`",
                )
            )
        elif not text.isascii() and unicodedata.normalize("NFKC", text) != text:
            self.current.diagnostics.append(error("MCE016", f"`{text}` is not a name Python keeps as written", name.span))

    def check_python_path(self, path: s.QualName) -> None:
        """MCE016 for a Python keyword heading a module path or an implementation name
        (the parts after a dot are checked as attribute names already)."""
        self.check_name(path.parts[0], "a module or implementation name")

    def not_reserved(self, token: Token) -> None:
        """A reserved word lexed as a name (where the grammar expects only a name) is MCE016."""
        if str(token) in _RESERVED:
            self.current.failed = True
            self.current.diagnostics.append(reserved_word(str(token), self.span(token)))

    # -- names and types

    def name(self, c: list[_Child]) -> s.Name:
        self.not_reserved(c[0])
        return s.Name(str(c[0]), self.span(c[0]))

    def attr_name(self, c: list[_Child]) -> s.Name:
        # After a dot: reserved words are fine (`impl.merge`), Python keywords are not (`impl.class`).
        name = s.Name(str(c[0]), self.span(c[0]))
        self.check_name(name, "an attribute name")
        return name

    def qual_name(self, c: list[_Child]) -> s.QualName:
        parts = tuple(child for child in c if isinstance(child, s.Name))
        return s.QualName(parts, self.span(c[0], c[-1]))

    def type_name(self, c: list[_Child]) -> s.Name | s.QualName:
        qual: s.QualName = c[0]
        return qual.parts[0] if len(qual.parts) == 1 else qual

    def type_apply(self, c: list[_Child]) -> s.TypeApply:
        # qual_name [ type (, type)* ]
        args = tuple(child for child in c[2:-1] if not isinstance(child, Token))
        return s.TypeApply(c[0], args, self.span(c[0], c[-1]))

    def type_union(self, c: list[_Child]) -> s.TypeUnion:
        # Members are single types (names or applications), never unions: nothing to flatten.
        members = tuple(child for child in c if not isinstance(child, Token))
        return s.TypeUnion(members, self.span(c[0], c[-1]))

    def error_list(self, c: list[_Child]) -> s.ErrorList:
        errors = tuple(child for child in c if not isinstance(child, Token))
        return s.ErrorList(errors, self.span(c[0], c[-1]))

    # -- expressions

    def ref(self, c: list[_Child]) -> s.Ref:
        token: Token = c[0]
        self.not_reserved(token)
        text = str(token)
        if text in PYTHON_KEYWORDS:
            self.check_name(s.Name(text, self.span(token)), "a name")
        return s.Ref(text, self.span(token))

    def group(self, c: list[_Child]) -> s.Expr:
        # `( e )` is just `e`, with `e`'s own span.
        inner: s.Expr = c[1]
        return inner

    def bind(self, c: list[_Child]) -> s.Bind:
        parts: list[s.Expr] = []
        for child in c:
            if isinstance(child, Token):
                continue
            # Bind is associative: `(a >>= b) >>= c` is flattened too.
            if isinstance(child, s.Bind):
                parts.extend(child.parts)
            else:
                parts.append(child)
        return s.Bind(tuple(parts), self.span(parts[0], parts[-1]))

    def catch(self, c: list[_Child]) -> s.Expr:
        # `body (catch E1 | E2 … => handler)+`, folded to the left.
        body: s.Expr = c[0]
        index = 1
        while index < len(c):
            keyword: Token = c[index]
            arrow = next(i for i in range(index + 1, len(c)) if isinstance(c[i], Token) and c[i].type == "FATARROW")
            errors = tuple(child for child in c[index + 1 : arrow] if not isinstance(child, Token))
            handler: s.Expr = c[arrow + 1]
            body = s.Catch(body, errors, handler, self.span(keyword), self.span(body, handler))
            index = arrow + 2
        return body

    def or_else(self, c: list[_Child]) -> s.Expr:
        body: s.Expr = c[0]
        for index in range(1, len(c), 2):
            fallback: s.Expr = c[index + 1]
            body = s.OrElse(body, fallback, self.span(c[index]), self.span(body, fallback))
        return body

    def par(self, c: list[_Child]) -> s.Par:
        # par < expr (, expr)* >
        branches = tuple(child for child in c[2:-1] if not isinstance(child, Token))
        return s.Par(branches, self.span(c[0]), self.span(c[0], c[-1]))

    def each(self, c: list[_Child]) -> s.Each:
        body: s.Expr = c[-1]
        if len(c) == 2:
            return s.Each(body, None, None, self.span(c[0]), self.span(c[0], body))
        # each ( limit = INT ) term
        digits: Token = c[4]
        return s.Each(body, self.number(digits, "each(limit=…)"), self.span(digits), self.span(c[0]), self.span(c[0], body))

    def number(self, digits: Token, where: str) -> int:
        """The value of an INT (or NEG_INT) token; too many digits is MCE019 (and 0 stands in for it)."""
        if len(digits.lstrip("-")) > MAX_DIGITS:
            self.number_too_long(digits, where)
            return 0
        return int(digits)

    def number_too_long(self, digits: Token, where: str) -> None:
        """MCE019 for a number with more than :data:`MAX_DIGITS` digits."""
        self.current.failed = True
        self.current.diagnostics.append(
            error(
                "MCE019",
                f"the number in `{where}` has {len(digits.lstrip('-')):,} digits; a number has at most {MAX_DIGITS}",
                self.span(digits),
                help="write a smaller number",
            )
        )

    def local(self, c: list[_Child]) -> s.Local | s.SubAgent:
        # LOCAL term, or LOCAL ( STATE = name ) term: a sub-agent adapter (§11)
        if len(c) == 2:
            return s.Local(c[1], self.span(c[0]), self.span(c[0], c[1]))
        return s.SubAgent(c[4], c[6], self.span(c[0]), self.span(c[0], c[6]))

    # -- v2 control flow

    def type_literal(self, c: list[_Child]) -> s.TypeLiteral:
        token: Token = c[0]
        value: str | int = self.string(token) if token.type == "STRING" else self.number(token, "Literal[…]")
        return s.TypeLiteral(value, self.span(token))

    def pattern(self, c: list[_Child]) -> s.Pattern:
        child = c[0]
        if isinstance(child, s.QualName):
            return child.parts[0] if len(child.parts) == 1 else child
        token: Token = child
        value: str | int = self.string(token) if token.type == "STRING" else self.number(token, "a pattern")
        return s.TypeLiteral(value, self.span(token))

    def arm(self, c: list[_Child]) -> s.Arm:
        # pattern => expr
        return s.Arm(c[0], c[2], self.span(c[0], c[2]))

    def match(self, c: list[_Child]) -> s.Match:
        arms = tuple(child for child in c if isinstance(child, s.Arm))
        return s.Match(arms, self.span(c[0]), self.span(c[0], c[-1]))

    def if_else(self, c: list[_Child]) -> s.IfElse:
        # IF term THEN term ELSE term
        return s.IfElse(c[1], c[3], c[5], self.span(c[0]), self.span(c[0], c[5]))

    def loop(self, c: list[_Child]) -> s.Loop:
        # LOOP ( INT ) term
        return s.Loop(c[4], self.number(c[2], "loop(…)"), self.span(c[2]), self.span(c[0]), self.span(c[0], c[4]))

    def retry_arg(self, c: list[_Child]) -> _RetryArg:
        # NAME = (error | error … | number)
        name: Token = c[0]
        values = c[2:]
        if isinstance(values[0], Token):
            return _RetryArg(str(name), self.span(name), None, values[0])
        errors = tuple(child for child in values if not isinstance(child, Token))
        return _RetryArg(str(name), self.span(name), errors, None)

    def retry(self, c: list[_Child]) -> s.Retry:
        # RETRY ( INT (, retry_arg)* ) term
        body: s.Expr = c[-1]
        attempts: Token = c[2]
        on: tuple[s.TypeExpr, ...] | None = None
        backoff: float | None = None
        backoff_span: Span | None = None
        seen: set[str] = set()
        for arg in (child for child in c[3:-2] if isinstance(child, _RetryArg)):
            if arg.name in seen:
                self.syntax_error(f"`{arg.name}=` is given twice in `retry(…)`", arg.name_span, _RETRY_HELP)
            seen.add(arg.name)
            if arg.name == "on" and arg.errors is not None:
                on = arg.errors
            elif arg.name == "backoff" and arg.number is not None:
                backoff = self.seconds(arg.number, "retry(backoff=…)")
                backoff_span = self.span(arg.number)
            elif arg.name == "on":
                self.syntax_error("`on=` takes the errors to retry, like `on=E1 | E2`", self.span(arg.number), _RETRY_HELP)
            elif arg.name == "backoff":
                self.syntax_error(
                    "`backoff=` takes the first pause in seconds, like `backoff=0.5`", arg.name_span, _RETRY_HELP
                )
            else:
                self.syntax_error(f"`retry` takes no argument `{arg.name}`", arg.name_span, _RETRY_HELP)
        return s.Retry(
            body,
            self.number(attempts, "retry(…)"),
            self.span(attempts),
            on,
            backoff,
            backoff_span,
            self.span(c[0]),
            self.span(c[0], body),
        )

    def budget(self, c: list[_Child]) -> s.Budget:
        # BUDGET ( INT ) term
        return s.Budget(c[4], self.number(c[2], "budget(…)"), self.span(c[2]), self.span(c[0]), self.span(c[0], c[4]))

    def timeout(self, c: list[_Child]) -> s.Timeout:
        # TIMEOUT ( INT | NUMBER ) term
        return s.Timeout(c[4], self.seconds(c[2], "timeout(…)"), self.span(c[2]), self.span(c[0]), self.span(c[0], c[4]))

    def seconds(self, token: Token, where: str) -> float:
        """A duration in seconds, written as an INT or a decimal NUMBER (MCE019 for too many digits)."""
        if token.type == "INT":
            return float(self.number(token, where))
        whole, fraction = str(token).split(".")
        if len(whole) > MAX_DIGITS or len(fraction) > MAX_DIGITS:
            self.number_too_long(token, where)
            return 0.0
        return float(str(token))

    def syntax_error(self, message: str, span: Span, help: str) -> None:
        """An MCE001 the builder finds (the grammar accepted the text; the words are wrong)."""
        self.current.failed = True
        self.current.diagnostics.append(error("MCE001", message, span, help=help))

    def string(self, token: Token) -> str:
        """The value of a STRING token (JSON escapes); a bad escape is MCE001."""
        try:
            value = json.loads(str(token), strict=False)
        except ValueError:
            self.syntax_error(
                "invalid escape in string", self.span(token), 'strings use JSON escapes: `\\"`, `\\\\`, `\\n`, `\\t`, `\\uXXXX`'
            )
            return ""
        assert isinstance(value, str)
        return value

    # -- blocks

    def statement(self, c: list[_Child]) -> s.Statement:
        if isinstance(c[0], Token) and c[0].type == "STEP":
            return s.Statement(c[1], True, self.span(c[0], c[-1]))
        return s.Statement(c[0], False, self.span(c[0], c[-1]))

    def block(self, c: list[_Child]) -> s.Block:
        statements = tuple(child for child in c if isinstance(child, s.Statement))
        return s.Block(statements, self.span(c[0], c[-1]))

    # -- declarations

    def imported_name(self, c: list[_Child]) -> s.ImportedName:
        if len(c) == 1:
            self.check_name(c[0], "an imported name")
            return s.ImportedName(c[0], None, self.span(c[0]))
        self.check_name(c[2], "an import alias")
        return s.ImportedName(c[0], c[2], self.span(c[0], c[2]))

    def from_import(self, c: list[_Child]) -> s.FromImport:
        self.check_python_path(c[1])
        names = tuple(child for child in c[3:] if isinstance(child, s.ImportedName))
        return self.declared(s.FromImport(c[1], names, self.span(c[0], c[-1])))

    def module_import(self, c: list[_Child]) -> s.ModuleImport:
        self.check_python_path(c[1])
        alias: s.Name | None = c[3] if len(c) == 4 else None
        if alias is not None:
            self.check_name(alias, "an import alias")
        return self.declared(s.ModuleImport(c[1], alias, self.span(c[0], c[-1])))

    def state_decl(self, c: list[_Child]) -> s.StateDecl:
        merge: s.QualName | None = c[3] if len(c) == 4 else None
        if merge is not None:
            self.check_python_path(merge)
        return self.declared(s.StateDecl(c[1], merge, self.span(c[0], c[-1])))

    def error_decl(self, c: list[_Child]) -> s.ErrorDecl:
        return self.declared(s.ErrorDecl(c[1], self.span(c[0], c[1])))

    def step_decl(self, c: list[_Child]) -> s.StepDecl:
        # [ASYNC] STEP name COLON type ARROW type [error_list] EQUAL qual_name
        is_async = c[0].type == "ASYNC"
        at = 2 if is_async else 1
        name: s.Name = c[at]
        errors: s.ErrorList | None = c[at + 5] if isinstance(c[at + 5], s.ErrorList) else None
        self.check_name(name, "a step name")
        self.check_python_path(c[-1])
        return self.declared(s.StepDecl(name, is_async, c[at + 2], c[at + 4], errors, c[-1], self.span(c[0], c[-1])))

    def fn_decl(self, c: list[_Child]) -> s.FnDecl:
        # FN name COLON type ARROW type EQUAL qual_name
        self.check_name(c[1], "a fn name")
        self.check_python_path(c[7])
        return self.declared(s.FnDecl(c[1], c[3], c[5], c[7], self.span(c[0], c[7])))

    def rename_decl(self, c: list[_Child]) -> s.RenameDecl:
        # RENAME name ARROW name
        return self.declared(s.RenameDecl(c[1], c[3], self.span(c[0], c[3])))

    def server_decl(self, c: list[_Child]) -> s.ServerDecl:
        # SERVER name EQUAL STDIO STRING
        name: s.Name = c[1]
        token: Token = c[4]
        self.check_name(name, "a server name")
        command = self.string(token)
        return self.declared(s.ServerDecl(name, command, self.span(token), self.span(c[0], token)))

    def tool_decl(self, c: list[_Child]) -> s.ToolDecl:
        # TOOL name COLON type ARROW type [error_list] EQUAL name DOT name
        errors: s.ErrorList | None = c[6] if isinstance(c[6], s.ErrorList) else None
        self.check_name(c[1], "a tool name")
        return self.declared(s.ToolDecl(c[1], c[3], c[5], errors, c[-3], c[-1], self.span(c[0], c[-1])))

    def model_decl(self, c: list[_Child]) -> s.ModelDecl:
        # MODEL name EQUAL OPENAI STRING [model_options]
        name: s.Name = c[1]
        token: Token = c[4]
        self.check_name(name, "a model name")
        provider = s.Name(str(c[3]), self.span(c[3]))
        options: tuple[s.ModelOption, ...] = ()
        end: _Child = token
        if len(c) == 6:
            options, end = c[5]
        return self.declared(s.ModelDecl(name, provider, self.string(token), self.span(token), options, self.span(c[0], end)))

    def model_options(self, c: list[_Child]) -> tuple[tuple[s.ModelOption, ...], Token]:
        # ( model_option (, model_option)* [,] ) — with the closing token, where the declaration ends
        return tuple(child for child in c if isinstance(child, s.ModelOption)), c[-1]

    def model_option(self, c: list[_Child]) -> s.ModelOption:
        # NAME = (STRING | INT | NUMBER)
        name_token: Token = c[0]
        token: Token = c[2]
        value: str | int | float
        if token.type == "STRING":
            value = self.string(token)
        elif token.type == "INT":
            value = self.number(token, f"{name_token}=…")
        else:
            value = self.seconds(token, f"{name_token}=…")
        name = s.Name(str(name_token), self.span(name_token))
        return s.ModelOption(name, value, self.span(token), self.span(name_token, token))

    def template(self, c: list[_Child]) -> s.Template:
        # STRING | TRIPLE_STRING | FILE STRING
        token: Token = c[-1]
        if token.type == "TRIPLE_STRING":
            return s.Template(str(token)[3:-3], False, True, self.span(token))
        return s.Template(self.string(token), len(c) == 2, False, self.span(c[0], token))

    def llm_decl(self, c: list[_Child]) -> s.LlmDecl:
        # [STREAM] LLM name COLON type ARROW type EQUAL name template
        stream = c[0].type == "STREAM"
        at = 1 if stream else 0
        self.check_name(c[at + 1], "an llm name")
        return self.declared(s.LlmDecl(c[at + 1], c[at + 3], c[at + 5], c[at + 7], c[at + 8], stream, self.span(c[0], c[at + 8])))

    def ask_decl(self, c: list[_Child]) -> s.AskDecl:
        # ASK name COLON type ARROW type [EQUAL template] [WITHIN (INT | NUMBER)]
        self.check_name(c[1], "an ask name")
        template = next((child for child in c[6:] if isinstance(child, s.Template)), None)
        within: float | None = None
        within_span: Span | None = None
        if isinstance(c[-1], Token) and c[-1].type in ("INT", "NUMBER"):
            within, within_span = self.seconds(c[-1], "within …"), self.span(c[-1])
        return self.declared(s.AskDecl(c[1], c[3], c[5], template, within, within_span, self.span(c[0], c[-1])))

    def toolbox_decl(self, c: list[_Child]) -> s.ToolboxDecl:
        # TOOLBOX name COLON type ARROW type [error_list] EQUAL name (COMMA name)*
        self.check_name(c[1], "a toolbox name")
        errors: s.ErrorList | None = c[6] if isinstance(c[6], s.ErrorList) else None
        first = 8 if errors is not None else 7
        entries = tuple(child for child in c[first:] if isinstance(child, s.Name))
        return self.declared(s.ToolboxDecl(c[1], c[3], c[5], errors, entries, self.span(c[0], c[-1])))

    def spawn(self, c: list[_Child]) -> s.Spawn:
        # SPAWN ( name ) term
        return s.Spawn(c[2], c[4], self.span(c[0]), self.span(c[0], c[4]))

    def plan(self, c: list[_Child]) -> s.Expr:
        return c[0]  # type: ignore[no-any-return]

    def pipeline_decl(self, c: list[_Child]) -> s.PipelineDecl:
        # PIPELINE name COLON type ARROW type [error_list] (EQUAL expr SEMI | block)
        errors: s.ErrorList | None = c[6] if isinstance(c[6], s.ErrorList) else None
        body: s.Expr | s.Block = c[-1] if isinstance(c[-1], s.Block) else c[-2]
        self.check_name(c[1], "a pipeline name")
        return self.declared(s.PipelineDecl(c[1], c[3], c[5], errors, body, self.span(c[0], c[-1])))

    def start(self, c: list[_Child]) -> list[s.Decl]:
        return list(c)


_BUILDER: Final = _Builder()

_RETRY_HELP: Final = "write `retry(3)`, `retry(3, on=E1 | E2)` or `retry(3, on=E, backoff=0.5)`"


@dataclass(frozen=True, slots=True)
class _RetryArg:
    """One ``name=value`` inside ``retry(…)``, before the builder checks the name."""

    name: str
    name_span: Span
    errors: tuple[s.TypeExpr, ...] | None
    number: Token | None


# ---------------------------------------------------------------- nesting depth


def _check_depth(decl: s.Decl, state: _State) -> None:
    """MCE001 where an expression or a type of ``decl`` nests deeper than :data:`MAX_DEPTH`."""
    for root, what in _roots(decl):
        deepest = _too_deep(root)
        if deepest is not None:
            state.failed = True
            state.diagnostics.append(
                error(
                    "MCE001",
                    f"this {what} nests more than {MAX_DEPTH} levels deep",
                    deepest.span,
                    help=f"mcec accepts expressions and types nested up to {MAX_DEPTH} levels; "
                    "name the inner part (a pipeline of its own, or a type alias in Python)",
                )
            )
            return


def _roots(decl: s.Decl) -> Iterator[tuple[s.Expr | s.TypeExpr, str]]:
    """The expressions and types written in a declaration."""
    match decl:
        case s.FromImport() | s.ModuleImport() | s.ServerDecl() | s.ModelDecl() | s.RenameDecl():
            return
        case s.StateDecl() | s.ErrorDecl():
            yield decl.type, "type"
        case s.StepDecl() | s.ToolDecl():
            yield decl.input, "type"
            yield decl.output, "type"
            if decl.errors is not None:
                yield from ((e, "type") for e in decl.errors.errors)
        case s.FnDecl() | s.LlmDecl() | s.AskDecl():
            yield decl.input, "type"
            yield decl.output, "type"
        case s.ToolboxDecl():
            yield decl.input, "type"
            yield decl.output, "type"
            if decl.errors is not None:
                yield from ((e, "type") for e in decl.errors.errors)
        case s.PipelineDecl():
            yield decl.input, "type"
            yield decl.output, "type"
            if decl.errors is not None:
                yield from ((e, "type") for e in decl.errors.errors)
            if isinstance(decl.body, s.Block):
                yield from ((statement.expr, "expression") for statement in decl.body.statements)
            else:
                yield decl.body, "expression"
        case _:
            assert_never(decl)


def _too_deep(root: s.Expr | s.TypeExpr) -> s.Expr | s.TypeExpr | None:
    """The first node (depth first) more than :data:`MAX_DEPTH` levels below ``root``'s top, if any.

    Iterative: this is what keeps the recursive phases safe, so it must not recurse itself.
    """
    stack: list[tuple[s.Expr | s.TypeExpr, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return node
        children: tuple[s.Expr | s.TypeExpr, ...]
        match node:
            case s.Name() | s.QualName() | s.TypeApply() | s.TypeUnion() | s.TypeLiteral():
                children = s.type_children(node)
            case s.Catch():
                children = (node.body, *node.errors, node.handler)
            case s.Retry():
                children = (*(node.on or ()), node.body)
            case (
                s.Ref() | s.Bind() | s.Par() | s.Each() | s.Local() | s.SubAgent() | s.OrElse() | s.Match()
                | s.IfElse() | s.Loop() | s.Timeout() | s.Budget() | s.Spawn()
            ):
                children = s.expr_children(node)  # no type written inside: only expressions nest
            case _:
                # a new node kind must say which of its parts nest (types too, as a catch's do)
                assert_never(node)
        stack.extend((child, depth + 1) for child in reversed(children))
    return None
