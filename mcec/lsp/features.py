"""The editor features, each a function of an :class:`~mcec.lsp.analysis.Analysis` and a place.

Nothing here speaks the protocol's transport: the functions take offsets and
return lsprotocol values (or plain data), and :mod:`mcec.lsp.server` wires
them to requests. Names resolve as the checker resolves them — a declaration
of the spec, a name an import binds, a pipeline of a spec this one uses (read
from that spec, §11), a Python object read from its source (never run), an
``llm``'s template file beside the spec — but from the syntax tree, so that
hover, definition and completion keep working while the spec has errors.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import assert_never

from lsprotocol import types as lsp

from mcec.check.llm import templated
from mcec.check.pyindex import PyClass, PythonIndex
from mcec.check.typed import (
    PClass,
    PLiteral,
    Program,
    PWildcard,
    TArm,
    TBind,
    TBudget,
    TCatch,
    TEach,
    TExpr,
    TIdentity,
    TIf,
    TLocal,
    TLoop,
    TMatch,
    TOrElse,
    TPar,
    TPattern,
    TRef,
    TRetry,
    TSpawn,
    TSubAgent,
    TTimeout,
    children,
)
from mcec.diagnostics import CODES, Diagnostic, Severity
from mcec.lsp.analysis import Analysis, Occurrence, Role, decl_kind, decl_name, signature_text
from mcec.lsp.positions import position_of, range_of
from mcec.span import SourceFile, Span
from mcec.syntax import parse
from mcec.syntax import tree as s
from mcec.syntax.grammar import tables

__all__ = [
    "code_actions",
    "completions",
    "definition",
    "document_symbols",
    "hover",
    "keyword_spans",
    "references",
    "references_elsewhere",
    "semantic_tokens",
    "template_completions",
    "to_lsp_diagnostic",
    "SEMANTIC_TOKEN_TYPES",
]


# ---------------------------------------------------------------- diagnostics


def to_lsp_diagnostic(diagnostic: Diagnostic) -> lsp.Diagnostic:
    """A checker diagnostic as the protocol's: same code, span and message; the help on a line of its own,
    as ``mcec check`` prints it; labels as related information."""
    message = diagnostic.message if diagnostic.help is None else f"{diagnostic.message}\nhelp: {diagnostic.help}"
    related = [
        lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uri_of(label.span.path), range=range_of(label.span)), message=label.message
        )
        for label in diagnostic.labels
        if label.span.source.text  # a label into a file we do not have the text of cannot be placed
    ]
    severity = lsp.DiagnosticSeverity.Error if diagnostic.severity is Severity.ERROR else lsp.DiagnosticSeverity.Warning
    return lsp.Diagnostic(
        range=range_of(diagnostic.span),
        message=message,
        severity=severity,
        code=diagnostic.code,
        source="mcec",
        related_information=related or None,
        tags=[lsp.DiagnosticTag.Unnecessary] if diagnostic.code == "W001" else None,
    )


@functools.lru_cache(maxsize=1024)
def uri_of(path: str) -> str:
    """The ``file:`` URI of a path (relative paths are below the working directory); cached, since
    every label of every diagnostic asks, and resolving a path asks the file system."""
    return Path(path).resolve().as_uri()


# ---------------------------------------------------------------- declarations and imports

#: A declaration that introduces a name.
NamedDecl = (
    s.StepDecl | s.FnDecl | s.ServerDecl | s.ToolDecl | s.ModelDecl | s.LlmDecl | s.AskDecl | s.ToolboxDecl | s.PipelineDecl
)


@dataclass(frozen=True, slots=True)
class Imported:
    """A name an import binds: ``module`` and, for ``from module import attr``, ``attr``."""

    module: str
    attr: str | None
    binding: s.Name | s.QualName


def declarations(module: s.Module) -> dict[str, s.Decl]:
    """Name → the declaration introducing it (the first, when declared twice)."""
    found: dict[str, s.Decl] = {}
    for decl in module.decls:
        name = decl_name(decl)
        if name is not None:
            found.setdefault(name.text, decl)
    return found


def imports(module: s.Module) -> dict[str, Imported]:
    """Name → what an import binds it to."""
    found: dict[str, Imported] = {}
    for decl in module.decls:
        match decl:
            case s.FromImport(module=source, names=names):
                for item in names:
                    binding = item.alias or item.name
                    found.setdefault(binding.text, Imported(source.dotted, item.name.text, binding))
            case s.ModuleImport(module=source, alias=alias):
                bound = alias.text if alias is not None else source.parts[0].text
                found.setdefault(bound, Imported(source.dotted if alias is not None else bound, None, alias or source))
            case _:
                pass  # declarations bind names of their own (declarations())
    return found


def python_path(module: s.Module, dotted: str) -> str:
    """The full dotted path a spelling stands for: ``impl.final`` → ``examples.research.impl.final``."""
    head, _, rest = dotted.partition(".")
    bound = imports(module).get(head)
    if bound is None:
        return dotted
    base = bound.module if bound.attr is None else f"{bound.module}.{bound.attr}"
    return f"{base}.{rest}" if rest else base


# ---------------------------------------------------------------- Python and other specs


@dataclass(frozen=True, slots=True)
class Place:
    """A place in a file: 0-based line and column (columns in code points) of its start and end."""

    path: Path
    line: int
    column: int
    end_line: int
    end_column: int

    def location(self) -> lsp.Location:
        """The protocol location (a Python name's line holds ASCII in practice; code points are used)."""
        return lsp.Location(
            uri=self.path.resolve().as_uri(),
            range=lsp.Range(
                start=lsp.Position(line=self.line, character=self.column),
                end=lsp.Position(line=self.end_line, character=self.end_column),
            ),
        )


def module_file(index: PythonIndex, module: str) -> Path | None:
    """The source file of a Python module, looked for along the index's search paths (never imported)."""
    parts = module.split(".")
    for root in index.search_paths:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyi"), base / "__init__.pyi"):
            if candidate.is_file():
                return candidate
    return None


def python_place(index: PythonIndex, dotted: str, depth: int = 0) -> Place | None:
    """Where the Python object at ``dotted`` is defined: a module, or a top-level class, function
    or assignment of one (a ``from … import`` re-export followed to its definition)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        file = module_file(index, ".".join(parts[:cut]))
        if file is None:
            continue
        rest = parts[cut:]
        if not rest:
            return Place(file, 0, 0, 0, 0)
        return _defined_in(index, file, ".".join(parts[:cut]), rest[0], depth)
    return None


def _defined_in(index: PythonIndex, file: Path, module: str, name: str, depth: int) -> Place | None:
    """Where ``name`` is bound at the top of ``file`` (following one import at a time, at most 8)."""
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        match node:
            case ast.ClassDef(name=found) | ast.FunctionDef(name=found) | ast.AsyncFunctionDef(name=found) if found == name:
                column = _keyword_column(node)
                return Place(file, node.lineno - 1, column, node.lineno - 1, column + len(name))
            case ast.Assign(targets=targets) if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return Place(file, node.lineno - 1, node.col_offset, node.lineno - 1, node.col_offset + len(name))
            case ast.AnnAssign(target=ast.Name(id=found)) if found == name:
                return Place(file, node.lineno - 1, node.col_offset, node.lineno - 1, node.col_offset + len(name))
            case ast.ImportFrom(module=source, names=aliases, level=level) if depth < 8:
                for alias in aliases:
                    if (alias.asname or alias.name) == name:
                        origin = _absolute(module, file, source, level)
                        if origin is not None:
                            return python_place(index, f"{origin}.{alias.name}", depth + 1)
            case _:
                continue
    return None


def _keyword_column(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The column of a definition's name (after ``def ``, ``async def `` or ``class ``)."""
    match node:
        case ast.ClassDef():
            return node.col_offset + len("class ")
        case ast.FunctionDef():
            return node.col_offset + len("def ")
        case ast.AsyncFunctionDef():
            return node.col_offset + len("async def ")
        case _:
            assert_never(node)


def _absolute(module: str, file: Path, source: str | None, level: int) -> str | None:
    """The absolute module a ``from … import`` in ``module`` reads (relative imports resolved)."""
    if level == 0:
        return source
    package = module.split(".") if file.name == "__init__.py" else module.split(".")[:-1]
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, *([source] if source else [])]) or None


