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
from mcec.check.env import Binding, Env, Failure, Kind, suggest
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


class DeclarationChecker:
    """Binds and types the declarations of one module, reporting into a sink."""

    def __init__(self, module: syntax.Module, sink: DiagnosticSink) -> None:
        self.module = module
        self.sink = sink
        self.declared = Declared(Env.with_builtins())

    @property
    def env(self) -> Env:
        """The environment being built."""
        return self.declared.env

    def run(self) -> Declared:
        """Bind all names, then type all declarations (order in the file is irrelevant)."""
        for decl in self.module.decls:
            self._bind(decl)
        state_spans: list[Span] = []
        for decl in self.module.decls:
            if isinstance(decl, syntax.StateDecl):
                self._state(decl, state_spans)
            elif isinstance(decl, syntax.ErrorDecl):
                self._error_decl(decl)
        for decl in self.module.decls:
            if isinstance(decl, syntax.ServerDecl):
                self._server(decl)
        for decl in self.module.decls:
            if isinstance(decl, syntax.StepDecl):
                self._step(decl)
            elif isinstance(decl, syntax.FnDecl):
                self._fn(decl)
            elif isinstance(decl, syntax.ToolDecl):
                self._tool(decl)
            elif isinstance(decl, syntax.PipelineDecl):
                self._pipeline(decl)
        steps = [d for d in self.module.decls if isinstance(d, syntax.StepDecl)]
        if steps and not state_spans:
            self.sink.add(report.missing_state(steps[0].name.text, steps[0].name.span, [s.name.span for s in steps[1:]]))
        return self.declared

    # ------------------------------------------------------------ binding

    def _add(self, binding: Binding) -> None:
        assert binding.span is not None
        first = self.env.bind(binding)
        if first is None:
            return
        if first.kind is Kind.MODULE_ROOT and binding.kind is Kind.MODULE_ROOT:
            return  # `import a.b` and `import a.c` share the root `a`, as in Python
        if first.kind is Kind.BUILTIN_ERROR:
            self.sink.add(report.builtin_redeclared(binding.name, binding.span))
        else:
            assert first.span is not None
            self.sink.add(report.duplicate(binding.name, binding.span, first.span))

    def _bind(self, decl: syntax.Decl) -> None:
        if isinstance(decl, syntax.FromImport):
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
                self.env.plain_modules.add(module)
                self._add(Binding(root.text, Kind.MODULE_ROOT, root.span, root.text))
            self.declared.imports.append(
                TModuleImport(module, decl.alias.text if decl.alias else None, decl.span)
            )
        elif isinstance(decl, (syntax.StepDecl, syntax.FnDecl, syntax.ToolDecl, syntax.PipelineDecl, syntax.ServerDecl)):
            kind = {
                syntax.StepDecl: Kind.STEP,
                syntax.FnDecl: Kind.FN,
                syntax.ToolDecl: Kind.TOOL,
                syntax.PipelineDecl: Kind.PIPELINE,
                syntax.ServerDecl: Kind.SERVER,
            }[type(decl)]
            self._add(Binding(decl.name.text, kind, decl.name.span))

    # ------------------------------------------------------------ types

    def type_of(self, expr: syntax.TypeExpr) -> Type:
        """Resolve a type, reporting MCE017 for each unresolvable part (which becomes ``Any``)."""
        failures: list[Failure] = []
        resolved = self.env.resolve_type(expr, failures)
        for failure in failures:
            self.sink.add(report.unknown(failure.message, failure.span, failure.help, code="MCE017"))
        return resolved

    def errors_of(self, exprs: tuple[syntax.TypeExpr, ...], where: str) -> list[tuple[Type, Span]]:
        """Resolve the error types of a ``!`` clause or ``catch``, each with its span.

        Each must be a declared error or a built-in one (MCE018); ``Never``
        stands for no error and is dropped; an unresolvable type is dropped too
        (its MCE017 is reported).
        """
        result: list[tuple[Type, Span]] = []
        for expr in exprs:
            resolved = self.type_of(expr)
            members = resolved.members if isinstance(resolved, Union) else (resolved,)
            for member in members:
                if member == NEVER or member == ANY:
                    continue
                if isinstance(member, ClassRef) and member.is_runtime:
                    result.append((member, expr.span))
                elif member in self.declared.error_types:
                    self.declared.used_errors.add(member)
                    result.append((member, expr.span))
                else:
                    self.sink.add(report.undeclared_error(member, expr.span, where))
                    # Keep it in the set anyway, so that later checks do not cascade.
                    result.append((member, expr.span))
        return result

    def _error_list(self, errors: syntax.ErrorList | None, where: str) -> ErrorSet:
        if errors is None:
            return frozenset()
        return frozenset(t for t, _ in self.errors_of(errors.errors, where))

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

    def _server(self, decl: syntax.ServerDecl) -> None:
        if decl.name.text not in self.declared.servers:
            self.declared.servers[decl.name.text] = TServer(decl.name.text, decl.command, decl.span)

    def _step(self, decl: syntax.StepDecl) -> None:
        where = f"of step `{decl.name.text}`"
        sig = Sig(self.type_of(decl.input), self.type_of(decl.output), self._error_list(decl.errors, where), True)
        impl = self._impl(decl.impl)
        self.declared.steps.setdefault(decl.name.text, TStep(decl.name.text, decl.is_async, sig, impl, decl.span))

    def _fn(self, decl: syntax.FnDecl) -> None:
        sig = Sig(self.type_of(decl.input), self.type_of(decl.output), frozenset(), False)
        impl = self._impl(decl.impl)
        self.declared.fns.setdefault(decl.name.text, TFn(decl.name.text, sig, impl, decl.span))

    def _tool(self, decl: syntax.ToolDecl) -> None:
        where = f"of tool `{decl.name.text}`"
        errors = self._error_list(decl.errors, where) | {TOOL_FAILED, TOOL_UNAVAILABLE}
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
        where = f"of pipeline `{decl.name.text}`"
        errors = None if decl.errors is None else self._error_list(decl.errors, where)
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
