"""Declarations: binding every top-level name and typing every declared signature.

This is the first half of checking. It walks the declarations of a module
once to bind names (MCE003), then resolves the types and implementation
references they mention (MCE002, MCE017, MCE018), the state (MCE004) and the
error declarations, producing a :class:`Declared` for the expression checker.
:func:`unused_warnings` runs at the very end, when every use is known (W001).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcec import syntax
from mcec.check import report
from mcec.check.env import Binding, Env, Failure, Kind, suggest, written
from mcec.diagnostics import Diagnostic, DiagnosticSink
from mcec.span import Span
from mcec.typed import PyRef, Sig, TFn, TFromImport, TImport, TModuleImport, TServer, TStep, TTool
from mcec.types import ANY, NEVER, TOOL_FAILED, TOOL_UNAVAILABLE, ClassRef, ErrorSet, Type, Union


@dataclass(frozen=True, slots=True)
class DeclaredPipeline:
    """A pipeline's declared signature; ``errors`` None means "infer them"."""

    decl: syntax.PipelineDecl
    input: Type
    output: Type
    errors: ErrorSet | None


@dataclass(slots=True)
class Declared:
    """Everything the declarations of a file establish, for the expression checker."""

    env: Env
    imports: list[TImport] = field(default_factory=list)
    state: Type | None = None
    merge: PyRef | None = None
    #: Declared error types and where each was declared.
    error_types: dict[Type, Span] = field(default_factory=dict)
    #: Declared error types some ``!`` or ``catch`` mentions (for W001).
    used_errors: set[Type] = field(default_factory=set)
    steps: dict[str, TStep] = field(default_factory=dict)
    fns: dict[str, TFn] = field(default_factory=dict)
    servers: dict[str, TServer] = field(default_factory=dict)
    tools: dict[str, TTool] = field(default_factory=dict)
    pipelines: dict[str, DeclaredPipeline] = field(default_factory=dict)

    @property
    def custom_merge(self) -> bool:
        """True when the file declares ``state T merge …`` (no MergeConflict then)."""
        return self.merge is not None


_NO_ERRORS: ErrorSet = frozenset()

#: The declarations that bind their own name, and what they bind it as.
_NAMED = (syntax.StepDecl, syntax.FnDecl, syntax.ToolDecl, syntax.PipelineDecl, syntax.ServerDecl)
_KINDS: dict[type, Kind] = {
    syntax.StepDecl: Kind.STEP,
    syntax.FnDecl: Kind.FN,
    syntax.ToolDecl: Kind.TOOL,
    syntax.PipelineDecl: Kind.PIPELINE,
    syntax.ServerDecl: Kind.SERVER,
}


