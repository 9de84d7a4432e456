"""Declarations: binding every top-level name and typing every declared signature.

This is the first half of checking. It walks the declarations of a module
to bind names (MCE003), then resolves the types and implementation
references they mention (MCE002, MCE017, MCE018), the state (MCE004) and the
error declarations, producing a :class:`Declared` for the expression checker.
:func:`unused_warnings` runs at the very end, when every use is known (W001).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.env import Binding, Env, Failure, Kind, suggest
from mcec.check.implementations import StepContract, check_fn, check_step
from mcec.check.migrations import is_migration
from mcec.check.partials import partial_classes
from mcec.check.pyindex import Missing, PyClass, PyFunction, PyModule, PythonIndex, PyValue
from mcec.diagnostics import Diagnostic, DiagnosticSink
from mcec.span import Span
from mcec.check.llm import (
    TemplateSource,
    check_answer,
    check_model_options,
    check_output,
    check_streams,
    check_template,
    read_template,
    templated,
)
from mcec.check.typed import (
    Program,
    PyRef,
    Sig,
    TFn,
    TFromImport,
    TImport,
    TLlm,
    TAsk,
    TModel,
    TModuleImport,
    TPipeline,
    TServer,
    TStep,
    TTool,
    TUsed,
)
from mcec.check.uses import Specs, UsedSpec, respell
from mcec.check.types import (
    ANY,
    LLM_FAILED,
    ASK_ERRORS,
    LLM_UNAVAILABLE,
    NEVER,
    SHADOWABLE_ERRORS,
    STR,
    TOOL_FAILED,
    TOOL_UNAVAILABLE,
    Builtin,
    ClassRef,
    ErrorSet,
    Generic,
    Lit,
    Type,
    Union,
)


@dataclass(frozen=True, slots=True)
class DeclaredPipeline:
    """A pipeline's declared signature; ``errors`` None means "infer them"."""

    decl: syntax.PipelineDecl
    input: Type
    output: Type
    errors: ErrorSet | None


@dataclass(frozen=True, slots=True)
class DeclaredToolbox:
    """A toolbox's declared plan type (§12); its entries are checked with the pipelines."""

    decl: syntax.ToolboxDecl
    input: Type
    output: Type
    errors: ErrorSet


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
    models: dict[str, TModel] = field(default_factory=dict)
    llms: dict[str, TLlm] = field(default_factory=dict)
    asks: dict[str, TAsk] = field(default_factory=dict)
    pipelines: dict[str, DeclaredPipeline] = field(default_factory=dict)
    toolboxes: dict[str, DeclaredToolbox] = field(default_factory=dict)
    #: Names declared more than once (their MCE003 says enough: no W001 for them).
    duplicated: set[str] = field(default_factory=set)
    #: The pipelines of other specs this one uses, by the name bound here (§11).
    uses: dict[str, TUsed] = field(default_factory=dict)
    #: Names imported from other specs that cannot be used (reported): they fit everywhere.
    poisoned: set[str] = field(default_factory=set)

    @property
    def custom_merge(self) -> bool:
        """True when the file declares ``state T merge …`` (no MergeConflict then)."""
        return self.merge is not None


_NO_ERRORS: ErrorSet = frozenset()
#: ``dict[str, Any]``, the one builtin type a tool's arguments may have.
TOOL_ARGUMENTS = Generic("dict", (STR, ANY))


def _testable_class(error_type: Type) -> bool:
    """Can ``isinstance`` test for ``error_type``? An imported class or a builtin class (not
    ``None``, ``Any`` or ``Never``); not a generic or a union."""
    match error_type:
        case ClassRef():
            return True
        case Builtin(name=name):
            return name not in ("None", "Any", "Never")
        case Generic() | Union() | Lit():
            return False
        case _:
            assert_never(error_type)

