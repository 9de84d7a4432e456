"""The reference interpreter: runs a checked program with the runtime's combinators.

It is the oracle for the code generator: it maps every expression form of
docs/language.md §5 straight onto ``AgentMonad`` (``>>=`` is ``chain``, ``par`` is
``AgentMonad.par``, …), with none of the generator's tricks (straight-line
code, helper functions, chunking). Differential tests run random specs through
both and demand the same value, error and final state.

Implementations are imported from the spec's modules, unless ``overrides``
supplies one by step/fn/tool name (tests use this to run a spec on a toolbox).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, assert_never

from agentmonad import AgentMonad, Outcome, Site, lift_fn, lift_step, merge_states
from agentmonad.compiled import declared_merge
from agentmonad.human import ask_step
from agentmonad.llm import Model, llm_scope, llm_step
from agentmonad.plans import Toolbox
from agentmonad.mcp import StdioServer, tool, tool_scope
from agentmonad.observe import run_observed

from mcec.check import typed as t
from mcec.run.pyobjects import error_classes, python_type, resolve_path, value_test
from mcec.check.types import Lit
from mcec.sites import site_of
from mcec.span import Span

Arrow = Callable[[Any], AgentMonad[Any, Any, Any]]


def _model(model: t.TModel) -> Model:
    """The runtime ``Model`` of a declaration, with its options (what the generated module builds)."""
    options: dict[str, Any] = dict(model.options)
    return Model(model.name, model.model_id, **options)


class Interpreter:
    """Evaluates the pipelines of one checked program."""

    def __init__(self, program: t.Program, overrides: Mapping[str, Callable[..., Any]] | None = None) -> None:
        self.program = program
        self.file = os.path.basename(program.path)
        self.overrides = dict(overrides or {})
        self.steps: dict[str, t.TStep] = {}
        self.fns: dict[str, t.TFn] = {}
        self.pipelines: dict[str, t.TPipeline] = {}
        self.tools: dict[str, t.TTool] = {}
        self.servers: dict[str, t.TServer] = {}
        self.models: dict[str, Model] = {}
        self.llms: dict[str, t.TLlm] = {}
        self.asks: dict[str, t.TAsk] = {}
        #: Pipelines of other specs (§11), each run by an interpreter of its own spec.
        self.uses: dict[str, t.TUsed] = {}
        for decl in program.decls:
            self._declare(decl)
        self._llm_steps: dict[str, Callable[..., Any]] = {}
        self._ask_steps: dict[str, Callable[..., Any]] = {}
        self._pipeline_arrows: dict[str, Arrow] = {}
        self._others: dict[str, Interpreter] = {}
        self._toolboxes: dict[str, Toolbox[Any, Any, Any, Any]] = {}
        self.declared: Callable[[Any, Any], Any] | None = None
        if program.merge is not None:
            self.declared = resolve_path(program.merge.path)  # type: ignore[assignment]

    def _declare(self, decl: t.TDecl) -> None:
        """Index one declaration by name, in the table of its kind."""
        match decl:
            case t.TFromImport() | t.TModuleImport():
                pass  # the implementations are imported by their resolved paths
            case t.TStep():
                self.steps[decl.name] = decl
            case t.TFn():
                self.fns[decl.name] = decl
            case t.TPipeline():
                self.pipelines[decl.name] = decl
            case t.TTool():
                self.tools[decl.name] = decl
            case t.TServer():
                self.servers[decl.name] = decl
            case t.TModel():
                self.models[decl.name] = _model(decl)
            case t.TLlm():
                self.llms[decl.name] = decl
            case t.TAsk():
                self.asks[decl.name] = decl
            case t.TUsed():
                self.uses[decl.name] = decl
            case t.TToolbox():
                pass  # made at its first spawn (toolbox())
            case _:
                assert_never(decl)

    async def run(self, pipeline: str, state: Any, value: Any) -> Outcome[Any, Any, Any]:
        """Run one pipeline from ``state`` on ``value``; Defects propagate.

        With an event sink attached, the run is told to it as a run of ``pipeline``
        (``agentmonad.observe.run_observed``). The run is a tool scope (docs/language.md §9): MCP servers start at first use
        and stop when the run ends (a caller's enclosing scope keeps them up);
        a program with llm steps also runs in an ``llm_scope()``.
        """
        site = self.site(pipeline, self.pipelines[pipeline].span)
        return await run_observed(pipeline, site, lambda: self._run(pipeline, state, value))

    async def _run(self, pipeline: str, state: Any, value: Any) -> Outcome[Any, Any, Any]:
        async with tool_scope():
            if not _has_llms(self.program):
                return await self.pipeline_arrow(pipeline)(value).run(state)
            async with llm_scope():  # docs/language.md §10: one client per model, usage counted
                return await self.pipeline_arrow(pipeline)(value).run(state)

    def pipeline_arrow(self, name: str) -> Arrow:
        """The Kleisli arrow of a pipeline (built once, lazily: pipelines may share callees)."""
        if name not in self._pipeline_arrows:
            self._pipeline_arrows[name] = self.arrow(self.pipelines[name].body)
        return self._pipeline_arrows[name]

    def merge_for(self, merge: t.MergeKind) -> Callable[[Any, Any], Any] | None:
        """The merge a group runs with, as the generated code's (:data:`mcec.check.typed.MergeKind`):
        where the checker proved no conflict can happen, a ``MergeConflict`` is a ``Defect``."""
        match merge:
            case "none":
                return None
            case "declared":
                assert self.declared is not None
                return declared_merge(self.declared)
            case "one_writer":
                return declared_merge(merge_states)
            case "by_field":
                return merge_states
            case _:
                assert_never(merge)

    def site(self, name: str, span: Span) -> Site:
        """Where a step use sits in the spec, or in a plan's text (same form as the generated code's)."""
        return site_of(name, span)

    def implementation(self, name: str, path: str) -> Callable[..., Any]:
        """A step's or fn's implementation: an override, or the spec's Python object."""
        if name in self.overrides:
            return self.overrides[name]
        impl = resolve_path(path)
        if not callable(impl):
            raise TypeError(f"{path} is not callable")
        return impl

    def arrow(self, expr: t.TExpr) -> Arrow:
        """The Kleisli arrow ``A -> AgentMonad[S, E, B]`` of an expression."""
        match expr:
            case t.TRef():
                return self._ref(expr)
            case t.TBind():
                return AgentMonad.chain([self.arrow(part) for part in expr.parts])
            case t.TPar():
                branches = [self.arrow(b) for b in expr.branches]
                par_merge = self.merge_for(expr.merge)
                par_site = self.site("par", expr.span)
                return lambda v: AgentMonad.par([b(v) for b in branches], merge=par_merge, site=par_site)
            case t.TEach():
                each_body = self.arrow(expr.body)
                each_merge = self.merge_for(expr.merge)
                each_site = self.site("each", expr.span)
                limit = expr.limit
                return lambda vs: AgentMonad.each(vs, each_body, limit=limit, merge=each_merge, site=each_site)
            case t.TLocal():
                inner = self.arrow(expr.body)
                return lambda v: inner(v).local()
            case t.TSubAgent():
                # a sub-agent (§11): the fn makes its state from the caller's (a Defect there has
                # the fn's site and the caller's state), and the `local` gives the caller's back
                agent, make = self.arrow(expr.body), self.arrow(expr.adapter)
                start: AgentMonad[Any, Any, Any] = AgentMonad.get()
                return lambda v: start.then(make).then(AgentMonad.put).then(lambda _: agent(v)).local()
            case t.TCatch():
                body, handler = self.arrow(expr.body), self.arrow(expr.handler)
                caught = error_classes(frozenset(expr.errors))
                return lambda v: body(v).catch(caught, handler)
            case t.TOrElse():
                attempt, fallback = self.arrow(expr.body), self.arrow(expr.fallback)
                return lambda v: attempt(v).orelse(fallback(v))
            case t.TIdentity():
                return AgentMonad.pure
            case t.TMatch():
                return self._match(expr)
            case t.TIf():
                return AgentMonad.branch(self.arrow(expr.condition), self.arrow(expr.then), self.arrow(expr.otherwise))
            case t.TLoop():
                loop_site = self.site("loop", expr.span)
                return AgentMonad.loop(self.arrow(expr.body), expr.bound, value_test(expr.continues), loop_site)
            case t.TRetry():
                attempt = self.arrow(expr.body)
                on = error_classes(frozenset(expr.on)) if expr.on is not None else None
                attempts, backoff = expr.attempts, expr.backoff
                return lambda v: attempt(v).retry(attempts, on=on, backoff=backoff)
            case t.TTimeout():
                timed = self.arrow(expr.body)
                seconds, timeout_site = expr.seconds, self.site("timeout", expr.span)
                return lambda v: timed(v).timeout(seconds, site=timeout_site)
            case t.TBudget():
                return self._budget(expr)
            case t.TSpawn():
                return self._spawn(expr)
            case _:
                assert_never(expr)

    def _spawn(self, expr: t.TSpawn) -> Arrow:
        """``spawn(t) p`` (§12): the runtime's ``Toolbox.spawn``, as generated code calls it, with the
        planner and the toolbox's pipelines run by this interpreter."""
        planner = self.arrow(expr.planner)
        toolbox = self.toolbox(expr.toolbox)
        spawn_site = self.site("spawn", expr.span)

        async def plan(state: Any, request: Any) -> Outcome[Any, Any, Any]:
            return await planner(request).run(state)

        async def spawn(state: Any, value: Any) -> Outcome[Any, Any, Any]:
            return await toolbox.spawn(state, value, plan, spawn_site)

        errors = error_classes(expr.sig.errors)
        # not an effect itself (kind=None): its planner's call and the plan's steps are, as compiled
        return lift_step(spawn, name="spawn", errors=errors, site=spawn_site, is_async=True, kind=None)

    def toolbox(self, name: str) -> Toolbox[Any, Any, Any, Any]:
        """The runtime toolbox of a declaration, whose pipelines this interpreter runs (made once)."""
        made = self._toolboxes.get(name)
        if made is None:
            declared = next(toolbox for toolbox in self.program.toolboxes if toolbox.name == name)
            pipelines: dict[str, Callable[..., Any]] = {
                ref.name: self._pipeline_runner(ref.name) for ref in declared.entries if ref.kind is t.RefKind.PIPELINE
            }
            pipelines.update((ref.name, self._llm(ref.name)) for ref in declared.entries if ref.kind is t.RefKind.LLM)
            made = Toolbox[Any, Any, Any, Any](
                name, self.file, self.program.source, "", pipelines, path=self.program.path
            )
            self._toolboxes[name] = made
        return made

    def _pipeline_runner(self, name: str) -> Callable[[Any, Any], Any]:
        """A pipeline as generated code has it: ``async (state, value) -> Outcome``."""

        arrow = self._pipeline(name)

        async def run(state: Any, value: Any) -> Outcome[Any, Any, Any]:
            return await arrow(value).run(state)

        return run

    def _pipeline(self, name: str) -> Arrow:
        """A pipeline's arrow, looked up at each call (a pipeline may spawn plans over a toolbox
        that lists it): this spec's, or another spec's run by an interpreter of its own (§11)."""
        used = self.uses.get(name)
        if used is None:
            return lambda v: self.pipeline_arrow(name)(v)
        other = self._others.get(used.spec)
        if other is None:
            # the other spec's own implementations: overrides name this spec's declarations
            other = self._others[used.spec] = Interpreter(used.program)
        return lambda v: other.pipeline_arrow(used.pipeline)(v)

    def _budget(self, expr: t.TBudget) -> Arrow:
        """``budget(N) e``: e's run under the runtime's ``AgentMonad.budget`` (``agentmonad.llm.budget(N)``);
        its ``BudgetExceeded`` is an ``Err`` with the state after e's last completed step, as in the
        generated code (a failed step keeps the state it failed with)."""
        inner, tokens = self.arrow(expr.body), expr.tokens
        budget_site = self.site("budget", expr.span)
        return lambda v: inner(v).budget(tokens, site=budget_site)

    def _ask(self, name: str) -> Callable[..., Any]:
        """The async step of an ``ask`` declaration (docs/language.md §15; built once: the template
        is compiled then), asking at the declaration's site as compiled code does."""
        if name in self.overrides:
            return self.overrides[name]
        if name not in self._ask_steps:
            decl = self.asks[name]
            self._ask_steps[name] = ask_step(
                decl.name,
                python_type(decl.sig.output),
                decl.template,
                within=decl.within,
                site=self.site(decl.name, decl.span),
                template_name=decl.template_name,
            )
        return self._ask_steps[name]

    def _llm(self, name: str) -> Callable[..., Any]:
        """The async step of an ``llm`` declaration (built once: the template is compiled then)."""
        if name in self.overrides:
            return self.overrides[name]
        if name not in self._llm_steps:
            decl = self.llms[name]
            self._llm_steps[name] = llm_step(
                self.models[decl.model],
                decl.template,
                python_type(decl.sig.output),
                name=decl.name,
                template_name=decl.template_name,
                stream=decl.stream,  # its partial types made at run time (docs/language.md §14)
            )
        return self._llm_steps[name]

    def _match(self, expr: t.TMatch) -> Arrow:
        """The first arm whose pattern matches runs; the checker proved the arms cover the
        input, so the last arm takes what is left (as in the generated ``else``)."""
        arms = [(_pattern_test(arm.pattern), self.arrow(arm.body)) for arm in expr.arms]

        def dispatch(value: Any) -> AgentMonad[Any, Any, Any]:
            for test, arm in arms[:-1]:
                if test(value):
                    return arm(value)
            return arms[-1][1](value)

        return dispatch

    def _ref(self, ref: t.TRef) -> Arrow:
        site = self.site(ref.name, ref.span)
        match ref.kind:
            case t.RefKind.STEP:
                step = self.steps[ref.name]
                impl = self.implementation(step.name, step.impl.path)
                errors = error_classes(step.sig.errors)
                return lift_step(impl, name=step.name, errors=errors, site=site, is_async=step.is_async)
            case t.RefKind.FN:
                fn = self.fns[ref.name]
                return lift_fn(self.implementation(fn.name, fn.impl.path), name=fn.name, site=site)
            case t.RefKind.PIPELINE if ref.name in self.overrides:
                # a plan's use of a toolbox pipeline (§12): the compiled function, as a step
                errors = error_classes(ref.sig.errors)
                return lift_step(self.overrides[ref.name], name=ref.name, errors=errors, site=site, is_async=True)
            case t.RefKind.PIPELINE:
                return self._pipeline(ref.name)
            case t.RefKind.TOOL:
                decl = self.tools[ref.name]
                if decl.name in self.overrides:
                    impl = self.overrides[decl.name]
                else:
                    server = self.servers[decl.server]
                    impl = tool(StdioServer(server.name, server.command), decl.tool_name, python_type(decl.sig.output))
                errors = error_classes(decl.sig.errors)
                return lift_step(impl, name=decl.name, errors=errors, site=site, is_async=True, kind="tool")
            case t.RefKind.LLM:
                errors = error_classes(self.llms[ref.name].sig.errors)
                return lift_step(self._llm(ref.name), name=ref.name, errors=errors, site=site, is_async=True, kind="model")
            case t.RefKind.ASK:
                # no effect of its own (kind None): asking is the "human" effect agentmonad.human.ask performs
                errors = error_classes(self.asks[ref.name].sig.errors)
                return lift_step(self._ask(ref.name), name=ref.name, errors=errors, site=site, is_async=True, kind=None)
            case _:
                assert_never(ref.kind)


def _has_llms(program: t.Program) -> bool:
    """Does ``program``, or a spec whose pipelines it uses, declare llm steps (its run is then an
    ``llm_scope()``, as a generated pipeline that reaches one opens it)?"""
    seen: set[str] = set()
    stack = [program]
    while stack:
        current = stack.pop()
        if current.llms:
            return True
        for used in current.uses:
            if used.spec not in seen:
                seen.add(used.spec)
                stack.append(used.program)
    return False


def _pattern_test(pattern: t.TPattern) -> Callable[[Any], bool]:
    """Does a value match ``pattern`` (docs/language.md §6)?"""
    match pattern:
        case t.PClass(type=type_):
            return value_test(type_)
        case t.PLiteral(value=literal):
            return value_test(Lit(literal))
        case t.PWildcard():
            return lambda value: True
        case _:
            assert_never(pattern)


async def interpret(
    program: t.Program,
    pipeline: str,
    state: Any,
    value: Any,
    overrides: Mapping[str, Callable[..., Any]] | None = None,
) -> Outcome[Any, Any, Any]:
    """Run ``pipeline`` of ``program`` with the reference interpreter."""
    return await Interpreter(program, overrides).run(pipeline, state, value)
