"""Declarations: binding every top-level name and typing every declared signature.

This is the first half of checking. It walks the declarations of a module
once to bind names (MCE003), then resolves the types and implementation
references they mention (MCE002, MCE017, MCE018), the state (MCE004) and the
error declarations, producing a :class:`Declared` for the expression checker.
:func:`unused_warnings` runs at the very end, when every use is known (W001).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeAlias, TypeVar

from mcec import syntax
from mcec.check import report
from mcec.check.env import Binding, Env, Failure, Kind
from mcec.construct import fast_constructor
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
# The result and the parameters of a resolver given to DeclarationChecker._remember_if_clean.
_T = TypeVar("_T")
_P = ParamSpec("_P")


def memo_key(first: syntax.Node, last: syntax.Node | None = None) -> str:
    """The key of a type, ``!`` clause or signature in the memos of name resolution: its source text.

    The text runs from the start of ``first`` to the end of ``last`` (``first``
    itself when ``last`` is None): a signature's key is the text from its input
    type to its ``!`` clause, or to its output type when it has none.

    Equal texts are equal token sequences, so they resolve alike while the
    bindings stay as they are. Layout is part of the key (``list[A]`` and
    ``list[ A ]`` are two entries), which only means resolving such a type a
    second time.

    Decision: the text, not a form written out from the tree. The tree of one
    declaration is scattered over the heap, among the nodes of everything
    parsed after it, and name resolution sweeps all declarations in order:
    every node read is likely a cache miss, while the source text is one
    string read in order. Keying by text instead of walking a type's nodes
    down to its names' strings (four objects deep for ``A``, when a type
    name was wrapped in a node of its own) took the signature pass of the
    10,000-line front-end benchmark from 4.3 to 3.1 µs per line (and resolve
    from 12.4k to 10.0k instructions per line).
    """
    return first.source.text[first.start : (last or first).end]


# Built per declaration, so built without the frozen dataclass __init__ (one
# object.__setattr__ call per field): see mcec.construct.fast_constructor.
_make_binding = fast_constructor(Binding)
_make_step = fast_constructor(TStep)
_make_fn = fast_constructor(TFn)
_make_pipeline = fast_constructor(DeclaredPipeline)

#: The declarations that bind their own name, and what they bind it as.
_Named: TypeAlias = syntax.StepDecl | syntax.FnDecl | syntax.ToolDecl | syntax.PipelineDecl | syntax.ServerDecl
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
        #: The environment being built (``declared.env``; an attribute, not a
        #: property, because every type and implementation is resolved through it).
        self.env = self.declared.env
        # The memos of name resolution hold what resolved without a diagnostic.
        # They are valid while the bindings stay as they are, so binding a name
        # empties them (run() binds every name before it resolves anything).
        #: Memo of :meth:`type_of`, by :func:`memo_key`.
        self._types: dict[str, Type] = {}
        #: Memo of :meth:`_error_list`, by :func:`memo_key`; also emptied when an error is declared.
        self._error_sets: dict[str, ErrorSet] = {}
        #: Memo of :meth:`_sig`.
        self._sigs: dict[tuple[int, int, int, bool], Sig] = {}
        #: Memos of whole signatures by :func:`memo_key` (input type to ``!`` clause), per kind of
        #: declaration: the ``Sig`` of steps and of fns, the types of pipelines. Emptied with
        #: the memos of ``!`` clauses.
        self._step_sigs: dict[str, Sig] = {}
        self._fn_sigs: dict[str, Sig] = {}
        self._pipeline_types: dict[str, tuple[Type, Type, ErrorSet | None]] = {}
        #: Where each ``state`` declaration is (a second one is MCE004).
        self._state_spans: list[Span] = []

    def run(self) -> Declared:
        """Bind all names, then type all declarations (order in the file is irrelevant).

        Three passes over the declarations, each dispatching on the exact
        class through a table (one dict lookup instead of a chain of
        isinstance calls): bind every name; then the state, errors and
        servers; then the signatures, once every error is declared (their
        ``!`` clauses need it).
        """
        decls = self.module.decls
        for table in (_BINDERS, _EARLY, _SIGNED):
            for decl in decls:
                handler = table.get(type(decl))
                if handler is not None:
                    handler(self, decl)
        if not self._state_spans:
            steps = [decl.name for decl in decls if type(decl) is syntax.StepDecl]
            if steps:
                self.sink.add(report.missing_state(steps[0].text, steps[0].span, [s.span for s in steps[1:]]))
        return self.declared

    # ------------------------------------------------------------ binding

    def _add(self, binding: Binding) -> None:
        """Bind ``binding``, or report why its name is taken."""
        first = self.env.bind(binding)
        if first is None:
            if self._types or self._error_sets:
                self._forget()
        else:
            self._clash(binding, first)

    def _clash(self, binding: Binding, first: Binding) -> None:
        """Report ``binding``, whose name ``first`` already took (MCE003), unless both are roots of imports."""
        assert binding.span is not None
        if first.kind is Kind.MODULE_ROOT and binding.kind is Kind.MODULE_ROOT:
            return  # `import a.b` and `import a.c` share the root `a`, as in Python
        if first.kind is Kind.BUILTIN_ERROR:
            self.sink.add(report.builtin_redeclared(binding.name, binding.span))
        else:
            assert first.span is not None
            self.sink.add(report.duplicate(binding.name, binding.span, first.span))

    def _forget(self) -> None:
        """Empty the memos of name resolution (the bindings changed)."""
        self._types.clear()
        self._forget_errors()

    def _forget_errors(self) -> None:
        """Empty the memos that hold error sets (the bindings or the declared errors changed)."""
        self._error_sets.clear()
        self._step_sigs.clear()
        self._fn_sigs.clear()
        self._pipeline_types.clear()

    def _bind_named(self, decl: _Named) -> None:
        name = decl.name
        self._add(_make_binding(name.text, _KINDS[type(decl)], name, ""))

    def _bind_from_import(self, decl: syntax.FromImport) -> None:
        module = decl.module.dotted
        for item in decl.names:
            self._add(Binding(item.bound.text, Kind.FROM_IMPORT, item.bound, f"{module}.{item.name.text}"))
        names = tuple((i.name.text, i.alias.text if i.alias else None) for i in decl.names)
        self.declared.imports.append(TFromImport(module, names, decl.span))

    def _bind_module_import(self, decl: syntax.ModuleImport) -> None:
        module = decl.module.dotted
        if decl.alias is not None:
            self._add(Binding(decl.alias.text, Kind.MODULE, decl.alias, module))
        else:
            root = decl.module.parts[0]
            self.env.import_plainly(module)
            self._forget()
            self._add(Binding(root.text, Kind.MODULE_ROOT, root, root.text))
        self.declared.imports.append(TModuleImport(module, decl.alias.text if decl.alias else None, decl.span))

    # ------------------------------------------------------------ types

    def type_of(self, expr: syntax.TypeExpr) -> Type:
        """Resolve a type, reporting MCE017 for each unresolvable part (which becomes ``Any``).

        A spec writes the same few types over and over, and every name is
        top-level, so a type expression resolves the same way wherever it is
        written in the file. An expression that resolved without a failure is
        therefore remembered by its text (:func:`memo_key`) and not resolved again: its
        only side effects, marking names and modules used, happened the first
        time and are sets. An expression with a failure is resolved afresh at
        every occurrence, so each occurrence gets its own diagnostics at its
        own spans.
        """
        key = memo_key(expr)
        known = self._types.get(key)
        if known is None:
            known = self._fresh_type(expr, key)
        return known

    def _fresh_type(self, expr: syntax.TypeExpr, key: str | None) -> Type:
        """:meth:`type_of` without the memo; the type is remembered under ``key`` (if any) when it had no failure."""
        failures: list[Failure] = []
        resolved = self.env.resolve_type(expr, failures)
        for failure in failures:
            self.sink.add(report.unknown(failure.message, failure.span, failure.help, code="MCE017"))
        if not failures and key is not None:
            self._types[key] = resolved
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
        """The error set of the ``!`` clause of ``owner``, a ``kind`` (for MCE018).

        A clause that raised no diagnostic is remembered by its text (:func:`memo_key`),
        like types in :meth:`type_of`: while the bindings and the
        declared errors stay the same it means the same errors everywhere, and
        its side effects (marking names and errors used) happened the first
        time. A clause with a diagnostic is checked again at every occurrence,
        reporting there.
        """
        if errors is None:
            return _NO_ERRORS
        key = memo_key(errors)
        known = self._error_sets.get(key)
        if known is None:
            known = self._remember_if_clean(self._error_sets, key, self._fresh_error_set, errors, f"of {kind} `{owner.text}`")
        return known

    def _fresh_error_set(self, errors: syntax.ErrorList, where: str) -> ErrorSet:
        """:meth:`_error_list` without the memo; ``where`` names the owner for MCE018."""
        return frozenset([member for expr in errors.errors for member in self._error_types(expr, where)])

    def _remember_if_clean(
        self, memo: dict[str, _T], key: str, resolve: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """``resolve(*args, **kwargs)``, remembered in ``memo`` under ``key`` only if it reported no diagnostic.

        The rule of the memos of name resolution by text: a result that came
        with a diagnostic is resolved again wherever it is written, so that
        every place gets its own report. Called on a memo miss only; the
        resolver takes its arguments here rather than as a closure, which
        would cost every call of the caller, hits included.
        """
        reported = len(self.sink.items)
        result = resolve(*args, **kwargs)
        if len(self.sink.items) == reported:
            memo[key] = result
        return result

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
        self._forget_errors()

    def _server(self, decl: syntax.ServerDecl) -> None:
        if decl.name.text not in self.declared.servers:
            self.declared.servers[decl.name.text] = TServer(decl.name.text, decl.command, decl.span)

    # A spec repeats whole signatures (``A -> A ! E1``), so a step's, fn's or pipeline's is
    # remembered by its text (:func:`memo_key` from the input type to the end): one slice and one
    # lookup instead of resolving two types and a ``!`` clause through their own memos and
    # sharing the Sig (a third of name resolution's instructions on the front-end benchmark).
    # As in those memos, only what resolved without a diagnostic is remembered (_remember_if_clean).

    def _step(self, decl: syntax.StepDecl) -> None:
        name = decl.name
        key = memo_key(decl.input, decl.errors or decl.output)
        sig = self._step_sigs.get(key)
        if sig is None:
            sig = self._remember_if_clean(self._step_sigs, key, self._fresh_step_sig, decl)
        step = _make_step(name.text, decl.is_async, sig, self._impl(decl.impl), decl.span)
        self.declared.steps.setdefault(name.text, step)

    def _fresh_step_sig(self, decl: syntax.StepDecl) -> Sig:
        """A step's signature, resolved without the signature memo."""
        input, output = self.type_of(decl.input), self.type_of(decl.output)
        return self._sig(input, output, self._error_list(decl.errors, "step", decl.name), True)

    def _fn(self, decl: syntax.FnDecl) -> None:
        key = memo_key(decl.input, decl.output)
        sig = self._fn_sigs.get(key)
        if sig is None:
            sig = self._remember_if_clean(self._fn_sigs, key, self._fresh_fn_sig, decl)
        fn = _make_fn(decl.name.text, sig, self._impl(decl.impl), decl.span)
        self.declared.fns.setdefault(decl.name.text, fn)

    def _fresh_fn_sig(self, decl: syntax.FnDecl) -> Sig:
        """A fn's signature, resolved without the signature memo."""
        return self._sig(self.type_of(decl.input), self.type_of(decl.output), _NO_ERRORS, False)

    def _tool(self, decl: syntax.ToolDecl) -> None:
        errors = self._error_list(decl.errors, "tool", decl.name) | {TOOL_FAILED, TOOL_UNAVAILABLE}
        sig = Sig(self.type_of(decl.input), self.type_of(decl.output), errors, False)
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

    def _pipeline(self, decl: syntax.PipelineDecl) -> None:
        key = memo_key(decl.input, decl.errors or decl.output)
        types = self._pipeline_types.get(key)
        if types is None:
            types = self._remember_if_clean(self._pipeline_types, key, self._fresh_pipeline_types, decl)
        declared = _make_pipeline(decl, *types)
        self.declared.pipelines.setdefault(decl.name.text, declared)

    def _fresh_pipeline_types(self, decl: syntax.PipelineDecl) -> tuple[Type, Type, ErrorSet | None]:
        """A pipeline's input, output and ``!`` errors (None: to be inferred), resolved without the signature memo."""
        errors = None if decl.errors is None else self._error_list(decl.errors, "pipeline", decl.name)
        return self.type_of(decl.input), self.type_of(decl.output), errors


