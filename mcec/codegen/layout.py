"""Black-formatted text for the emitter's libcst module, without running black
over the whole file.

Black costs about a millisecond per line, and a long pipeline generates tens
of thousands of lines that are already in black's style: the emitter builds
only short statements with single spaces, double-quoted strings (see
:func:`black_string`), no redundant parentheses and no trailing commas. So this
module prints statement by statement, and hands to black only what it would
change: a statement (or a compound statement's header) whose line is too long.
It gives black that piece alone, with the line length reduced by the piece's
indentation, which is how black measures it inside the file.

The result is exactly what ``black.format_str`` would produce for the whole
module; the tests check that on every golden module and on random specs
(``black.format_str(output) == output``).

Kept because a user feels the difference (issue 30, ``python -m benchmarks.layout_bench``,
generation end to end, parse and check included): the research example 0.18 s against
0.69 s with plain black; a 1,000-step spec 3.8 s against 40 s, and 10,000 steps 46 s
against 7 minutes (both on a shared machine at load 8–10), the same text each time.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import black
import libcst as cst
from black.mode import TargetVersion

LINE_LENGTH = 88
_EMPTY = cst.Module(body=[])
_PASS = cst.SimpleStatementLine(body=[cst.Pass()])
#: Most ``def`` header layouts remembered at once (see :func:`_def_header`).
_HEADER_CACHE = 4096


def _mode(line_length: int) -> black.Mode:
    return black.Mode(target_versions={TargetVersion.PY311}, line_length=line_length)


def black_module(code: str) -> str:
    """Run black on a whole module (the reference the fast path must match)."""
    return black.format_str(code, mode=_mode(LINE_LENGTH))


def black_string(text: str) -> str:
    """A string literal for ``text`` in the form black would leave it.

    ``ascii()`` escapes quotes, controls and every non-ASCII character (so no
    spec text can end the literal or hide in it); then the quotes are chosen
    the way black's ``normalize_string_quotes`` does: double quotes unless that
    needs more escaped quotes.
    """
    literal = ascii(text)
    if literal[0] == '"':
        return literal  # repr chose double quotes: the text has ' and no "
    body = literal[1:-1]
    if '"' not in body:
        return f'"{body.replace(chr(92) + chr(39), chr(39))}"'
    # both kinds of quote: keep single quotes when switching needs more escapes
    new_body = body.replace("\\'", "'").replace('"', '\\"')
    if new_body.count("\\\"") > body.count("\\'"):
        return literal
    return f'"{new_body}"'


# ---------------------------------------------------------------- a fast printer
# libcst's own code generation walks every whitespace node and costs about as
# much as black; the emitter uses a small, fixed set of node types, printed here
# directly in the form libcst and black agree on. Anything else falls back to
# libcst, so the printer can never silently print a node wrongly.


def _expr(node: cst.BaseExpression) -> str:
    if isinstance(node, cst.Name | cst.SimpleString | cst.Integer):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_expr(node.value)}.{node.attr.value}"
    if isinstance(node, cst.Call) and not node.lpar:
        return f"{_expr(node.func)}({', '.join(_arg(a) for a in node.args)})"
    if isinstance(node, cst.Subscript) and all(isinstance(e.slice, cst.Index) for e in node.slice):
        items = ", ".join(_expr(e.slice.value) for e in node.slice if isinstance(e.slice, cst.Index))
        return f"{_expr(node.value)}[{items}]"
    if isinstance(node, cst.Tuple):
        elements = [("*" if isinstance(e, cst.StarredElement) else "") + _expr(e.value) for e in node.elements]
        if not node.lpar:  # bare tuple: an assignment's targets or values
            return ", ".join(elements)
        return f"({elements[0]},)" if len(elements) == 1 else f"({', '.join(elements)})"
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return f"{_expr(node.left)} | {_expr(node.right)}"
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        return f"not {_expr(node.expression)}"
    if isinstance(node, cst.BooleanOperation) and not node.lpar:
        operator = "and" if isinstance(node.operator, cst.And) else "or"
        return f"{_expr(node.left)} {operator} {_expr(node.right)}"
    if isinstance(node, cst.Await):
        return f"await {_expr(node.expression)}"
    return _EMPTY.code_for_node(node)


def _arg(arg: cst.Arg) -> str:
    if arg.keyword is not None:
        return f"{arg.keyword.value}={_expr(arg.value)}"
    return _expr(arg.value)


def _small(statement: cst.BaseSmallStatement) -> str:
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        return f"{_expr(statement.targets[0].target)} = {_expr(statement.value)}"
    if isinstance(statement, cst.AnnAssign) and statement.value is not None:
        target, annotation = _expr(statement.target), _expr(statement.annotation.annotation)
        return f"{target}: {annotation} = {_expr(statement.value)}"
    if isinstance(statement, cst.Return) and statement.value is not None:
        return f"return {_expr(statement.value)}"
    if isinstance(statement, cst.Expr):
        return _expr(statement.value)
    return _EMPTY.code_for_node(statement).rstrip("\n")


def _line(statement: cst.SimpleStatementLine) -> str:
    if len(statement.body) == 1:
        return _small(statement.body[0])
    return _EMPTY.code_for_node(statement.with_changes(leading_lines=[])).rstrip("\n")


def _method_chain(statement: cst.SimpleStatementLine, depth: int) -> list[str] | None:
    """A too-long ``x = head.f(…).g(…)…`` or ``return await head.f(…)…`` as black writes it,
    or None when the statement is not of that shape.

    A wide ``par`` builds its group in such statements of a hundred ``.also(…)`` calls, and
    black takes 50 ms over each. Black wraps the value in parentheses and puts each
    ``.call(…)`` on its own line when it has two or more dots after a closing bracket (its
    split points: a dot right after a plain name is not one, so ``name.f(…)`` stays together)
    and the value does not fit on a line of its own, and every line then fits; anything else
    goes to black.
    """
    if len(statement.body) != 1:
        return None
    match statement.body[0]:
        case cst.Assign(targets=[cst.AssignTarget(target=cst.Name(value=target))], value=value):
            opening = f"{target} = ("
        case cst.Return(value=cst.BaseExpression() as value):
            opening = "return ("
        case _:
            return None
    awaited = isinstance(value, cst.Await) and not value.lpar
    if isinstance(value, cst.Await) and awaited:
        value = value.expression
    calls: list[str] = []
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.lpar:
        calls.append(f".{value.func.attr.value}({', '.join(_arg(a) for a in value.args)})")
        value = value.func.value
    calls.reverse()
    match value:
        case cst.Name(lpar=[]) if calls:
            first = value.value + calls.pop(0)  # `name.f(…)`: no split point between them
        case cst.Call(func=cst.Name(), lpar=[]):
            first = _expr(value)
        case _:
            return None
    if len(calls) < 2:
        return None
    first = f"    {'await ' if awaited else ''}{first}"
    joined = first + "".join(calls)
    if len(joined) + 4 * depth <= LINE_LENGTH:  # the value fits on a line of its own: no split
        return [opening, joined, ")"]
    lines = [opening, first, *(f"    {call}" for call in calls), ")"]
    if any(len(line) + 4 * depth > LINE_LENGTH for line in lines):
        return None
    return lines


def _return_call(statement: cst.SimpleStatementLine, depth: int) -> list[str] | None:
    """A too-long ``return [await] f(a, b, …)`` whose arguments are names and literals, as black
    writes it, or None when the statement is not of that shape or its parts do not fit.

    Every pipeline's entry ends in ``return await observed_pipeline(sink, "name", RUN_SITE_n,
    name, state, value)``, too long once the names grow, and black took 0.6 ms over each (a fifth
    of compiling 10,000 pipelines, and its syntax tree to collect). Black splits it after the
    last opening bracket (the value has no delimiter outside brackets, so the optional
    parentheses around it are left out): the arguments on a line of their own when they fit there
    (no trailing comma is added to a call's), else one to a line — that case goes to black.
    """
    if len(statement.body) != 1:
        return None
    match statement.body[0]:
        case cst.Return(value=cst.BaseExpression() as value):
            head = "return "
        case _:
            return None
    if isinstance(value, cst.Await) and not value.lpar:
        head, value = head + "await ", value.expression
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and not value.lpar and value.args):
        return None
    for arg in value.args:
        if arg.keyword is not None or arg.star or not isinstance(arg.value, cst.Name | cst.SimpleString | cst.Integer):
            return None
    head = f"{head}{value.func.value}("
    arguments = "    " + ", ".join(_arg(a) for a in value.args)
    if len(head) + 4 * depth > LINE_LENGTH or len(arguments) + 4 * depth > LINE_LENGTH:
        return None
    return [head, arguments, ")"]


def _exploded_tuple(statement: cst.SimpleStatementLine, depth: int) -> list[str] | None:
    """A too-long ``NAME = (a, b, …)`` as black writes it when its elements do not fit on one
    line: one to a line, each with a comma; or None when the statement is not of that shape, its
    elements would fit on a line of their own, or one of them does not fit on its line (those go
    to black).

    A generated module's ``SPEC_INFO`` is built over such statements of fifty entries each
    (:mod:`mcec.codegen.descriptor`), and black took 30 ms over each: it doubled the time of
    compiling 10,000 pipelines.
    """
    if len(statement.body) != 1:
        return None
    match statement.body[0]:
        case cst.Assign(targets=[cst.AssignTarget(target=cst.Name(value=name))], value=cst.Tuple() as value):
            pass
        case _:
            return None
    if not value.lpar or len(value.elements) < 2 or any(isinstance(e, cst.StarredElement) for e in value.elements):
        return None
    items = [_expr(e.value) for e in value.elements]
    room = LINE_LENGTH - 4 * (depth + 1)
    if len(", ".join(items)) <= room or any(len(item) + 1 > room for item in items):
        return None
    head = f"{name} = ("
    if len(head) + 4 * depth > LINE_LENGTH:
        return None
    return [head, *(f"    {item}," for item in items), ")"]


def _indent(lines: Sequence[str], depth: int) -> list[str]:
    prefix = "    " * depth
    return [prefix + line if line else line for line in lines]


def _fits(text: str, depth: int) -> bool:
    lines = text.splitlines()
    return len(lines) == 1 and len(lines[0]) + 4 * depth <= LINE_LENGTH


def _blacken(text: str, depth: int) -> list[str]:
    """Format one statement as black would at ``depth`` levels of indentation."""
    lines = black.format_str(text, mode=_mode(max(LINE_LENGTH - 4 * depth, 1))).splitlines()
    if not gc.isenabled():
        # Black's syntax tree is cyclic (each node points to its parent), so with the cycle
        # collector paused (generation runs so: mcec.gcpause) every call left ~50 KB behind:
        # 480 MB for the 10,000 pipelines of a 20,000-declaration spec (issue 48). A collection
        # of the youngest generation frees it; it looks only at what was allocated since the
        # last one, so the trees the emitter keeps are each looked at once, not once per call.
        gc.collect(0)
    return lines


def _header_text(statement: cst.BaseCompoundStatement) -> str | None:
    """The one-line header the fast printer can write, or None."""
    if isinstance(statement, cst.If) and statement.orelse is None:
        return f"if {_expr(statement.test)}:"
    if isinstance(statement, cst.With) and len(statement.items) == 1 and statement.items[0].asname is None:
        prefix = "async with" if statement.asynchronous is not None else "with"
        return f"{prefix} {_expr(statement.items[0].item)}:"
    if isinstance(statement, cst.FunctionDef) and not statement.decorators and statement.returns is not None:
        params = statement.params
        if params.posonly_params or params.kwonly_params or params.star_arg is not cst.MaybeSentinel.DEFAULT or params.star_kwarg:
            return None
        if any(p.annotation is None or p.default is not None for p in params.params):
            return None
        listed = ", ".join(f"{p.name.value}: {_expr(p.annotation.annotation)}" for p in params.params)  # type: ignore[union-attr]
        prefix = "async def" if statement.asynchronous is not None else "def"
        return f"{prefix} {statement.name.value}({listed}) -> {_expr(statement.returns.annotation)}:"
    return None


def _header(statement: cst.BaseCompoundStatement, depth: int) -> list[str]:
    """The header line(s) of a compound statement (``def …:``, ``if …:``, …)."""
    fast = _header_text(statement)
    if fast is not None and len(fast) + 4 * depth <= LINE_LENGTH:
        return [fast]
    if isinstance(statement, cst.FunctionDef) and not statement.decorators:
        return _def_header(statement, depth)
    return _long_header(statement, depth)


def _long_header(statement: cst.BaseCompoundStatement, depth: int) -> list[str]:
    """A header as black writes it, however long (black runs only when it is too long)."""
    return list(_layout_header(_EMPTY.code_for_node(_stub(statement)), depth))


def _stub(statement: cst.BaseCompoundStatement) -> cst.BaseCompoundStatement:
    """The statement with its body replaced by ``pass`` (whose line the callers drop)."""
    return statement.with_changes(body=cst.IndentedBlock(body=[_PASS]), leading_lines=[])


def _layout_header(text: str, depth: int) -> tuple[str, ...]:
    """The header lines of ``text`` (a compound statement whose body is ``pass``)."""
    lines = text.splitlines()[:-1]  # drop the `pass`
    if len(lines) == 1 and len(lines[0]) + 4 * depth <= LINE_LENGTH:
        return tuple(lines)
    return tuple(_blacken(text, depth)[:-1])


def _def_header(statement: cst.FunctionDef, depth: int) -> list[str]:
    """A ``def`` header too long for one line, laid out once per shape.

    Black lays out an identifier by its width alone, so helpers whose headers differ only
    in their name (the thousands of branch helpers of a wide ``par``: ``_main_par_1234``
    and its siblings, all with the same signature) share one layout: the header is laid
    out with the name replaced by underscores of the same length, and the name is put back
    where black leaves it, right after ``def`` on the first line.
    """
    name = statement.name.value
    blank = "_" * len(name)
    anonymous = statement.with_changes(name=cst.Name(blank))
    fast = _header_text(anonymous)
    text = f"{fast}\n    pass\n" if fast is not None else _EMPTY.code_for_node(_stub(anonymous))
    lines = _HEADERS.get((text, depth))
    if lines is None:
        if len(_HEADERS) >= _HEADER_CACHE:
            _HEADERS.clear()  # bounded: one long-running process compiles many specs
        lines = _HEADERS[(text, depth)] = _layout_header(text, depth)
    keyword = "async def " if statement.asynchronous is not None else "def "
    assert lines[0].startswith(keyword + blank), lines[0]
    return [keyword + name + lines[0][len(keyword + blank) :], *lines[1:]]


#: Layouts of ``def`` headers by their text (name blanked) and depth; see :func:`_def_header`.
_HEADERS: dict[tuple[str, int], tuple[str, ...]] = {}


def _statements(body: Sequence[cst.BaseStatement], depth: int, out: list[str]) -> None:
    for statement in body:
        for _ in getattr(statement, "leading_lines", ()):
            out.append("")
        if isinstance(statement, cst.SimpleStatementLine):
            text = _line(statement)
            if _fits(text, depth):
                lines = [text]
            else:
                lines = (_method_chain(statement, depth) or _return_call(statement, depth)
                         or _exploded_tuple(statement, depth) or _blacken(text + "\n", depth))
            out.extend(_indent(lines, depth))
        elif isinstance(statement, cst.If):
            _if_chain(statement, depth, out)
        elif isinstance(statement, cst.For):
            head = statement.with_changes(orelse=None)
            out.extend(_indent(_header(head, depth), depth))
            assert isinstance(statement.body, cst.IndentedBlock)
            _statements(statement.body.body, depth + 1, out)
            if statement.orelse is not None:
                _else(statement.orelse, depth, out)
        elif isinstance(statement, cst.FunctionDef | cst.With | cst.ClassDef):
            out.extend(_indent(_header(statement, depth), depth))
            assert isinstance(statement.body, cst.IndentedBlock)
            _statements(statement.body.body, depth + 1, out)
        elif isinstance(statement, cst.Try):
            out.append("    " * depth + "try:")
            assert isinstance(statement.body, cst.IndentedBlock)
            _statements(statement.body.body, depth + 1, out)
            for handler in statement.handlers:
                if handler.type is not None and isinstance(handler.name, cst.AsName) and isinstance(
                    handler.name.name, cst.Name
                ):
                    header = f"except {_expr(handler.type)} as {handler.name.name.value}:"
                else:
                    stub = cst.Try(
                        body=cst.IndentedBlock(body=[_PASS]),
                        handlers=[handler.with_changes(body=cst.IndentedBlock(body=[_PASS]))],
                    )
                    header = _EMPTY.code_for_node(stub).splitlines()[2]
                if len(header) + 4 * depth > LINE_LENGTH:
                    raise AssertionError("generated except clause too long")  # names are short
                out.append("    " * depth + header)
                assert isinstance(handler.body, cst.IndentedBlock)
                _statements(handler.body.body, depth + 1, out)
            if statement.finalbody is not None:
                out.append("    " * depth + "finally:")
                assert isinstance(statement.finalbody.body, cst.IndentedBlock)
                _statements(statement.finalbody.body.body, depth + 1, out)
        else:
            raise AssertionError(f"layout cannot print {type(statement).__name__}")


def _if_chain(statement: cst.If, depth: int, out: list[str]) -> None:
    """``if …:`` / ``elif …:`` … / ``else:``, each header as black writes it."""
    keyword = "if"
    current: cst.If | cst.Else | None = statement
    while isinstance(current, cst.If):
        header = _header(current.with_changes(orelse=None), depth)
        if keyword == "elif":
            header[0] = "elif" + header[0][2:]
        out.extend(_indent(header, depth))
        assert isinstance(current.body, cst.IndentedBlock)
        _statements(current.body.body, depth + 1, out)
        keyword = "elif"
        current = current.orelse
    if current is not None:
        _else(current, depth, out)


def _else(clause: cst.Else, depth: int, out: list[str]) -> None:
    out.append("    " * depth + "else:")
    assert isinstance(clause.body, cst.IndentedBlock)
    _statements(clause.body.body, depth + 1, out)


def layout(module: cst.Module) -> str:
    """The module's text, formatted as black would format it."""
    return "\n".join(layout_lines(module).lines) + "\n"


@dataclass(frozen=True, slots=True)
class Laid:
    """A module laid out: its lines (without line ends), and where each top-level statement starts."""

    lines: list[str]
    #: Index in ``lines`` of the first line (its leading blank lines included) of each statement of
    #: the module's body, in order: what lets the caller compile and map the module statement by
    #: statement instead of parsing it whole (issue 36: 600 MB for 10,000 declarations).
    starts: list[int]

    def chunks(self) -> Iterator[tuple[int, str]]:
        """Each top-level statement's text, with the index of its first line."""
        ends = [*self.starts[1:], len(self.lines)]
        for first, end in zip(self.starts, ends):
            yield first, "\n".join(self.lines[first:end]) + "\n"


def layout_lines(module: cst.Module) -> Laid:
    """The module's lines, formatted as black would format it, with where each statement starts."""
    out: list[str] = []
    for line in module.header:
        out.append(line.comment.value if line.comment is not None else "")
    starts: list[int] = []
    for statement in module.body:
        starts.append(len(out))
        _statements((statement,), 0, out)
    return Laid(out, starts)


def layout_statement(statement: cst.BaseStatement) -> list[str]:
    """The lines of one top-level statement (its leading blank lines first), as black would
    format them in a module: what :func:`layout_lines` prints for each statement of a module's body."""
    out: list[str] = []
    _statements((statement,), 0, out)
    return out