class DeclarationChecker:
    """Binds and types the declarations of one module, reporting into a sink."""

    def __init__(
        self,
        module: syntax.Module,
        sink: DiagnosticSink,
        index: PythonIndex | None = None,
        specs: Specs | None = None,
        read_templates: bool = True,
    ) -> None:
        self.module = module
        #: False when re-reading a spec whose module was generated (for its plans, §12): its
        #: templates were checked then, and the module holds them.
        self.read_templates = read_templates
        self.sink = sink
        #: What the spec's Python names are (None: no class knowledge, nothing read).
        self.index = index
        #: The other specs this one may use (read even without an index: see :class:`Specs`).
        self.specs = specs if specs is not None else Specs(index, spec=module.path)
        #: Pipelines imported from other specs, typed in pass 3 (once the state is known).
        self._pending: list[tuple[syntax.ImportedName, TPipeline, UsedSpec, str]] = []
        self.declared = Declared(Env.with_builtins(index))
        self.env = self.declared.env
        #: Where each ``state`` declaration is (a second one is MCE004).
        self._state_spans: list[Span] = []

    def run(self) -> Declared:
        """Bind all names, then type all declarations (order in the file is irrelevant).

        Three passes over the declarations: bind every name; then the state,
        errors and servers; then the signatures, once every error is declared
        (their ``!`` clauses need it).
        """
        decls = self.module.decls
        for decl in decls:
            self._bind(decl)
        for decl in decls:
            self._declare(decl)
        for decl in decls:
            self._sign(decl)
        if not self._state_spans:
            steps = [decl.name for decl in decls if isinstance(decl, syntax.StepDecl)]
            if steps:
                self.sink.add(report.missing_state(steps[0].text, steps[0].span, [s.span for s in steps[1:]]))
        return self.declared

    # ------------------------------------------------------------ the passes

    def _bind(self, decl: syntax.Decl) -> None:
        """Pass 1: the names a declaration binds."""
        match decl:
            case syntax.FromImport():
                self._bind_from_import(decl)
            case syntax.ModuleImport():
                self._bind_module_import(decl)
            case syntax.StepDecl():
                self._add(Binding(decl.name.text, Kind.STEP, decl.name))
            case syntax.FnDecl():
                self._add(Binding(decl.name.text, Kind.FN, decl.name))
            case syntax.ToolDecl():
                self._add(Binding(decl.name.text, Kind.TOOL, decl.name))
            case syntax.PipelineDecl():
                self._add(Binding(decl.name.text, Kind.PIPELINE, decl.name))
            case syntax.ServerDecl():
                self._add(Binding(decl.name.text, Kind.SERVER, decl.name))
            case syntax.ModelDecl():
                self._add(Binding(decl.name.text, Kind.MODEL, decl.name))
            case syntax.LlmDecl():
                self._add(Binding(decl.name.text, Kind.LLM, decl.name))
            case syntax.AskDecl():
                self._add(Binding(decl.name.text, Kind.ASK, decl.name))
            case syntax.ToolboxDecl():
                self._add(Binding(decl.name.text, Kind.TOOLBOX, decl.name))
            case syntax.StateDecl() | syntax.ErrorDecl() | syntax.RenameDecl():
                pass
            case _:
                assert_never(decl)

    def _declare(self, decl: syntax.Decl) -> None:
        """Pass 2: the state, the error types and the servers."""
        match decl:
            case syntax.StateDecl():
                self._state(decl)
            case syntax.ErrorDecl():
                self._error_decl(decl)
            case syntax.ServerDecl():
                self._server(decl)
            case syntax.ModelDecl():
                self._model(decl)
            case (
                syntax.FromImport()
                | syntax.ModuleImport()
                | syntax.StepDecl()
                | syntax.FnDecl()
                | syntax.ToolDecl()
                | syntax.LlmDecl()
                | syntax.AskDecl()
                | syntax.ToolboxDecl()
                | syntax.RenameDecl()  # checked with the migrations (mcec.check.migrations)
                | syntax.PipelineDecl()
            ):
                pass
            case _:
                assert_never(decl)

    def _sign(self, decl: syntax.Decl) -> None:
        """Pass 3: the signatures of steps, fns, tools and pipelines."""
        match decl:
            case syntax.StepDecl():
                self._step(decl)
            case syntax.FnDecl():
                self._fn(decl)
            case syntax.ToolDecl():
                self._tool(decl)
            case syntax.LlmDecl():
                self._llm(decl)
            case syntax.AskDecl():
                self._ask(decl)
            case syntax.PipelineDecl():
                self._pipeline(decl)
            case syntax.ToolboxDecl():
                self._toolbox(decl)
            case syntax.FromImport():
                self._sign_used(decl)
            case (
                syntax.ModuleImport()
                | syntax.StateDecl()
                | syntax.ErrorDecl()
                | syntax.ServerDecl()
                | syntax.ModelDecl()
                | syntax.RenameDecl()
            ):
                pass
            case _:
                assert_never(decl)

    # ------------------------------------------------------------ binding

    def _add(self, binding: Binding) -> None:
        """Bind ``binding``, or report why its name is taken."""
        first = self.env.bind(binding)
        if first is not None:
            self._clash(binding, first)

    def _clash(self, binding: Binding, first: Binding) -> None:
        """Report ``binding``, whose name ``first`` already took (MCE003), unless both are roots of imports."""
        assert binding.span is not None
        if first.kind is Kind.MODULE_ROOT and binding.kind is Kind.MODULE_ROOT:
            return  # `import a.b` and `import a.c` share the root `a`, as in Python
        if first.kind is Kind.BUILTIN_ERROR and binding.name in SHADOWABLE_ERRORS:
            self.env.shadow(binding)  # the spec's own type wins (docs/language.md §5)
            self.sink.add(report.shadows_builtin(binding.name, binding.span))
            return
        self.declared.duplicated.add(binding.name)
        if first.kind is Kind.BUILTIN_ERROR:
            self.sink.add(report.builtin_redeclared(binding.name, binding.span))
        else:
            assert first.span is not None
            self.sink.add(report.duplicate(binding.name, binding.span, first.span))

    def _bind_from_import(self, decl: syntax.FromImport) -> None:
        module = decl.module.dotted
        if module == "__future__":
            self._future_import(decl)
            return
        spec = self.specs.spec_of(module)
        if spec is not None:
            self._bind_used(decl, spec)
            return
        for item in decl.names:
            self._add(Binding(item.bound.text, Kind.FROM_IMPORT, item.bound, f"{module}.{item.name.text}"))
        names = tuple((i.name.text, i.alias.text if i.alias else None) for i in decl.names)
        self.declared.imports.append(TFromImport(module, names, decl.span))
        if self.index is not None and self._module_found(decl.module):
            for item in decl.names:
                found = self.index.member(module, item.name.text)
                if isinstance(found, Missing):
                    self.sink.add(report.python_missing(found.message, item.name.span, found.help))

    def _bind_used(self, decl: syntax.FromImport, spec: str) -> None:
        """``from agents.research_mce import research`` where ``agents/research.mce`` exists: the
        names are pipelines of that spec, read from it (§11); a cycle of specs is MCE015, a spec
        with errors MCE029 (its errors reported in it), a name it does not declare MCE002."""
        module = decl.module.dotted
        for item in decl.names:
            self._add(Binding(item.bound.text, Kind.PIPELINE, item.bound, f"{module}.{item.name.text}"))
        names = tuple((i.name.text, i.alias.text if i.alias else None) for i in decl.names)
        self.declared.imports.append(TFromImport(module, names, decl.span))
        bound = [item.bound.text for item in decl.names]
        if self._spec_cycle(decl, spec):
            self.declared.poisoned.update(bound)
            return
        used = self.specs.load(spec)
        if used.program is None:
            self.sink.extend([d for d in used.diagnostics if d.is_error])
            self.sink.add(report.used_spec_broken(spec, decl.module.span))
            self.declared.poisoned.update(bound)
            return
        pipelines = {p.name: p for p in used.program.pipelines}
        for item in decl.names:
            pipeline = pipelines.get(item.name.text)
            if pipeline is None:
                kind = _kind_in(used.program, item.name.text)
                help = suggest(item.name.text, list(pipelines))
                self.sink.add(report.not_a_used_pipeline(item.name.text, spec, kind, item.name.span, help))
                self.declared.poisoned.add(item.bound.text)
            else:
                self._pending.append((item, pipeline, used, module))

    def _spec_cycle(self, decl: syntax.FromImport, spec: str) -> bool:
        """Report (MCE015) and say whether ``spec`` uses, through specs it uses, this one."""
        own = self.module.path
        imported = ", ".join(f"`{item.name.text}`" for item in decl.names)
        if os.path.realpath(spec) == os.path.realpath(own):
            self.sink.add(report.spec_cycle([own], [(decl.module.span, imported)]))
            return True
        back = self.specs.path_back(spec, own)
        if back is None:
            return False
        specs = [own, *[used.importer for used in back]]
        imports = [(decl.module.span, imported), *[(u.span, ", ".join(f"`{n}`" for n in u.names)) for u in back]]
        self.sink.add(report.spec_cycle(specs, imports))
        return True

    def _sign_used(self, decl: syntax.FromImport) -> None:
        """Pass 3 for an import of other specs' pipelines: each typed in this spec's terms, and
        with its state (a use of one on another state needs a sub-agent adapter, MCE028)."""
        spellings = {b.target: b.name for b in self.env.bindings.values() if b.kind is Kind.FROM_IMPORT}
        for item, pipeline, used, module in self._pending:
            if not any(item is name for name in decl.names):
                continue
            assert used.program is not None
            # a pipeline on another state is bound too: the expression checker holds
            # each use of it to an adapter (MCE028 at a use without one)
            ours, theirs = self.declared.state, used.program.state
            sig = pipeline.sig
            typed = Sig(
                respell(sig.input, spellings),
                respell(sig.output, spellings),
                frozenset(respell(e, spellings) for e in sig.errors),
                sig.stateful,
            )
            self.declared.uses[item.bound.text] = TUsed(
                item.bound.text,
                module,
                pipeline.name,
                used.path,
                typed,
                used.program,
                item.span,
                None if theirs is None else respell(theirs, spellings),
                ours == theirs,
            )

    def _module_found(self, qual: syntax.QualName) -> bool:
        """Is the Python module ``qual`` there? If not, say so (MCE002) at the import."""
        assert self.index is not None
        found = self.index.module(qual.dotted)
        if isinstance(found, Missing):
            self.sink.add(report.python_missing(found.message, qual.span, found.help))
            return False
        return True

    def _bind_module_import(self, decl: syntax.ModuleImport) -> None:
        module = decl.module.dotted
        if self.index is not None:
            self._module_found(decl.module)
        if decl.alias is not None:
            self._add(Binding(decl.alias.text, Kind.MODULE, decl.alias, module))
        else:
            root = decl.module.parts[0]
            self.env.import_plainly(module)
            self._add(Binding(root.text, Kind.MODULE_ROOT, root, root.text))
        self.declared.imports.append(TModuleImport(module, decl.alias.text if decl.alias else None, decl.span))

    def _future_import(self, decl: syntax.FromImport) -> None:
        """``from __future__ import annotations`` is what every generated module starts with
        already: accepted, and not written twice; any other feature is an error."""
        for item in decl.names:
            if item.name.text != "annotations" or item.alias is not None:
                self.sink.add(report.unsupported_future(item.name.text, item.span))

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

    def _error_list(self, errors: syntax.ErrorList | None, kind: str, owner: syntax.Name) -> ErrorSet:
        """The error set of the ``!`` clause of ``owner``, a ``kind`` (for MCE018)."""
        if errors is None:
            return _NO_ERRORS
        where = f"of {kind} `{owner.text}`"
        return frozenset(member for expr in errors.errors for member in self._error_types(expr, where))

    def _impl(self, qual: syntax.QualName) -> PyRef:
        resolved = self.env.resolve_impl(qual)
        if isinstance(resolved, Failure):
            self.sink.add(report.unknown(resolved.message, resolved.span, resolved.help))
            return PyRef("", qual.dotted, qual.dotted)
        return resolved

    def _implementation(self, ref: PyRef, qual: syntax.QualName) -> PyFunction | None:
        """The function behind ``= m.f`` as the index reads it (None: not read, or reported as missing)."""
        if self.index is None or not ref.module or isinstance(self.index.module(ref.module), Missing):
            return None  # no index, the name did not resolve, or its module's import is reported
        found = self.index.member(ref.module, ref.attr)
        match found:
            case PyFunction():
                return found
            case Missing():
                self.sink.add(report.python_missing(found.message, qual.parts[-1].span, found.help))
            case PyModule():
                self.sink.add(report.implementation(f"`{qual.dotted}` is a module, not a function", qual.span, qual.span, "name the function in it: `m.f`"))
            case PyClass() | PyValue():
                pass  # a class (its constructor) or a callable object: mypy checks the call
            case _:
                assert_never(found)
        return None

    # ------------------------------------------------------------ declarations

    def _state(self, decl: syntax.StateDecl) -> None:
        spans = self._state_spans
        spans.append(decl.span)
        state = self.type_of(decl.type)  # resolved even when rejected: its import is used
        if len(spans) > 1:
            self.sink.add(report.second_state(decl.span, spans[0]))
            return
        self.declared.state = state
        if decl.merge is not None:
            self.declared.merge = self._impl(decl.merge)

    def _error_decl(self, decl: syntax.ErrorDecl) -> None:
        reported = len(self.sink.items)
        resolved = self.type_of(decl.type)
        if len(self.sink.items) > reported:
            return  # the type did not resolve: its MCE017 says enough
        if not _testable_class(resolved):
            self.sink.add(report.bad_error_type(resolved, decl.type.span))
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
        input, output = self.type_of(decl.input), self.type_of(decl.output)
        sig = Sig(input, output, self._error_list(decl.errors, "step", decl.name), True)
        impl = self._impl(decl.impl)
        step = TStep(decl.name.text, decl.is_async, sig, impl, decl.span)
        self.declared.steps.setdefault(decl.name.text, step)
        function = self._implementation(impl, decl.impl)
        if function is not None:
            self.sink.extend(check_step(StepContract(decl, sig, self.declared.state), function))

    def _fn(self, decl: syntax.FnDecl) -> None:
        sig = Sig(self.type_of(decl.input), self.type_of(decl.output), _NO_ERRORS, False)
        impl = self._impl(decl.impl)
        fn = TFn(decl.name.text, sig, impl, decl.span)
        self.declared.fns.setdefault(decl.name.text, fn)
        function = self._implementation(impl, decl.impl)
        if function is not None:
            self.sink.extend(check_fn(decl, sig, function))

    def _tool(self, decl: syntax.ToolDecl) -> None:
        errors = self._error_list(decl.errors, "tool", decl.name) | {TOOL_FAILED, TOOL_UNAVAILABLE}
        sig = Sig(self.type_of(decl.input), self.type_of(decl.output), errors, False)
        # docs/language.md §9: a tool's arguments are a pydantic model's fields or a dict.
        if not (isinstance(sig.input, ClassRef) or sig.input == ANY or sig.input == TOOL_ARGUMENTS):
            self.sink.add(report.bad_tool_input(sig.input, decl.input.span))
        binding = self.env.lookup(decl.server.text)
        if binding is None or binding.kind is not Kind.SERVER:
            help = self.env.suggestion(decl.server.text, (Kind.SERVER,))
            if binding is None:
                self.sink.add(report.unknown_server(decl.server.text, decl.server.span, help))
            else:
                self.sink.add(
                    report.unknown(f"`{decl.server.text}` is {binding.kind.article}, not a server", decl.server.span, help)
                )
        tool = TTool(decl.name.text, sig, decl.server.text, decl.tool_name.text, decl.span)
        self.declared.tools.setdefault(decl.name.text, tool)

    def _model(self, decl: syntax.ModelDecl) -> None:
        """``model n = openai "ID" (OPTION=VALUE, …)``: the options checked (MCE027)."""
        options, problems = check_model_options(decl)
        for problem in problems:
            self.sink.add(problem)
        if decl.name.text not in self.declared.models:
            self.declared.models[decl.name.text] = TModel(decl.name.text, decl.model_id, decl.span, options)

    def _llm(self, decl: syntax.LlmDecl) -> None:
        """``llm n : A -> B = m TEMPLATE``: an async step that changes no state and fails
        with ``LLMFailed | LLMUnavailable``; its template (MCE023) and output type (MCE024) checked."""
        reported = len(self.sink.items)
        input, output = self.type_of(decl.input), self.type_of(decl.output)
        types_resolved = len(self.sink.items) == reported
        sig = Sig(input, output, frozenset({LLM_FAILED, LLM_UNAVAILABLE}), False)
        binding = self.env.lookup(decl.model.text)
        if binding is None or binding.kind is not Kind.MODEL:
            help = self.env.suggestion(decl.model.text, (Kind.MODEL,))
            if binding is None:
                self.sink.add(report.unknown_model(decl.model.text, decl.model.span, help))
            else:
                self.sink.add(
                    report.unknown(f"`{decl.model.text}` is {binding.kind.article}, not a model", decl.model.span, help)
                )
        source = read_template(decl, self.module.path) if self.read_templates else TemplateSource("", None)
        if isinstance(source, Diagnostic):
            self.sink.add(source)
            text, template_name = "", decl.template.text  # type: str, str | None
        else:
            assert isinstance(source, TemplateSource)
            text, template_name = source.text, source.name
            if types_resolved and self.read_templates:
                self.sink.extend(check_template(decl, source, input, self.index, self.declared.state))
        if types_resolved:
            problem = check_output(decl, output) or check_streams(decl, output)
            if problem is not None:
                self.sink.add(problem)
        partials = partial_classes(output, self.index) if decl.stream and types_resolved else ()
        llm = TLlm(decl.name.text, sig, decl.model.text, text, template_name, decl.span, decl.stream, partials)
        self.declared.llms.setdefault(decl.name.text, llm)

    def _ask(self, decl: syntax.AskDecl) -> None:
        """``ask n : A -> B [= TEMPLATE] [within S]``: an async step that changes no state and
        fails with ``NoOneToAsk | NoAnswer | BadAnswer``; its template (MCE023, as an llm's) and
        its answer type (MCE034) checked."""
        reported = len(self.sink.items)
        input, output = self.type_of(decl.input), self.type_of(decl.output)
        types_resolved = len(self.sink.items) == reported
        sig = Sig(input, output, ASK_ERRORS, False)
        text: str | None = None
        template_name: str | None = None
        question = templated(decl)
        if question is not None:
            source = read_template(question, self.module.path) if self.read_templates else TemplateSource("", None)
            if isinstance(source, Diagnostic):
                self.sink.add(source)
                text, template_name = "", question.template.text
            else:
                text, template_name = source.text, source.name
                if types_resolved and self.read_templates:
                    self.sink.extend(check_template(question, source, input, self.index, self.declared.state))
        if types_resolved:
            problem = check_answer(decl, output)
            if problem is not None:
                self.sink.add(problem)
        ask = TAsk(decl.name.text, sig, text, template_name, decl.within, decl.span)
        self.declared.asks.setdefault(decl.name.text, ask)

    def _pipeline(self, decl: syntax.PipelineDecl) -> None:
        errors = None if decl.errors is None else self._error_list(decl.errors, "pipeline", decl.name)
        declared = DeclaredPipeline(decl, self.type_of(decl.input), self.type_of(decl.output), errors)
        self.declared.pipelines.setdefault(decl.name.text, declared)


    def _toolbox(self, decl: syntax.ToolboxDecl) -> None:
        errors = self._error_list(decl.errors, "toolbox", decl.name)
        declared = DeclaredToolbox(decl, self.type_of(decl.input), self.type_of(decl.output), errors)
        self.declared.toolboxes.setdefault(decl.name.text, declared)