# The passes of DeclarationChecker.run: which method handles each class of
# declaration in each (a declaration absent from a table is skipped there).
_Handler: TypeAlias = Callable[[DeclarationChecker, Any], None]
_BINDERS: dict[type, _Handler] = {
    **{cls: DeclarationChecker._bind_named for cls in _KINDS},
    syntax.FromImport: DeclarationChecker._bind_from_import,
    syntax.ModuleImport: DeclarationChecker._bind_module_import,
}
_EARLY: dict[type, _Handler] = {
    syntax.StateDecl: DeclarationChecker._state,
    syntax.ErrorDecl: DeclarationChecker._error_decl,
    syntax.ServerDecl: DeclarationChecker._server,
}
_SIGNED: dict[type, _Handler] = {
    syntax.StepDecl: DeclarationChecker._step,
    syntax.FnDecl: DeclarationChecker._fn,
    syntax.ToolDecl: DeclarationChecker._tool,
    syntax.PipelineDecl: DeclarationChecker._pipeline,
}


def unused_warnings(module: syntax.Module, declared: Declared) -> list[Diagnostic]:
    """W001 for every import, step, fn, tool, server and error nothing uses.

    Pipelines are entry points and never unused. A declaration that failed to
    bind (a duplicate) is not warned about: its MCE003 says enough.
    """
    env = declared.env
    found: list[Diagnostic] = []

    def check(kind: str, name: syntax.Name) -> None:
        binding = env.bindings.get(name.text)
        if binding is not None and binding.site is name and name.text not in env.used:
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
