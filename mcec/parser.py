"""Text to syntax tree: the only module that knows Lark exists.

:func:`parse` turns a :class:`~mcec.span.SourceFile` into a
:class:`~mcec.syntax.Module` plus diagnostics. The grammar lives in
``grammar/mce.lark`` (loaded by :func:`load_grammar`); the Lark LALR parser is
built once and given a Transformer, so syntax nodes are built *while* parsing,
by the parser's own explicit stack: no recursive walk over a parse tree, and
10,000-deep parentheses cannot overflow anything.

Syntax errors (MCE001, or MCE016 for a reserved word where a name belongs) are
described in words by :mod:`mcec.syntax_errors`, which receives plain data, not
Lark objects. After an error the parser re-synchronises at the next line that
starts with a declaration keyword and parses on, so one run reports several
syntax errors (at most :data:`MAX_SYNTAX_ERRORS`).

Decision: ``ParseResult.module`` is ``None`` when any syntax error (MCE001 or a
reserved word used as a name) was found. A Python keyword used as a name
(MCE016) does not stop the tree from being built, so ``module`` is then set and
the checker may still run.
"""

from __future__ import annotations

import functools
import gc
import importlib.resources
import json
import keyword
import re
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

import lark
from lark import Token
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from mcec import syntax as s
from mcec.diagnostics import Diagnostic, error
from mcec.span import SourceFile, Span
from mcec.syntax_errors import ErrorSite, StackItem, describe_bad_character, describe_unexpected

__all__ = ["MAX_SYNTAX_ERRORS", "ParseResult", "load_grammar", "parse"]

#: At most this many syntax errors are reported per file; later ones are usually echoes.
MAX_SYNTAX_ERRORS: Final = 20

#: The words LANGUAGE.md §2 reserves; they never lex as names.
RESERVED_WORDS: Final = frozenset(
    "from import as state error step async fn pipeline par each local catch orelse "
    "merge limit server stdio tool".split()
)