def _kind_in(program: Program, name: str) -> str | None:
    """What ``name`` is in ``program`` when it is not a pipeline ("a step"), or None."""
    for kind, names in (
        ("a step", [s.name for s in program.steps]),
        ("a fn", [f.name for f in program.fns]),
        ("a tool", [t.name for t in program.tools]),
        ("an llm step", [l.name for l in program.llms]),
        ("an ask step", [a.name for a in program.asks]),
        ("a model", [m.name for m in program.models]),
        ("a server", [s.name for s in program.servers]),
    ):
        if name in names:
            return kind
    return None


def unused_warnings(module: syntax.Module, declared: Declared) -> list[Diagnostic]:
    """W001 for every step, fn, tool, server and error nothing uses.

    Pipelines are entry points and never unused. Imports are not warned about:
    a spec imports the types its signatures name and the modules its
    implementations live in, and warning about each name a spec does not use
    itself buried the warnings that matter. A declaration that clashed with
    another (MCE003) is not warned about either: the error says enough. Nor is
    a migration ``fn`` (``migrate_state``, ``migrate_output_NAME``): ``mcec runs upgrade`` uses
    it (docs/language.md §13).
    """
    env = declared.env
    found: list[Diagnostic] = []

    def check(kind: str, name: syntax.Name) -> None:
        binding = env.bindings.get(name.text)
        if binding is None or binding.site is not name or name.text in declared.duplicated:
            return
        if name.text not in env.used and not (kind == "fn" and is_migration(name.text)):
            found.append(report.unused(kind, name.text, name.span))

    for decl in module.decls:
        match decl:
            case syntax.StepDecl():
                check("step", decl.name)
            case syntax.FnDecl():
                check("fn", decl.name)
            case syntax.ToolDecl():
                check("tool", decl.name)
            case syntax.ServerDecl():
                check("server", decl.name)
            case syntax.ModelDecl():
                check("model", decl.name)
            case syntax.LlmDecl():
                check("llm", decl.name)
            case syntax.AskDecl():
                check("ask", decl.name)
            case syntax.ToolboxDecl():
                check("toolbox", decl.name)
            case (
                syntax.FromImport()
                | syntax.ModuleImport()
                | syntax.StateDecl()
                | syntax.ErrorDecl()
                | syntax.RenameDecl()
                | syntax.PipelineDecl()
            ):
                pass
            case _:
                assert_never(decl)
    for error_type, span in declared.error_types.items():
        if error_type not in declared.used_errors:
            found.append(report.unused("error", str(error_type), span))
    return found