class DeclarationChecker:
    """Binds and types the declarations of one module, reporting into a sink."""

    def __init__(self, module: syntax.Module, sink: DiagnosticSink) -> None:
        self.module = module
        self.sink = sink
        self.declared = Declared(Env.with_builtins())
        #: Memo of :meth:`_error_list`, emptied whenever a name is bound or an error declared.
        self._error_sets: dict[str, ErrorSet] = {}
        #: Memo of :meth:`_sig`.
        self._sigs: dict[tuple[int, int, int, bool], Sig] = {}

    @property
    def env(self) -> Env:
        """The environment being built."""
        return self.declared.env

    def run(self) -> Declared:
        """Bind all names, then type all declarations (order in the file is irrelevant)."""
        decls = self.module.decls
        for decl in decls:
            self._bind(decl)
        state_spans: list[Span] = []
        # Signatures are typed once every error is declared (their `!` clauses need it).
        signed: list[syntax.StepDecl | syntax.FnDecl | syntax.ToolDecl | syntax.PipelineDecl] = []
        steps: list[syntax.StepDecl] = []
        for decl in decls:
            if isinstance(decl, (syntax.PipelineDecl, syntax.FnDecl, syntax.ToolDecl)):
                signed.append(decl)
            elif isinstance(decl, syntax.StepDecl):
                signed.append(decl)
                steps.append(decl)
            elif isinstance(decl, syntax.StateDecl):
                self._state(decl, state_spans)
            elif isinstance(decl, syntax.ErrorDecl):
                self._error_decl(decl)
            elif isinstance(decl, syntax.ServerDecl):
                self._server(decl)
        for decl in signed:
            if isinstance(decl, syntax.PipelineDecl):
                self._pipeline(decl)
            elif isinstance(decl, syntax.StepDecl):
                self._step(decl)
            elif isinstance(decl, syntax.FnDecl):
                self._fn(decl)
            else:
                self._tool(decl)
        if steps and not state_spans:
            self.sink.add(report.missing_state(steps[0].name.text, steps[0].name.span, [s.name.span for s in steps[1:]]))
        return self.declared

    # ------------------------------------------------------------ binding

    def _add(self, binding: Binding) -> None:
        first = self.env.bind(binding)
        if first is None:
            if self._error_sets:
                self._error_sets.clear()
            return
        assert binding.span is not None
        if first.kind is Kind.MODULE_ROOT and binding.kind is Kind.MODULE_ROOT:
            return  # `import a.b` and `import a.c` share the root `a`, as in Python
        if first.kind is Kind.BUILTIN_ERROR:
            self.sink.add(report.builtin_redeclared(binding.name, binding.span))
        else:
            assert first.span is not None
            self.sink.add(report.duplicate(binding.name, binding.span, first.span))

    def _bind(self, decl: syntax.Decl) -> None:
        kind = _KINDS.get(type(decl))
        if kind is not None:
            assert isinstance(decl, _NAMED)
            name = decl.name
            self._add(Binding(name.text, kind, name.span))
        elif isinstance(decl, syntax.FromImport):
            module = decl.module.dotted
            for item in decl.names:
                self._add(Binding(item.bound.text, Kind.FROM_IMPORT, item.bound.span, f"{module}.{item.name.text}"))
            names = tuple((i.name.text, i.alias.text if i.alias else None) for i in decl.names)
            self.declared.imports.append(TFromImport(module, names, decl.span))
        elif isinstance(decl, syntax.ModuleImport):
            module = decl.module.dotted
            if decl.alias is not None:
                self._add(Binding(decl.alias.text, Kind.MODULE, decl.alias.span, module))
            else:
                root = decl.module.parts[0]
                self.env.import_plainly(module)
                self._error_sets.clear()
                self._add(Binding(root.text, Kind.MODULE_ROOT, root.span, root.text))
            self.declared.imports.append(
                TModuleImport(module, decl.alias.text if decl.alias else None, decl.span)
            )

    # ------------------------------------------------------------ types

    def type_of(self, expr: syntax.TypeExpr) -> Type:
        """Resolve a type, reporting MCE017 for each unresolvable part (which becomes ``Any``)."""
        failures: list[Failure] = []
        resolved = self.env.resolve_type(expr, failures)
        if failures:
            for failure in failures:
                self.sink.add(report.unknown(failure.message, failure.span, failure.help, code="MCE017"))
        return resolved

    def errors_of(self, exprs: tuple[syntax.TypeExpr, ...], where: str) -> list[tuple[Type, Span]]:
        """Resolve the error types of a ``!`` clause or ``catch``, each with its span.

        Each must be a declared error or a built-in one (MCE018); ``Never``
        stands for no error and is dropped; an unresolvable type is dropped too
        (its MCE017 is reported).
        """
        return [(member, expr.span) for expr in exprs for member in self._error_types(expr, where)]

    def _error_types(self, expr: syntax.TypeExpr, where: str) -> list[Type]:
        """The error types one entry of :meth:`errors_of` stands for, reporting its problems."""
        resolved = self.type_of(expr)
        found: list[Type] = []
        for member in resolved.members if isinstance(resolved, Union) else (resolved,):
            if member == NEVER or member == ANY:
                continue
            if isinstance(member, ClassRef) and member.is_runtime:
                found.append(member)
            elif member in self.declared.error_types:
                self.declared.used_errors.add(member)
                found.append(member)
            else:
                self.sink.add(report.undeclared_error(member, expr.span, where))
                # Keep it in the set anyway, so that later checks do not cascade.
                found.append(member)
        return found

    def _error_list(self, errors: syntax.ErrorList | None, owner: tuple[str, syntax.Name]) -> ErrorSet:
        """The error set of the ``!`` clause of ``owner`` (its kind and name, for MCE018).

        A clause that raised no diagnostic is remembered by its written form,
        like types in :meth:`Env.resolve_type`: while the bindings and the
        declared errors stay the same it means the same errors everywhere, and
        its side effects (marking names and errors used) happened the first
        time. A clause with a diagnostic is checked again at every occurrence,
        reporting there.
        """
        if errors is None:
            return _NO_ERRORS
        exprs = errors.errors
        key = written(exprs[0]) if len(exprs) == 1 else ";".join([written(e) for e in exprs])
        known = self._error_sets.get(key)
        if known is not None:
            return known
        reported = len(self.sink.items)
        where = f"of {owner[0]} `{owner[1].text}`"
        found = frozenset([member for expr in exprs for member in self._error_types(expr, where)])
        if len(self.sink.items) == reported:
            self._error_sets[key] = found
        return found

    def _sig(self, input: Type, output: Type, errors: ErrorSet, stateful: bool) -> Sig:
        """``Sig(input, output, errors, stateful)``, one object per distinct signature.

        Signatures repeat (``A -> A ! E1``) and their parts come from the memos
        above, so they are looked up by the identity of their parts: a value,
        so sharing it is invisible, and its parts are kept alive by it, so
        their ids are not reused while the entry exists.
        """
        key = (id(input), id(output), id(errors), stateful)
        known = self._sigs.get(key)
        if known is None:
            known = self._sigs[key] = Sig(input, output, errors, stateful)
        return known

    def _impl(self, qual: syntax.QualName) -> PyRef:
        resolved = self.env.resolve_impl(qual)
        if isinstance(resolved, Failure):
            self.sink.add(report.unknown(resolved.message, resolved.span, resolved.help))
            return PyRef("", qual.dotted, qual.dotted)
        return resolved

    # ------------------------------------------------------------ declarations

    def _state(self, decl: syntax.StateDecl, spans: list[Span]) -> None:
        spans.append(decl.span)
        state = self.type_of(decl.type)  # resolved even when rejected: its import is used
        if len(spans) > 1:
            self.sink.add(report.second_state(decl.span, spans[0]))
            return
        self.declared.state = state
        if decl.merge is not None:
            self.declared.merge = self._impl(decl.merge)

    def _error_decl(self, decl: syntax.ErrorDecl) -> None:
        resolved = self.type_of(decl.type)
        if resolved == ANY:
            return
        if isinstance(resolved, ClassRef) and resolved.is_runtime:
            self.sink.add(report.builtin_redeclared(str(resolved), decl.type.span))
            return
        first = self.declared.error_types.get(resolved)
        if first is not None:
            self.sink.add(report.duplicate_error(resolved, decl.type.span, first))
            return
        self.declared.error_types[resolved] = decl.type.span
        self._error_sets.clear()

    def _server(self, decl: syntax.ServerDecl) -> None:
        if decl.name.text not in self.declared.servers:
            self.declared.servers[decl.name.text] = TServer(decl.name.text, decl.command, decl.span)

    def _step(self, decl: syntax.StepDecl) -> None:
        input, output = self.type_of(decl.input), self.type_of(decl.output)
        sig = self._sig(input, output, self._error_list(decl.errors, ("step", decl.name)), True)
        impl = self._impl(decl.impl)
        self.declared.steps.setdefault(decl.name.text, TStep(decl.name.text, decl.is_async, sig, impl, decl.span))

    def _fn(self, decl: syntax.FnDecl) -> None:
        sig = self._sig(self.type_of(decl.input), self.type_of(decl.output), _NO_ERRORS, False)
        impl = self._impl(decl.impl)
        self.declared.fns.setdefault(decl.name.text, TFn(decl.name.text, sig, impl, decl.span))

    def _tool(self, decl: syntax.ToolDecl) -> None:
        errors = self._error_list(decl.errors, ("tool", decl.name)) | {TOOL_FAILED, TOOL_UNAVAILABLE}
        sig = Sig(self.type_of(decl.input), self.type_of(decl.output), errors, False)
        binding = self.env.lookup(decl.server.text)
        if binding is None or binding.kind is not Kind.SERVER:
            servers = self.env.names_of((Kind.SERVER,))
            if binding is None:
                self.sink.add(report.unknown_server(decl.server.text, decl.server.span, suggest(decl.server.text, servers)))
            else:
                self.sink.add(
                    report.unknown(
                        f"`{decl.server.text}` is {binding.kind.article}, not a server",
                        decl.server.span,
                        suggest(decl.server.text, servers),
                    )
                )
        tool = TTool(decl.name.text, sig, decl.server.text, decl.tool_name.text, decl.span)
        self.declared.tools.setdefault(decl.name.text, tool)

    def _pipeline(self, decl: syntax.PipelineDecl) -> None:
        errors = None if decl.errors is None else self._error_list(decl.errors, ("pipeline", decl.name))
        declared = DeclaredPipeline(decl, self.type_of(decl.input), self.type_of(decl.output), errors)
        self.declared.pipelines.setdefault(decl.name.text, declared)