#: A line starting with one of these (in column 1) begins a declaration: where the
#: parser re-synchronises after a syntax error.
_RESYNC = re.compile(r"^(?:from|import|state|error|async|step|fn|pipeline|server|tool)(?![A-Za-z0-9_])", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What :func:`parse` returns: the tree (``None`` after a syntax error) and diagnostics in source order."""

    module: s.Module | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        """True when a tree was built and no error was reported."""
        return self.module is not None and not any(d.is_error for d in self.diagnostics)


def load_grammar() -> str:
    """The text of ``mce.lark``: the wheel's ``mcec/grammar/mce.lark``, else the checkout's ``grammar/mce.lark``."""
    packaged = importlib.resources.files("mcec") / "grammar" / "mce.lark"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parent.parent / "grammar" / "mce.lark").read_text(encoding="utf-8")


# ---------------------------------------------------------------- per-parse context


@dataclass(slots=True)
class _Context:
    """State of one parse run (one segment of a file after error recovery).

    The Lark parser is built once with one transformer, so the transformer reads
    the current run's context from here; :data:`_LOCK` makes runs exclusive.
    """

    source: SourceFile
    base: int = 0
    comments: list[s.Comment] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    failed: bool = False


_LOCK = threading.Lock()
_CURRENT: list[_Context] = []


def _start(token: Token) -> int:
    """A token's start offset within the text Lark was given."""
    return token.start_pos or 0


def _end(token: Token) -> int:
    """A token's end offset within the text Lark was given."""
    return token.end_pos if token.end_pos is not None else _start(token)


def _ctx() -> _Context:
    return _CURRENT[-1]


def _collect_comment(token: Token) -> Token:
    """Lexer callback: remember a ``#`` comment for ``Module.comments``."""
    ctx = _ctx()
    text = str(token).rstrip("\r")
    start = ctx.base + _start(token)
    ctx.comments.append(s.Comment(text, ctx.source.span(start, start + len(text))))
    return token


# ---------------------------------------------------------------- building nodes

_Part = Any  # a Token or a syntax node: what Lark hands to transformer callbacks


def _span(first: _Part, last: _Part) -> Span:
    """The span from the start of ``first`` to the end of ``last`` (tokens or nodes).

    The one place where Lark positions become :class:`Span` values.
    """
    ctx = _ctx()
    if ctx.base == 0 and isinstance(first, Token) and isinstance(last, Token) and first.line is not None:
        # Fast path: the lexer already counted lines and columns (1-based, end exclusive).
        return Span(
            ctx.source.path,
            _start(first),
            _end(last),
            first.line,
            first.column or 1,
            last.end_line or first.line,
            last.end_column or 1,
        )
    start = ctx.base + _start(first) if isinstance(first, Token) else first.span.start
    end = ctx.base + _end(last) if isinstance(last, Token) else last.span.end
    return ctx.source.span(start, end)


def _nodes(children: list[_Part]) -> list[Any]:
    """The children that are syntax nodes (keywords and punctuation dropped)."""
    return [c for c in children if not isinstance(c, Token)]


def _has(children: list[_Part], token_type: str) -> bool:
    return any(isinstance(c, Token) and c.type == token_type for c in children)


def _check_name(name: s.Name, what: str) -> None:
    """MCE016 for a Python keyword (or a name Python would NFKC-normalise differently)."""
    if keyword.iskeyword(name.text):
        _ctx().diagnostics.append(
            error(
                "MCE016",
                f"`{name.text}` is a Python keyword and cannot be used as {what}",
                name.span,
                help=f"the generated Python module could not use it; choose another name, such as `{name.text}_`",
            )
        )
    elif unicodedata.normalize("NFKC", name.text) != name.text:
        _ctx().diagnostics.append(error("MCE016", f"`{name.text}` is not a name Python keeps as written", name.span))


class _Builder(lark.Transformer[Token, Any]):
    """Builds :mod:`mcec.syntax` nodes; one method per grammar rule (same name)."""

    def __default__(self, data: Any, children: list[_Part], meta: Any) -> Any:
        # Lark's own helper rules for `x*` / `x+` (`__name_star_3`) and our `_rule`s are spliced
        # into their parent, which reads `.children`: give them a Tree. Every
        # grammar rule of ours has a method; a missing one is a bug.
        if str(data).startswith("_"):
            return lark.Tree(data, children)
        raise AssertionError(f"no builder for grammar rule {data!r}")

    # -- names and types

    def name(self, children: list[_Part]) -> s.Name:
        token = children[0]
        return s.Name(str(token), _span(token, token))

    def qual_name(self, children: list[_Part]) -> s.QualName:
        parts = tuple(_nodes(children))
        return s.QualName(parts, _span(parts[0], parts[-1]))

    def type_name(self, children: list[_Part]) -> s.TypeName:
        return s.TypeName(children[0], children[0].span)

    def type_apply(self, children: list[_Part]) -> s.TypeApply:
        nodes = _nodes(children)
        return s.TypeApply(nodes[0], tuple(nodes[1:]), _span(children[0], children[-1]))

    def type_union(self, children: list[_Part]) -> s.TypeUnion:
        members = _nodes(children)
        flat: list[s.TypeExpr] = []
        for member in members:
            flat.extend(member.members if isinstance(member, s.TypeUnion) else (member,))
        return s.TypeUnion(tuple(flat), _span(members[0], members[-1]))

    def error_list(self, children: list[_Part]) -> s.ErrorList:
        return s.ErrorList(tuple(_nodes(children)), _span(children[0], children[-1]))

    # -- expressions

    def ref(self, children: list[_Part]) -> s.Ref:
        token = children[0]
        name = s.Name(str(token), _span(token, token))
        _check_name(name, "a name")
        return s.Ref(name, name.span)

    def group(self, children: list[_Part]) -> Any:
        # `( e )` is just `e`, with `e`'s own span.
        return children[1]

    def bind(self, children: list[_Part]) -> s.Bind:
        parts: list[s.Expr] = []
        for child in _nodes(children):
            # Bind is associative: `(a >>= b) >>= c` is flattened too.
            parts.extend(child.parts if isinstance(child, s.Bind) else (child,))
        return s.Bind(tuple(parts), _span(parts[0], parts[-1]))

    def catch(self, children: list[_Part]) -> s.Catch | Any:
        # children: body (CATCH type (BAR type)* FATARROW handler)+ ; fold to the left.
        body = children[0]
        index = 1
        while index < len(children):
            keyword_token = children[index]
            index += 1
            errors: list[s.TypeExpr] = []
            while not (isinstance(children[index], Token) and children[index].type == "FATARROW"):
                if not isinstance(children[index], Token):
                    errors.append(children[index])
                index += 1
            handler = children[index + 1]
            index += 2
            body = s.Catch(body, tuple(errors), handler, _span(keyword_token, keyword_token), _span(body, handler))
        return body

    def or_else(self, children: list[_Part]) -> s.OrElse | Any:
        body = children[0]
        for index in range(1, len(children), 2):
            keyword_token, fallback = children[index], children[index + 1]
            body = s.OrElse(body, fallback, _span(keyword_token, keyword_token), _span(body, fallback))
        return body

    def par(self, children: list[_Part]) -> s.Par:
        return s.Par(tuple(_nodes(children)), _span(children[0], children[0]), _span(children[0], children[-1]))

    def each(self, children: list[_Part]) -> s.Each:
        keyword_token, body = children[0], children[-1]
        limit: int | None = None
        limit_span: Span | None = None
        for child in children:
            if isinstance(child, Token) and child.type == "INT":
                limit, limit_span = int(str(child)), _span(child, child)
        return s.Each(body, limit, limit_span, _span(keyword_token, keyword_token), _span(keyword_token, body))

    def local(self, children: list[_Part]) -> s.Local:
        keyword_token, body = children
        return s.Local(body, _span(keyword_token, keyword_token), _span(keyword_token, body))

    # -- blocks

    def statement(self, children: list[_Part]) -> s.Statement:
        return s.Statement(_nodes(children)[0], _has(children, "STEP"), _span(children[0], children[-1]))

    def block(self, children: list[_Part]) -> s.Block:
        return s.Block(tuple(_nodes(children)), _span(children[0], children[-1]))

    # -- declarations

    def imported_name(self, children: list[_Part]) -> s.ImportedName:
        nodes = _nodes(children)
        alias = nodes[1] if len(nodes) > 1 else None
        entry = s.ImportedName(nodes[0], alias, _span(children[0], children[-1]))
        _check_name(entry.bound, "an imported name" if alias is None else "an import alias")
        return entry

    def from_import(self, children: list[_Part]) -> s.FromImport:
        nodes = _nodes(children)
        return s.FromImport(nodes[0], tuple(nodes[1:]), _span(children[0], children[-1]))

    def module_import(self, children: list[_Part]) -> s.ModuleImport:
        nodes = _nodes(children)
        alias = nodes[1] if len(nodes) > 1 else None
        if alias is not None:
            _check_name(alias, "an import alias")
        return s.ModuleImport(nodes[0], alias, _span(children[0], children[-1]))

    def state_decl(self, children: list[_Part]) -> s.StateDecl:
        nodes = _nodes(children)
        merge = nodes[1] if len(nodes) > 1 else None
        return s.StateDecl(nodes[0], merge, _span(children[0], children[-1]))

    def error_decl(self, children: list[_Part]) -> s.ErrorDecl:
        return s.ErrorDecl(children[1], _span(children[0], children[-1]))

    def step_decl(self, children: list[_Part]) -> s.StepDecl:
        nodes = _nodes(children)
        errors = next((n for n in nodes if isinstance(n, s.ErrorList)), None)
        _check_name(nodes[0], "a step name")
        return s.StepDecl(
            nodes[0], _has(children, "ASYNC"), nodes[1], nodes[2], errors, nodes[-1], _span(children[0], children[-1])
        )

    def fn_decl(self, children: list[_Part]) -> s.FnDecl:
        name, input_type, output_type, impl = _nodes(children)
        _check_name(name, "a fn name")
        return s.FnDecl(name, input_type, output_type, impl, _span(children[0], children[-1]))

    def server_decl(self, children: list[_Part]) -> s.ServerDecl:
        name = children[1]
        token = children[-1]
        _check_name(name, "a server name")
        try:
            command = json.loads(str(token), strict=False)
        except ValueError:
            ctx = _ctx()
            ctx.failed = True
            ctx.diagnostics.append(
                error(
                    "MCE001",
                    "invalid escape in string",
                    _span(token, token),
                    help='strings use JSON escapes: `\\"`, `\\\\`, `\\n`, `\\t`, `\\uXXXX`',
                )
            )
            command = ""
        return s.ServerDecl(name, command, _span(token, token), _span(children[0], token))

    def tool_decl(self, children: list[_Part]) -> s.ToolDecl:
        nodes = _nodes(children)
        name, input_type, output_type = nodes[0], nodes[1], nodes[2]
        errors = next((n for n in nodes if isinstance(n, s.ErrorList)), None)
        _check_name(name, "a tool name")
        return s.ToolDecl(name, input_type, output_type, errors, nodes[-2], nodes[-1], _span(children[0], children[-1]))

    def pipeline_decl(self, children: list[_Part]) -> s.PipelineDecl:
        nodes = _nodes(children)
        errors = next((n for n in nodes if isinstance(n, s.ErrorList)), None)
        _check_name(nodes[0], "a pipeline name")
        return s.PipelineDecl(nodes[0], nodes[1], nodes[2], errors, nodes[-1], _span(children[0], children[-1]))

    def start(self, children: list[_Part]) -> list[s.Decl]:
        return children


@functools.cache
def _parser() -> lark.Lark:
    """The Lark LALR parser, built once (grammar analysis takes a while)."""
    return lark.Lark(
        load_grammar(),
        parser="lalr",
        lexer="basic",
        transformer=_Builder(),
        maybe_placeholders=False,
        lexer_callbacks={"COMMENT": _collect_comment},
    )


# ---------------------------------------------------------------- parse


def _stack_items(exc: UnexpectedInput, base: int) -> tuple[StackItem, ...]:
    """The parser's value stack at the error, as plain data for :mod:`mcec.syntax_errors`."""
    interactive = getattr(exc, "interactive_parser", None)
    if interactive is None:
        return ()
    items: list[StackItem] = []
    for value in interactive.parser_state.value_stack:
        if isinstance(value, Token):
            items.append(StackItem(value.type, base + _start(value), base + _end(value)))
        elif hasattr(value, "span"):
            items.append(StackItem(type(value).__name__, value.span.start, value.span.end))
        else:
            items.append(StackItem("?", -1, -1))
    return tuple(items)


def _accepted(exc: UnexpectedToken) -> frozenset[str]:
    """The terminals that could really come next.

    ``exc.expected`` is the LALR state's lookahead set, which merges the follow
    sets of every context sharing the state (after a name it holds `->`, `[`,
    `=>`, …); ``accepts`` tries each one on a copy of the parser (callbacks off).
    """
    try:
        accepted = exc.accepts
    except Exception:  # a probe failing must not hide the real syntax error
        accepted = None
    return frozenset(accepted or exc.expected)


def _diagnose(exc: UnexpectedInput, ctx: _Context, segment: str) -> tuple[Diagnostic, int | None]:
    """Turn a Lark error into a diagnostic; also return the offset to resume after (``None``: stop)."""
    base = ctx.base
    if isinstance(exc, UnexpectedCharacters):
        offset = base + (exc.pos_in_stream or 0)
        return describe_bad_character(ctx.source, offset), offset + 1
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        at_end = token.type == "$END"
        if at_end:
            stripped = len(segment.rstrip())
            start = end = base + stripped
        else:
            start = base + _start(token)
            end = base + _end(token)
        site = ErrorSite(
            found_type=token.type,
            found_text="" if at_end else str(token),
            start=start,
            end=end,
            expected=_accepted(exc),
            stack=_stack_items(exc, base),
        )
        return describe_unexpected(ctx.source, site), (None if at_end else start)
    offset = base + (exc.pos_in_stream or 0)
    return error("MCE001", "syntax error", ctx.source.span(offset, offset)), None


def _parse_segments(ctx: _Context, text: str) -> list[s.Decl]:
    """Parse ``text`` (the file's text, maybe with a BOM blanked); recover and go on after errors."""
    source = ctx.source
    decls: list[s.Decl] = []
    syntax_errors = 0
    base = 0
    while True:
        ctx.base = base
        segment = text[base:]
        try:
            decls = cast(list[s.Decl], _parser().parse(segment))
            break
        except UnexpectedInput as exc:
            diagnostic, resume = _diagnose(exc, ctx, segment)
        except LarkError as exc:  # VisitError and friends: never let Lark escape
            offset = base + int(getattr(exc, "pos_in_stream", 0) or 0)
            diagnostic, resume = error("MCE001", f"syntax error: {exc}", source.span(offset, offset)), None
        ctx.failed = True
        ctx.diagnostics.append(diagnostic)
        syntax_errors += 1
        if resume is None or syntax_errors >= MAX_SYNTAX_ERRORS:
            break
        found = _RESYNC.search(text, max(resume, base + 1))
        if found is None:
            break
        base = found.start()
    return decls


def parse(source: SourceFile) -> ParseResult:
    """Parse one `.mce` file.

    Never raises on any input: every problem becomes a diagnostic. ``module`` is
    ``None`` when a syntax error was found; diagnostics are sorted by position.
    """
    text = source.text
    if text.startswith("\ufeff"):
        # A byte-order mark is allowed at the very start; a space keeps offsets equal.
        text = " " + text[1:]
    ctx = _Context(source)
    # Parsing allocates many small objects that all stay alive; the cyclic GC
    # would rescan them again and again (superlinear on big files), and a syntax
    # tree has no cycles to collect. So it is paused while parsing.
    gc_was_enabled = gc.isenabled()
    with _LOCK:
        _CURRENT.append(ctx)
        gc.disable()
        try:
            decls = _parse_segments(ctx, text)
        finally:
            if gc_was_enabled:
                gc.enable()
            _CURRENT.pop()
    diagnostics = tuple(sorted(dict.fromkeys(ctx.diagnostics), key=Diagnostic.sort_key))
    if ctx.failed:
        return ParseResult(None, diagnostics)
    module = s.Module(source.path, tuple(decls), tuple(ctx.comments), source.span(0, len(source.text)))
    return ParseResult(module, diagnostics)
