"""One open spec, analysed: parsed (incrementally), checked, and its names listed.

:func:`analyse` is what the server runs after every (debounced) edit. It parses
with :func:`mcec.syntax.incremental.reparse` from the previous tree, then
checks with :func:`mcec.check.check` as ``mcec check --fast`` does
(:func:`mcec.compiler.check_source`), so the diagnostics are the command's:
same codes, spans and help.

:func:`occurrences` lists every name the syntax tree holds, with its role (a
declaration, a use of one, a type, a Python path); hover, definition,
references and semantic tokens are all questions about that list.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import assert_never

from mcec.check.pyindex import PythonIndex
from mcec.check.uses import Specs
from mcec.check.typed import Program
from mcec.diagnostics import Diagnostic
from mcec.gcpause import without_cycle_collection
from mcec.span import SourceFile, Span
from mcec.syntax import parse
from mcec.syntax import tree as s
from mcec.syntax.incremental import reparse
from mcec.lsp.incremental import Reuse, full_check, recheck

__all__ = ["Analysis", "Occurrence", "Role", "analyse", "decl_kind", "decl_name", "occurrences", "signature_text"]


class Role(enum.Enum):
    """What a name in a spec is."""

    #: The name a declaration introduces (``plan_action`` in ``step plan_action : …``).
    DECL = "decl"
    #: A use of a declared or imported name in an expression, a toolbox, a tool's server, an llm's model.
    REF = "ref"
    #: A type written as a name (``str``, ``ToolCall``, an error type).
    TYPE = "type"
    #: A dotted Python path (``impl.plan_action``, ``impl.ToolCall``).
    PYTHON = "python"
    #: A name an import binds (``ToolCall`` in ``from m import ToolCall``).
    IMPORT = "import"
    #: The path of an ``llm``'s ``file "…"`` template.
    TEMPLATE = "template"


@dataclass(frozen=True, slots=True)
class Occurrence:
    """A name at a place: its text (dotted for a Python path, the path for a template) and role."""

    text: str
    span: Span
    role: Role


@dataclass(slots=True)
class Analysis:
    """What the server knows about one version of one spec."""

    source: SourceFile
    #: The syntax tree; None when the text does not parse.
    module: s.Module | None
    #: Every diagnostic of ``mcec check --fast``, in source order.
    diagnostics: tuple[Diagnostic, ...]
    #: The checked program; None while any error remains (or when ``partial``).
    program: Program | None
    #: True when the checker ran (the text parsed): ``diagnostics`` are then all of ``mcec check --fast``'s.
    checked: bool = False
    #: True when only the pipelines an edit affected were checked again (:mod:`mcec.lsp.incremental`):
    #: the diagnostics are complete, the program was not built.
    partial: bool = False
    #: What the next re-check reuses: how this check signed the declarations, and the names each
    #: pipeline refers to (:class:`mcec.lsp.incremental.Reuse`); None when the text was not checked.
    reuse: Reuse | None = field(default=None, repr=False)
    #: The names of ``module``, in source order (made on first use).
    _occurrences: list[Occurrence] | None = field(default=None, repr=False)

    @property
    def names(self) -> list[Occurrence]:
        """Every name of the tree, in source order."""
        if self._occurrences is None:
            self._occurrences = occurrences(self.module) if self.module is not None else []
        return self._occurrences

    def at(self, offset: int) -> Occurrence | None:
        """The name under ``offset`` (a cursor just after a name counts as on it)."""
        for occurrence in self.names:
            if occurrence.span.start <= offset <= occurrence.span.end:
                return occurrence
        return None


def analyse(
    source: SourceFile,
    previous: s.Module | None,
    index: PythonIndex,
    last: Analysis | None = None,
    overlay: Mapping[str, str] | None = None,
) -> Analysis:
    """Parse ``source`` (reusing ``previous``, the tree of an earlier version) and check it.

    With ``last``, the analysis of the previous version, an edit inside pipelines checks only
    the pipelines it can change (:func:`mcec.lsp.incremental.recheck`); the diagnostics are
    the same as a cold check's. ``overlay`` holds texts to read in place of the files of the
    specs it uses, by real path (the unsaved specs open in the editor).
    """
    with without_cycle_collection():  # as mcec.compiler does: the trees hold no cycles
        parsed = reparse(previous, source) if previous is not None else parse(source)
        diagnostics = list(parsed.diagnostics)
        if parsed.module is None or any(d.is_error for d in diagnostics):
            return Analysis(source, parsed.module, tuple(diagnostics), None)
        if last is not None and last.checked and last.module is not None and last.module is previous and not diagnostics:
            # the previous signing is replayed only here: recheck holds every declaration but
            # the pipelines to the previous text, so what the signing read is the same
            reused = recheck(last.module, last.diagnostics, parsed.module, source, index, last.reuse, Specs(index, overlay))
            if reused is not None:
                found, kept = reused
                return Analysis(source, parsed.module, found, None, checked=True, partial=True, reuse=kept)
        checked, kept = full_check(parsed.module, source, index, Specs(index, overlay))
        diagnostics.extend(checked.diagnostics)
        return Analysis(source, parsed.module, tuple(diagnostics), checked.program, checked=True, reuse=kept)


# ---------------------------------------------------------------- declarations

#: The declarations that introduce a name.
Named = (
    s.StepDecl | s.FnDecl | s.ServerDecl | s.ToolDecl | s.ModelDecl | s.LlmDecl | s.AskDecl | s.ToolboxDecl | s.PipelineDecl
)


def decl_name(decl: s.Decl) -> s.Name | None:
    """The name a declaration introduces (None for imports, ``state`` and ``error``)."""
    match decl:
        case s.FromImport() | s.ModuleImport() | s.StateDecl() | s.ErrorDecl() | s.RenameDecl():
            return None
        case (
            s.StepDecl()
            | s.FnDecl()
            | s.ServerDecl()
            | s.ToolDecl()
            | s.ModelDecl()
            | s.LlmDecl()
            | s.AskDecl()
            | s.ToolboxDecl()
            | s.PipelineDecl()
        ):
            return decl.name
        case _:
            assert_never(decl)


def decl_kind(decl: s.Decl) -> str:
    """The keyword a declaration starts with (``async step`` is a step)."""
    match decl:
        case s.FromImport():
            return "from"
        case s.ModuleImport():
            return "import"
        case s.StateDecl():
            return "state"
        case s.ErrorDecl():
            return "error"
        case s.StepDecl():
            return "step"
        case s.FnDecl():
            return "fn"
        case s.ServerDecl():
            return "server"
        case s.ToolDecl():
            return "tool"
        case s.ModelDecl():
            return "model"
        case s.LlmDecl():
            return "llm"
        case s.AskDecl():
            return "ask"
        case s.ToolboxDecl():
            return "toolbox"
        case s.RenameDecl():
            return "rename"
        case s.PipelineDecl():
            return "pipeline"
        case _:
            assert_never(decl)


def signature_text(decl: s.Decl) -> str | None:
    """``A -> B ! E`` as written, for a declaration with a signature (None for the others)."""
    match decl:
        case s.StepDecl() | s.ToolDecl() | s.ToolboxDecl() | s.PipelineDecl():
            end = decl.errors.end if decl.errors is not None else decl.output.end
            return _squeeze(decl.span.source.text[decl.input.start : end])
        case s.FnDecl() | s.LlmDecl() | s.AskDecl():
            return _squeeze(decl.span.source.text[decl.input.start : decl.output.end])
        case (s.FromImport() | s.ModuleImport() | s.StateDecl() | s.ErrorDecl() | s.ServerDecl() | s.ModelDecl()
              | s.RenameDecl()):
            return None
        case _:
            assert_never(decl)


def _squeeze(text: str) -> str:
    """Text on one line, runs of white space as one space (a signature written over several lines)."""
    return " ".join(text.split())


# ---------------------------------------------------------------- names


def occurrences(module: s.Module) -> list[Occurrence]:
    """Every name of ``module``, in source order."""
    found: list[Occurrence] = []
    for decl in module.decls:
        found.extend(_decl_names(decl))
    found.sort(key=lambda o: (o.span.start, o.span.end))
    return found


def _name(name: s.Name, role: Role) -> Occurrence:
    return Occurrence(name.text, name.span, role)


def _decl_names(decl: s.Decl) -> list[Occurrence]:
    """The names of one declaration."""
    match decl:
        case s.FromImport(module=module, names=names):
            return [_python(module), *[_name(n.alias or n.name, Role.IMPORT) for n in names]]
        case s.ModuleImport(module=module, alias=alias):
            return [_python(module)] + ([_name(alias, Role.IMPORT)] if alias is not None else [])
        case s.StateDecl(type=type_, merge=merge):
            return _type_names(type_) + ([_python(merge)] if merge is not None else [])
        case s.ErrorDecl(type=type_):
            return _type_names(type_)
        case s.StepDecl() | s.FnDecl():
            return [_name(decl.name, Role.DECL), *_signature_names(decl), _python(decl.impl)]
        case s.ServerDecl(name=name):
            return [_name(name, Role.DECL)]
        case s.ToolDecl(name=name, server=server):
            return [_name(name, Role.DECL), *_signature_names(decl), _name(server, Role.REF)]
        case s.ModelDecl(name=name):
            return [_name(name, Role.DECL)]
        case s.LlmDecl(name=name, model=model, template=template):
            found = [_name(name, Role.DECL), *_signature_names(decl), _name(model, Role.REF)]
            if template.is_file:
                found.append(Occurrence(template.text, template.span, Role.TEMPLATE))
            return found
        case s.AskDecl(name=name, template=template):
            found = [_name(name, Role.DECL), *_signature_names(decl)]
            if template is not None and template.is_file:
                found.append(Occurrence(template.text, template.span, Role.TEMPLATE))
            return found
        case s.ToolboxDecl(name=name, entries=entries):
            return [_name(name, Role.DECL), *_signature_names(decl), *[_name(e, Role.REF) for e in entries]]
        case s.PipelineDecl(name=name, body=body):
            found = [_name(name, Role.DECL), *_signature_names(decl)]
            match body:
                case s.Block(statements=statements):
                    for statement in statements:
                        found.extend(_expr_names(statement.expr))
                case _:
                    found.extend(_expr_names(body))
            return found
        case s.RenameDecl(new=new):  # the old name is another version's: nothing here to go to
            return [_name(new, Role.REF)]
        case _:
            assert_never(decl)


def _signature_names(
    decl: s.StepDecl | s.FnDecl | s.ToolDecl | s.LlmDecl | s.AskDecl | s.ToolboxDecl | s.PipelineDecl,
) -> list[Occurrence]:
    """The type names of ``A -> B ! E``."""
    names = _type_names(decl.input) + _type_names(decl.output)
    match decl:
        case s.StepDecl() | s.ToolDecl() | s.ToolboxDecl() | s.PipelineDecl():
            if decl.errors is not None:
                for error_type in decl.errors.errors:
                    names.extend(_type_names(error_type))
        case s.FnDecl() | s.LlmDecl() | s.AskDecl():
            pass
        case _:
            assert_never(decl)
    return names


def _python(name: s.QualName) -> Occurrence:
    return Occurrence(name.dotted, name.span, Role.PYTHON)


def _type_names(type_: s.TypeExpr) -> list[Occurrence]:
    """The names a type expression is written with."""
    match type_:
        case s.Name():
            return [_name(type_, Role.TYPE)]
        case s.QualName():
            return [_python(type_)]
        case s.TypeApply(head=head, args=args):
            names = [_python(head) if len(head.parts) > 1 else _name(head.parts[0], Role.TYPE)]
            for arg in args:
                names.extend(_type_names(arg))
            return names
        case s.TypeUnion(members=members):
            return [n for member in members for n in _type_names(member)]
        case s.TypeLiteral():
            return []
        case _:
            assert_never(type_)


def _expr_names(expr: s.Expr) -> list[Occurrence]:
    """The names of an expression and everything in it, iteratively (chains are wide, not deep)."""
    names: list[Occurrence] = []
    stack: list[s.Expr] = [expr]
    while stack:
        node = stack.pop()
        names.extend(_own_names(node))
        stack.extend(reversed(s.expr_children(node)))
    return names


def _own_names(node: s.Expr) -> list[Occurrence]:
    """The names an expression node holds itself (not those of the expressions inside it)."""
    match node:
        case s.Ref(name=name, span=span):
            return [Occurrence(name, span, Role.REF)]
        case s.SubAgent(adapter=adapter):
            return [_name(adapter, Role.REF)]
        case s.Catch(errors=errors):
            return [n for e in errors for n in _type_names(e)]
        case s.Retry(on=on):
            return [n for e in on or () for n in _type_names(e)]
        case s.Spawn(toolbox=toolbox):
            return [_name(toolbox, Role.REF)]
        case s.Match(arms=arms):
            return [n for arm in arms for n in _type_names(arm.pattern)]
        case s.Local() | s.Bind() | s.Par() | s.Each() | s.OrElse() | s.IfElse() | s.Loop() | s.Timeout() | s.Budget():
            return []
        case _:
            assert_never(node)