def used_spec(index: PythonIndex, module: str) -> Path | None:
    """The spec a generated module (``agents.research_mce``) is made from, when there is one."""
    try:
        return index.spec_file(module)
    except Exception:  # a package that cannot be read: not a used spec, for the editor
        return None


def spec_declaration(spec: Path, name: str) -> s.Decl | None:
    """The declaration of ``name`` in the spec at ``spec`` (read from disk, parsed)."""
    try:
        source = SourceFile(str(spec), spec.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    module = parse(source).module
    return None if module is None else declarations(module).get(name)


# ---------------------------------------------------------------- hover


def hover(analysis: Analysis, offset: int, index: PythonIndex) -> str | None:
    """Markdown for the cursor: the diagnostics there (with their help and ``mcec explain`` text),
    then the type of the name or expression under it."""
    parts = [_diagnostic_hover(d) for d in analysis.diagnostics if _covers(d.span, offset, analysis.source)]
    arm = _arm_hover(analysis.program, offset)
    about = _name_hover(analysis, offset, index)
    if about is None and arm is None:
        about = _expression_hover(analysis.program, offset)
    parts.extend(part for part in (arm, about) if part is not None)
    return "\n\n---\n\n".join(parts) if parts else None


def _covers(span: Span, offset: int, source: SourceFile) -> bool:
    return span.source.path == source.path and span.start <= offset <= max(span.end, span.start + 1)


def _diagnostic_hover(diagnostic: Diagnostic) -> str:
    """A diagnostic's message, its help, and what ``mcec explain CODE`` says."""
    from mcec.cli.explain import reference_entries, reference_text  # the reference is read once asked for

    lines = [f"**{diagnostic.code}** ({diagnostic.severity.value}): {diagnostic.message}"]
    if diagnostic.help:
        lines.append(f"help: {diagnostic.help}")
    text = reference_text()
    explained = (reference_entries(text).get(diagnostic.code) if text is not None else None) or CODES[diagnostic.code]
    lines.append(f"`mcec explain {diagnostic.code}`: {explained}")
    return "\n\n".join(lines)


def _code(text: str) -> str:
    return f"```mce\n{text}\n```"


def _name_hover(analysis: Analysis, offset: int, index: PythonIndex) -> str | None:
    """What the name under the cursor is: a declaration's signature (checked, when the spec checks),
    an imported class or used pipeline, a Python path."""
    occurrence = analysis.at(offset)
    module = analysis.module
    if occurrence is None or module is None:
        return None
    match occurrence.role:
        case Role.DECL | Role.REF | Role.IMPORT | Role.TYPE:
            return _about_name(analysis, module, occurrence, index)
        case Role.PYTHON:
            path = python_path(module, occurrence.text)
            place = python_place(index, path)
            where = f"\n\ndefined in `{place.path}` line {place.line + 1}" if place is not None else ""
            return _code(f"(python) {path}") + where
        case Role.TEMPLATE:
            return f"template file `{Path(analysis.source.path).parent / occurrence.text}`"
        case _:
            assert_never(occurrence.role)


def _about_name(analysis: Analysis, module: s.Module, occurrence: Occurrence, index: PythonIndex) -> str | None:
    name = occurrence.text
    decl = declarations(module).get(name)
    if decl is not None:
        return _code(_declared(decl, analysis.program)) + _state_line(analysis.program, module, decl)
    bound = imports(module).get(name)
    if bound is None:
        if occurrence.role is Role.TYPE:
            return _code(f"(type) {name}")
        return None
    if bound.attr is None:
        return _code(f"(module) {bound.module}")
    if analysis.program is not None:
        for used in analysis.program.uses:
            if used.name == name:
                return _code(f"pipeline {name} : {used.sig}") + f"\n\nfrom spec `{used.spec}`"
    spec = used_spec(index, bound.module)
    if spec is not None:
        other = spec_declaration(spec, bound.attr)
        if other is not None:
            return _code(_declared(other, None)) + f"\n\nfrom spec `{spec}`"
    found = index.member(bound.module, bound.attr)
    kind = "class" if isinstance(found, PyClass) else "python"
    path = found.path if isinstance(found, PyClass) else f"{bound.module}.{bound.attr}"
    errors = {t.text for d in module.decls if isinstance(d, s.ErrorDecl) for t in [d.type] if isinstance(t, s.Name)}
    role = " (an error type of this spec)" if name in errors else ""
    return _code(f"({kind}) {name}") + f"\n\n`{path}`{role}"


def _declared(decl: s.Decl, program: Program | None) -> str:
    """``kind name : A -> B ! E``: the checked signature when ``program`` has it (a pipeline's
    inferred errors included), else the one written."""
    name = decl_name(decl)
    text = name.text if name is not None else ""
    kind = decl_kind(decl)
    if isinstance(decl, s.StepDecl) and decl.is_async or isinstance(decl, s.LlmDecl) and decl.stream:
        kind = f"{'async' if isinstance(decl, s.StepDecl) else 'stream'} {kind}"
    checked = _checked_sig(program, text) if program is not None else None
    written = signature_text(decl)
    match decl:
        case s.ServerDecl(command=command):
            return f'server {text} = stdio "{command}"'
        case s.ModelDecl(model_id=model_id):
            return f'model {text} = openai "{model_id}"'
        case _:
            sig = checked or written
            return f"{kind} {text} : {sig}" if sig else f"{kind} {text}"


def _checked_sig(program: Program, name: str) -> str | None:
    """The checked signature of a declaration of ``program``."""
    for table in (program.steps, program.fns, program.tools, program.llms, program.asks, program.pipelines, program.toolboxes):
        for item in table:
            if item.name == name:
                return str(item.sig)
    return None


def _state_line(program: Program | None, module: s.Module, decl: s.Decl) -> str:
    """Which state a declaration sees, and whether it changes it."""
    states = [d for d in module.decls if isinstance(d, s.StateDecl)]
    state = str(program.state) if program is not None and program.state is not None else None
    if state is None and states:
        state = _written(states[0].type)
    if state is None or isinstance(decl, (s.ServerDecl, s.ModelDecl)):
        return ""
    stateful = _stateful(program, decl_name(decl))
    changes = "" if stateful is None else (" (may change it)" if stateful else " (does not change it)")
    return f"\n\nstate: `{state}`{changes}"


def _stateful(program: Program | None, name: s.Name | None) -> bool | None:
    if program is None or name is None:
        return None
    for table in (program.steps, program.fns, program.tools, program.llms, program.asks, program.pipelines):
        for item in table:
            if item.name == name.text:
                return item.sig.stateful
    return None


def _written(node: s.Node) -> str:
    return " ".join(node.span.source.text[node.start : node.end].split())


#: How hover names an expression, by the typed node it is.
def _expression_kind(expr: TExpr) -> str:
    match expr:
        case TRef(name=name):
            return name
        case TBind():
            return ">>= chain"
        case TPar():
            return "par"
        case TEach():
            return "each"
        case TLocal():
            return "local"
        case TCatch():
            return "catch"
        case TOrElse():
            return "orelse"
        case TIdentity(written=written):
            return written or "(identity)"
        case TMatch():
            return "match"
        case TIf():
            return "if"
        case TLoop():
            return "loop"
        case TRetry():
            return "retry"
        case TTimeout():
            return "timeout"
        case TBudget():
            return "budget"
        case TSpawn():
            return "spawn"
        case TSubAgent():
            return "local(state=…)"
        case _:
            assert_never(expr)


def _expression_hover(program: Program | None, offset: int) -> str | None:
    """The type of the innermost checked expression around ``offset``."""
    if program is None:
        return None
    for pipeline in program.pipelines:
        if pipeline.span.start <= offset <= pipeline.span.end:
            found = _innermost(pipeline.body, offset)
            if found is not None:
                stateful = " (may change the state)" if found.sig.stateful else ""
                return _code(f"{_expression_kind(found)} : {found.sig}") + stateful
    return None


def _arm_hover(program: Program | None, offset: int) -> str | None:
    """For a cursor on a ``match`` arm's pattern: the type the arm receives (the match's input
    narrowed by the pattern, less what earlier arms took) and what its body gives."""
    if program is None:
        return None
    for pipeline in program.pipelines:
        if pipeline.span.start <= offset <= pipeline.span.end:
            arm = _arm_pattern_at(pipeline.body, offset)
            if arm is not None:
                return _code(f"{_pattern_text(arm.pattern)} => {arm.narrowed} -> {arm.body.sig.output}") + (
                    f"\n\nthis arm receives `{arm.narrowed}`"
                )
    return None


def _arm_pattern_at(expr: TExpr, offset: int) -> TArm | None:
    """The ``match`` arm whose pattern (the text before its body) holds ``offset``."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if not node.span.start <= offset <= node.span.end:
            continue
        if isinstance(node, TMatch):
            for arm in node.arms:
                if arm.span.start <= offset < arm.body.span.start:
                    return arm
        stack.extend(children(node))
    return None


def _pattern_text(pattern: TPattern) -> str:
    match pattern:
        case PClass(type=type_):
            return str(type_)
        case PLiteral(value=value):
            return repr(value) if isinstance(value, str) else str(value)
        case PWildcard():
            return "_"
        case _:
            assert_never(pattern)


def _innermost(expr: TExpr, offset: int) -> TExpr | None:
    """The innermost expression whose span holds ``offset`` (iterative: chains are wide)."""
    best: TExpr | None = None
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.span.start <= offset <= node.span.end:
            if best is None or node.span.end - node.span.start <= best.span.end - best.span.start:
                best = node
            stack.extend(children(node))
    return best


# ---------------------------------------------------------------- definition and references


def definition(analysis: Analysis, offset: int, index: PythonIndex) -> list[lsp.Location]:
    """Where the name under the cursor is defined: a declaration of this spec or of a spec it uses,
    a Python object at its definition, a template file."""
    occurrence = analysis.at(offset)
    module = analysis.module
    if occurrence is None or module is None:
        return []
    match occurrence.role:
        case Role.TEMPLATE:
            path = Path(analysis.source.path).parent / occurrence.text
            return [Place(path, 0, 0, 0, 0).location()] if path.is_file() else []
        case Role.PYTHON:
            place = python_place(index, python_path(module, occurrence.text))
            return [place.location()] if place is not None else []
        case Role.DECL | Role.REF | Role.TYPE | Role.IMPORT:
            return _name_definition(module, occurrence, index)
        case _:
            assert_never(occurrence.role)


def _name_definition(module: s.Module, occurrence: Occurrence, index: PythonIndex) -> list[lsp.Location]:
    decl = declarations(module).get(occurrence.text)
    if decl is not None:
        name = decl_name(decl)
        assert name is not None  # declarations() holds named ones only
        return [lsp.Location(uri=uri_of(name.span.path), range=range_of(name.span))]
    bound = imports(module).get(occurrence.text)
    if bound is None:
        return []
    if bound.attr is None:
        place = python_place(index, bound.module)
        return [place.location()] if place is not None else []
    spec = used_spec(index, bound.module)
    if spec is not None:
        other = spec_declaration(spec, bound.attr)
        other_name = decl_name(other) if other is not None else None
        if other_name is not None:
            return [lsp.Location(uri=spec.resolve().as_uri(), range=range_of(other_name.span))]
    place = python_place(index, f"{bound.module}.{bound.attr}")
    return [place.location()] if place is not None else []


def references(analysis: Analysis, offset: int, include_declaration: bool) -> list[lsp.Location]:
    """Every place of this spec the name under the cursor is written."""
    occurrence = analysis.at(offset)
    if occurrence is None or occurrence.role in (Role.PYTHON, Role.TEMPLATE):
        return []
    wanted = occurrence.text
    found = []
    for other in analysis.names:
        if other.text != wanted or other.role in (Role.PYTHON, Role.TEMPLATE):
            continue
        if other.role in (Role.DECL, Role.IMPORT) and not include_declaration:
            continue
        found.append(lsp.Location(uri=uri_of(other.span.path), range=range_of(other.span)))
    return found


def references_elsewhere(
    analysis: Analysis, offset: int, others: Iterable[Analysis], index: PythonIndex, include_declaration: bool
) -> list[lsp.Location]:
    """The uses, in other open specs, of the pipeline under the cursor: a pipeline of this spec that
    they import, or one this spec imports from another spec (then its declaration there too)."""
    occurrence = analysis.at(offset)
    module = analysis.module
    if occurrence is None or module is None or occurrence.role in (Role.PYTHON, Role.TEMPLATE):
        return []
    name, spec = occurrence.text, Path(analysis.source.path).resolve()
    found: list[lsp.Location] = []
    bound = imports(module).get(name)
    if bound is not None and bound.attr is not None:  # imported here: the pipeline lives in another spec
        other = used_spec(index, bound.module)
        if other is None:
            return []
        name, spec = bound.attr, other.resolve()
        if include_declaration:
            found.extend(_name_definition(module, occurrence, index))
    elif not isinstance(declarations(module).get(name), s.PipelineDecl):
        return []
    for user in others:
        if user.module is None or Path(user.source.path).resolve() == Path(analysis.source.path).resolve():
            continue
        for local, imported in imports(user.module).items():
            if imported.attr != name:
                continue
            used = used_spec(index, imported.module)
            if used is None or used.resolve() != spec:
                continue
            found.extend(
                lsp.Location(uri=uri_of(o.span.path), range=range_of(o.span))
                for o in user.names
                if o.text == local and o.role in (Role.REF, Role.IMPORT)
            )
    return found


# ---------------------------------------------------------------- completion

_GRAMMAR = tables()
#: The words that start a declaration (and ``async`` before ``step``, ``stream`` before ``llm``).
DECLARATION_WORDS = (*_GRAMMAR.declaration_words, "async", "stream")
#: The words an expression may start with or contain: reserved (``par``) and soft (``retry``) keywords.
EXPRESSION_WORDS = tuple(
    sorted(
        {"par", "each", "local", "catch", "orelse"}
        | {word for word in _GRAMMAR.spelling.values() if word in ("match", "if", "then", "else", "loop", "retry", "timeout", "budget", "spawn")}
    )
)
#: The types every spec may name without importing them.
BUILTIN_TYPES = ("str", "int", "float", "bool", "bytes", "None", "list", "dict", "tuple", "set", "Literal", "Never")
_SIGNATURE_START = re.compile(r"^\s*(?:async\s+|stream\s+)?(?:step|fn|tool|llm|toolbox|pipeline)\s+\w+\s*:")
_AFTER_BIND = re.compile(r"(\w+)\s*>>=\s*\w*$")
_TEMPLATE_OPEN = re.compile(r"\{\{[^}]*$|\{%[^%]*$")


def completions(analysis: Analysis, offset: int, index: PythonIndex, tree: s.Module | None) -> list[lsp.CompletionItem]:
    """What may be written at ``offset``; ``tree`` is the latest tree that parsed (the text being
    typed seldom parses)."""
    text = analysis.source.text
    line_start = text.rfind("\n", 0, offset) + 1
    before = text[line_start:offset]
    module = analysis.module or tree
    if module is None:
        return _keywords(DECLARATION_WORDS) if re.fullmatch(r"\w*", before) else []
    if _TEMPLATE_OPEN.search(before) and _TEMPLATED_HEAD.match(text, line_start) or _in_template(module, offset):
        return _template_variables(module, text, offset, index)
    if re.fullmatch(r"\w*", before):
        return _keywords(DECLARATION_WORDS)
    if _SIGNATURE_START.match(before) and "=" not in before.split(":", 1)[1]:
        return _types(module)
    if re.search(r"spawn\s*\(\s*\w*$", before):
        return _named(module, ("toolbox",), None)
    previous = _AFTER_BIND.search(text[max(0, offset - 400) : offset])
    fits = _output_of(module, previous.group(1)) if previous is not None else None
    return [*_named(module, ("step", "fn", "tool", "llm", "pipeline"), fits), *_used(module), *_keywords(EXPRESSION_WORDS)]


def _keywords(words: tuple[str, ...]) -> list[lsp.CompletionItem]:
    return [lsp.CompletionItem(label=w, kind=lsp.CompletionItemKind.Keyword, sort_text=f"9{w}") for w in words]


def _types(module: s.Module) -> list[lsp.CompletionItem]:
    """Types: the imported names, the declared error types, the built-in ones."""
    items = [
        lsp.CompletionItem(label=name, kind=lsp.CompletionItemKind.Class, detail=f"from {bound.module}")
        for name, bound in imports(module).items()
        if bound.attr is not None
    ]
    items.extend(lsp.CompletionItem(label=t, kind=lsp.CompletionItemKind.TypeParameter, sort_text=f"8{t}") for t in BUILTIN_TYPES)
    return items


_KINDS: dict[str, lsp.CompletionItemKind] = {
    "step": lsp.CompletionItemKind.Function,
    "fn": lsp.CompletionItemKind.Function,
    "tool": lsp.CompletionItemKind.Method,
    "llm": lsp.CompletionItemKind.Function,
    "pipeline": lsp.CompletionItemKind.Module,
    "toolbox": lsp.CompletionItemKind.Struct,
}


def _named(module: s.Module, kinds: tuple[str, ...], fits: str | None) -> list[lsp.CompletionItem]:
    """The declarations of ``kinds``, with their signatures; those whose input is ``fits`` (the
    output of the step before the cursor) first."""
    items = []
    for name, decl in declarations(module).items():
        kind = decl_kind(decl)
        if kind not in kinds:
            continue
        sig = signature_text(decl) or ""
        input_type = sig.split("->", 1)[0].strip()
        fitting = fits is not None and input_type == fits
        items.append(
            lsp.CompletionItem(
                label=name,
                kind=_KINDS.get(kind, lsp.CompletionItemKind.Function),
                detail=f"{kind} : {sig}",
                sort_text=f"{'0' if fitting else '1'}{name}",
                preselect=fitting or None,
                label_details=lsp.CompletionItemLabelDetails(description=f"takes {fits}" if fitting else None),
            )
        )
    return items


def _used(module: s.Module) -> list[lsp.CompletionItem]:
    """Names imported from other specs' generated modules (their pipelines)."""
    return [
        lsp.CompletionItem(label=name, kind=lsp.CompletionItemKind.Module, detail=f"pipeline of {bound.module}", sort_text=f"2{name}")
        for name, bound in imports(module).items()
        if bound.attr is not None and bound.module.endswith("_mce")
    ]


def _output_of(module: s.Module, name: str) -> str | None:
    """The output type of a declaration, as written."""
    decl = declarations(module).get(name)
    sig = signature_text(decl) if decl is not None else None
    if sig is None or "->" not in sig:
        return None
    return sig.split("->", 1)[1].split("!", 1)[0].strip()


def _in_template(module: s.Module, offset: int) -> bool:
    """True inside an inline template of an ``llm`` or an ``ask`` (:func:`mcec.check.llm.templated`),
    the cursor after an open ``{{``."""
    for decl in module.decls:
        found = templated(decl)
        if found is None or found.template.is_file or not found.template.start < offset < found.template.end:
            continue
        opened = decl.span.source.text[found.template.start : offset]
        return bool(_TEMPLATE_OPEN.search(opened))
    return False


#: The head of a declaration whose template is read as an ``llm``'s (:func:`mcec.check.llm.templated`):
#: ``[stream] llm n : A ->`` (``stream``: docs/language.md §14) or ``ask n : A ->`` (§15); the name
#: and the input type are its groups.
_TEMPLATED_HEAD = re.compile(r"^[ \t]*(?:(?:stream[ \t]+)?llm|ask)\s+(\w+)\s*:\s*([\w.]+)\s*->", re.MULTILINE)


def _template_variables(module: s.Module, text: str, offset: int, index: PythonIndex) -> list[lsp.CompletionItem]:
    """The variables the template being written at ``offset`` sees, from the head of its ``llm``
    or ``ask``, the last before ``offset`` (read from the text: while a template is typed the spec
    seldom parses)."""
    heads = [head for head in _TEMPLATED_HEAD.finditer(text, 0, offset)]
    if not heads:
        return []
    return template_variables(module, heads[-1].group(1), heads[-1].group(2), index)


def template_variables(module: s.Module, llm: str, input_type: str, index: PythonIndex) -> list[lsp.CompletionItem]:
    """The variables the template of ``llm`` (an llm or an ask) may read: the fields of its input
    type when it is a record (a pydantic model, a dataclass), else ``value``; and ``state`` when
    there is one."""
    names = ["value"]
    path = python_path(module, input_type)
    owner, _, attr = path.rpartition(".")
    found = index.member(owner, attr) if owner else None
    if isinstance(found, PyClass):
        members = index.members(found.path)
        if not isinstance(members, str) and members.record:
            names = sorted(members.fields)
    if any(isinstance(d, s.StateDecl) for d in module.decls):
        names.append("state")
    return [
        lsp.CompletionItem(label=n, kind=lsp.CompletionItemKind.Variable, detail=f"template variable of {llm}")
        for n in names
    ]


def template_completions(
    text: str, offset: int, template: Path, specs: Iterable[s.Module], index: PythonIndex
) -> list[lsp.CompletionItem]:
    """Completion inside a template file (``file "decide.j2"``): after an open ``{{`` or ``{%``, the
    variables of the ``llm`` or ``ask`` whose template it is, found among ``specs`` (the open
    specs' trees, then the specs beside the template)."""
    if not _TEMPLATE_OPEN.search(text[max(0, offset - 200) : offset]):
        return []
    wanted = template.resolve()
    for module in [*specs, *_specs_beside(template)]:
        for decl in module.decls:
            found = templated(decl)
            if found is None or not found.template.is_file:
                continue
            if (Path(module.path).parent / found.template.text).resolve() != wanted:
                continue
            return template_variables(module, found.name.text, _written(found.input), index)
    return []


def _specs_beside(template: Path) -> Iterator[s.Module]:
    """The specs in the template's folder, parsed (those that parse)."""
    for path in sorted(template.parent.glob("*.mce")):
        try:
            module = parse(SourceFile(str(path), path.read_text(encoding="utf-8"))).module
        except (OSError, UnicodeDecodeError):
            continue
        if module is not None:
            yield module


# ---------------------------------------------------------------- code actions

_DID_YOU_MEAN = re.compile(r"did you mean (?:one of )?(.*)\?")
_ADD_ERRORS = re.compile(r"add it to the pipeline's errors: `(! [^`]+)`")
_ADD_ARM = re.compile(r"add an arm for (.+?), or end with")


def code_actions(analysis: Analysis, start: int, end: int, uri: str) -> list[lsp.CodeAction]:
    """The fixes the diagnostics over ``[start, end]`` know: the close-match name for a typo, the
    missing error added to ``!``, the missing ``match`` arms."""
    actions: list[lsp.CodeAction] = []
    for diagnostic in analysis.diagnostics:
        span = diagnostic.span
        if span.source.path != analysis.source.path or span.end < start or span.start > end:
            continue
        for title, edits in _fixes(analysis, diagnostic):
            actions.append(
                lsp.CodeAction(
                    title=title,
                    kind=lsp.CodeActionKind.QuickFix,
                    diagnostics=[to_lsp_diagnostic(diagnostic)],
                    edit=lsp.WorkspaceEdit(changes={uri: edits}),
                    is_preferred=len(actions) == 0 or None,
                )
            )
    return actions


def _fixes(analysis: Analysis, diagnostic: Diagnostic) -> Iterator[tuple[str, list[lsp.TextEdit]]]:
    """Each fix one diagnostic's help names, as (title, edits)."""
    help = diagnostic.help or ""
    typo = _DID_YOU_MEAN.search(help)
    if typo is not None:
        for candidate in re.findall(r"`([^`]+)`", typo.group(1)):
            yield f"change to `{candidate}`", [lsp.TextEdit(range=range_of(diagnostic.span), new_text=candidate)]
    added = _ADD_ERRORS.search(help)
    declared = next((label for label in diagnostic.labels if label.message.startswith("declares ")), None)
    if added is not None and declared is not None and diagnostic.code == "MCE013":
        yield f"declare it: `{added.group(1)}`", [lsp.TextEdit(range=range_of(declared.span), new_text=added.group(1))]
    arm = _ADD_ARM.search(help)
    if arm is not None and diagnostic.code == "MCE021" and analysis.module is not None:
        edit = _missing_arms(analysis.module, diagnostic.span, arm.group(1))
        if edit is not None:
            yield f"add the missing arms for {arm.group(1)}", [edit]


def _missing_arms(module: s.Module, keyword: Span, uncovered: str) -> lsp.TextEdit | None:
    """An edit adding one arm per uncovered member before the ``}`` of the match at ``keyword``;
    each arm's body is a declaration taking that member when there is one, else ``todo``."""
    match_node = _match_at(module, keyword)
    if match_node is None:
        return None
    text = keyword.source.text
    close = match_node.end - 1
    last = match_node.arms[-1].end if match_node.arms else text.index("{", match_node.keyword.end) + 1
    between = text[last:close]
    takers = {
        (signature_text(d) or "").split("->", 1)[0].strip(): name
        for name, d in declarations(module).items()
        if decl_kind(d) in ("step", "fn", "tool", "llm", "pipeline")
    }
    arms = [f"{m} => {takers.get(m, 'todo')}" for m in (m.strip() for m in uncovered.split("|"))]
    comma = between.find(",")
    if comma >= 0 or not match_node.arms:  # after the trailing comma (or the `{` of an empty match)
        at = last + comma + 1 if comma >= 0 else last
        new_text = "".join(f" {a}," for a in arms)
    else:
        at = last
        new_text = "".join(f", {a}" for a in arms)
    return lsp.TextEdit(range=range_of(Span(keyword.source, at, at)), new_text=new_text)


def _match_at(module: s.Module, keyword: Span) -> s.Match | None:
    """The ``match`` whose keyword is at ``keyword``."""
    for decl in module.decls:
        if isinstance(decl, s.PipelineDecl) and decl.start <= keyword.start <= decl.end:
            roots = [st.expr for st in decl.body.statements] if isinstance(decl.body, s.Block) else [decl.body]
            stack: list[s.Expr] = list(roots)
            while stack:
                node = stack.pop()
                if isinstance(node, s.Match) and node.keyword.start == keyword.start:
                    return node
                stack.extend(s.expr_children(node))
    return None


# ---------------------------------------------------------------- symbols and tokens

_SYMBOL_KINDS: dict[str, lsp.SymbolKind] = {
    "from": lsp.SymbolKind.Namespace,
    "import": lsp.SymbolKind.Namespace,
    "state": lsp.SymbolKind.Struct,
    "error": lsp.SymbolKind.Class,
    "step": lsp.SymbolKind.Function,
    "fn": lsp.SymbolKind.Function,
    "server": lsp.SymbolKind.Object,
    "tool": lsp.SymbolKind.Method,
    "model": lsp.SymbolKind.Object,
    "llm": lsp.SymbolKind.Function,
    "toolbox": lsp.SymbolKind.Struct,
    "pipeline": lsp.SymbolKind.Module,
}


def document_symbols(analysis: Analysis) -> list[lsp.DocumentSymbol]:
    """One symbol per declaration that names something (and for ``state`` and each ``error``)."""
    if analysis.module is None:
        return []
    symbols = []
    for decl in analysis.module.decls:
        kind = decl_kind(decl)
        name = decl_name(decl)
        if name is None and not isinstance(decl, (s.StateDecl, s.ErrorDecl)):
            continue
        label = name.text if name is not None else f"{kind} {_written(decl.type)}"  # type: ignore[union-attr]
        selection = name.span if name is not None else decl.span
        symbols.append(
            lsp.DocumentSymbol(
                name=label,
                detail=signature_text(decl) or kind,
                kind=_SYMBOL_KINDS[kind],
                range=range_of(decl.span),
                selection_range=range_of(selection),
            )
        )
    return symbols


#: The semantic token types the server reports, in the legend's order.
SEMANTIC_TOKEN_TYPES = ["keyword", "function", "type", "namespace", "variable", "string", "comment", "enumMember"]
_TOKEN_OF_ROLE = {
    Role.DECL: 1,
    Role.REF: 1,
    Role.TYPE: 2,
    Role.PYTHON: 3,
    Role.IMPORT: 2,
    Role.TEMPLATE: 5,
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def semantic_tokens(analysis: Analysis) -> list[int]:
    """The protocol's relative encoding of every name, keyword and comment of the spec."""
    module = analysis.module
    if module is None:
        return []
    source = analysis.source
    tokens: list[tuple[int, int, int]] = [(o.span.start, o.span.end, _TOKEN_OF_ROLE[o.role]) for o in analysis.names]
    tokens.extend((c.start, c.end, 6) for c in module.comments)
    tokens.extend((start, end, 0) for start, end in keyword_spans(module))
    tokens.sort()
    data: list[int] = []
    previous_line, previous_column, last_end = 0, 0, -1
    for start, end, kind in tokens:
        if start < last_end:
            continue  # overlapping: the first (outermost) wins
        first = position_of(source, start)
        stop = position_of(source, end)
        if stop.line != first.line:
            continue  # the protocol's tokens are one line each (a multi-line template is left to the grammar)
        delta_line = first.line - previous_line
        delta_column = first.character - (previous_column if delta_line == 0 else 0)
        data.extend((delta_line, delta_column, stop.character - first.character, kind, 0))
        previous_line, previous_column, last_end = first.line, first.character, end
    return data


def keyword_spans(module: s.Module) -> Iterator[tuple[int, int]]:
    """The spans of the keywords the tree keeps: each declaration's first word(s), each keyword expression's."""
    text = module.span.source.text
    for decl in module.decls:
        for word in _WORD.finditer(text, decl.start, min(decl.end, decl.start + 20)):
            if word.group() not in DECLARATION_WORDS:
                break
            yield word.start(), word.end()
            if word.group() not in ("async", "stream"):
                break  # one word starts a declaration (`step ask …`: the second is its name)
        if isinstance(decl, s.PipelineDecl):
            roots = [st.expr for st in decl.body.statements] if isinstance(decl.body, s.Block) else [decl.body]
            stack: list[s.Expr] = list(roots)
            while stack:
                node = stack.pop()
                if isinstance(node, s.KeywordNode):
                    yield node.keyword.start, node.keyword.end
                stack.extend(s.expr_children(node))