def unused_warnings(module: syntax.Module, declared: Declared) -> list[Diagnostic]:
    """W001 for every import, step, fn, tool, server and error nothing uses.

    Pipelines are entry points and never unused. A declaration that failed to
    bind (a duplicate) is not warned about: its MCE003 says enough.
    """
    env = declared.env
    found: list[Diagnostic] = []

    def check(kind: str, name: syntax.Name) -> None:
        binding = env.bindings.get(name.text)
        if binding is not None and binding.span == name.span and name.text not in env.used:
            found.append(report.unused(kind, name.text, name.span))

    for decl in module.decls:
        if isinstance(decl, syntax.FromImport):
            for item in decl.names:
                check("import", item.bound)
        elif isinstance(decl, syntax.ModuleImport):
            if decl.alias is not None:
                check("module", decl.alias)
            elif decl.module.dotted not in env.used_modules:
                found.append(report.unused("module", decl.module.dotted, decl.module.span))
        elif isinstance(decl, syntax.StepDecl):
            check("step", decl.name)
        elif isinstance(decl, syntax.FnDecl):
            check("fn", decl.name)
        elif isinstance(decl, syntax.ToolDecl):
            check("tool", decl.name)
        elif isinstance(decl, syntax.ServerDecl):
            check("server", decl.name)
    for error_type, span in declared.error_types.items():
        if error_type not in declared.used_errors:
            found.append(report.unused("error", str(error_type), span))
    return found
