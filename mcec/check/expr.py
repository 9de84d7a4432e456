"""Inference for pipeline bodies: every expression form of docs/language.md §5.

:class:`ExprChecker` turns a syntax expression into a typed one, bottom-up,
giving every node its :class:`~mcec.check.typed.Sig`. It keeps going after a
problem: a name that does not resolve becomes a *poisoned* reference of type
``Any -> Any ! Any``, which fits everywhere (``Any`` flows both ways, and an
``Any`` error is caught by every ``catch`` and declared by every ``!``), so one
mistake yields one diagnostic rather than a cascade.

Chains are folded left to right without recursion (:meth:`ExprChecker._fold`),
threading the value type, the union of error sets and statefulness; nested
binds and block statements are flattened into one :class:`~mcec.check.typed.TBind`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.control import ControlChecker
from mcec.check.env import CALLABLE_KINDS, Kind
from mcec.check.names import Declared, DeclarationChecker, DeclaredToolbox
from mcec.check.report import Situation
from mcec.diagnostics import DiagnosticSink
from mcec.span import Span
from mcec.check.typed import (
    IDENTITY_FN,
    TFn,
    MergeKind,
    Sig,
    TBind,
    TCatch,
    TEach,
    TExpr,
    TIdentity,
    TLocal,
    TSubAgent,
    TOrElse,
    TPar,
    RefKind,
    TRef,
    TSpawn,
)
from mcec.check.types import (
    ANY,
    MERGE_CONFLICT,
    NONE,
    PLAN_REJECTED,
    PLAN_REQUEST,
    STR,
    Compat,
    Generic,
    Type,
    flows,
    render_errors,
    same,
    union,
)


#: The signature of something that failed to resolve: fits everywhere, see the module docstring.
POISONED = Sig(ANY, ANY, frozenset({ANY}), False)

def describe(expr: syntax.Expr) -> str:
    """How messages name an expression: a reference by its name, a group by its form."""
    match expr:
        case syntax.Ref():
            return f"`{expr.name}`"
        case syntax.Bind():
            return f"the chain ending in {describe(expr.parts[-1])}"
        case syntax.Par():
            return "the `par` group"
        case syntax.Each():
            return "the `each`"
        case syntax.Local() | syntax.SubAgent():
            return "the `local`"
        case syntax.Catch():
            return "the `catch`"
        case syntax.OrElse():
            return "the `orelse`"
        case syntax.Match():
            return "the `match`"
        case syntax.IfElse():
            return "the `if`"
        case syntax.Loop():
            return "the `loop`"
        case syntax.Retry():
            return "the `retry`"
        case syntax.Timeout():
            return "the `timeout`"
        case syntax.Budget():
            return "the `budget`"
        case syntax.Spawn():
            return "the `spawn`"
        case _:
            assert_never(expr)


class ExprChecker:
    """Infers the types of expressions against a file's declarations.

    ``pipeline_sig`` gives the signature of a pipeline referred to by name (its
    body is checked first, since pipelines are checked callees first).
    """

    def __init__(
        self,
        declared: Declared,
        declarations: DeclarationChecker,
        sink: DiagnosticSink,
        pipeline_sig: Callable[[str], Sig],
    ) -> None:
        self.declared = declared
        self.declarations = declarations
        self.sink = sink
        self.pipeline_sig = pipeline_sig
        self.custom_merge = declared.custom_merge
        self.control = ControlChecker(self)

    #: How messages name an expression (:func:`describe`).
    describe = staticmethod(describe)

    # ------------------------------------------------------------ dispatch

    def infer(self, expr: syntax.Expr, given: Type | None = None) -> TExpr:
        """The typed form of ``expr``; problems are reported, never raised.

        ``given`` is the type of the value the context hands ``expr``, when known
        (the output of the step before it, the pipeline's declared input, the
        input of the enclosing group): a ``match`` is checked against it
        (bidirectional checking, docs/language.md §5); everything else infers its
        input from its parts and passes ``given`` on to them.
        """
        match expr:
            case syntax.Ref():
                return self._ref(expr, given)
            case syntax.Bind():
                return self._chain(list(expr.parts), expr.span, given)
            case syntax.Par():
                return self._par(expr, given)
            case syntax.Each():
                return self._each(expr, given)
            case syntax.SubAgent():
                return self._sub_agent(expr, expr.adapter)
            case syntax.Local():
                body = self.infer(expr.body, given)
                return TLocal(body, Sig(body.sig.input, body.sig.output, body.sig.errors, False), expr.span)
            case syntax.Catch():
                return self._catch(expr, given)
            case syntax.OrElse():
                return self._orelse(expr, given)
            case syntax.Match():
                return self.control.match(expr, given)
            case syntax.IfElse():
                return self.control.if_else(expr, given)
            case syntax.Loop():
                return self.control.loop(expr, given)
            case syntax.Retry():
                return self.control.retry(expr, given)
            case syntax.Timeout():
                return self.control.timeout(expr, given)
            case syntax.Budget():
                return self.control.budget(expr, given)
            case syntax.Spawn():
                return self._spawn(expr)
            case _:
                assert_never(expr)

    def infer_body(self, body: syntax.Expr | syntax.Block, declared_input: Type) -> TExpr:
        """A pipeline body; an empty block is the identity on ``declared_input``."""
        if isinstance(body, syntax.Block):
            if not body.statements:
                return TIdentity(Sig(declared_input, declared_input, frozenset(), False), body.span)
            return self._chain([s.expr for s in body.statements], body.span, declared_input)
        return self.infer(body, declared_input)

    # ------------------------------------------------------------ references

    def _ref(self, expr: syntax.Ref, given: Type | None = None) -> TRef | TIdentity:
        name = expr.name
        binding = self.declared.env.lookup(name)
        if binding is None and name == IDENTITY_FN:
            # the standard `id`: what it is given, unchanged (Any where nothing is known, as for a
            # catch that catches nothing)
            passed = ANY if given is None else given
            return TIdentity(Sig(passed, passed, frozenset(), False), expr.span, name)
        if binding is None:
            help = self.declared.env.suggestion(name, CALLABLE_KINDS)
            self.sink.add(report.unknown(f"unknown name `{name}`", expr.span, help))
            return TRef(name, RefKind.FN, POISONED, expr.span)
        match binding.kind:
            case Kind.STEP:
                return TRef(name, RefKind.STEP, self.declared.steps[name].sig, expr.span)
            case Kind.FN:
                return TRef(name, RefKind.FN, self.declared.fns[name].sig, expr.span)
            case Kind.TOOL:
                return TRef(name, RefKind.TOOL, self.declared.tools[name].sig, expr.span)
            case Kind.LLM:
                return TRef(name, RefKind.LLM, self.declared.llms[name].sig, expr.span)
            case Kind.ASK:
                return TRef(name, RefKind.ASK, self.declared.asks[name].sig, expr.span)
            case Kind.PIPELINE:
                return self._pipeline_ref(expr)
            case (
                Kind.FROM_IMPORT | Kind.MODULE | Kind.MODULE_ROOT | Kind.SERVER | Kind.MODEL | Kind.TOOLBOX
                | Kind.BUILTIN_ERROR
            ):
                self.sink.add(report.not_callable(name, binding.kind.article, expr.span))
                return TRef(name, RefKind.FN, POISONED, expr.span)
            case _:
                assert_never(binding.kind)

    def _pipeline_ref(self, expr: syntax.Ref) -> TRef:
        """A use of a pipeline: this spec's, or another spec's that runs on this spec's state
        (MCE028 for one whose state differs: outside ``local(state=f) …`` it would run on this one)."""
        name = expr.name
        sig = self.pipeline_sig(name)
        used = self.declared.uses.get(name)
        if used is not None and not used.own_state:
            self.sink.add(
                report.used_state_differs(
                    name, used.spec, state_text(used.state), state_text(self.declared.state), expr.span
                )
            )
            return TRef(name, RefKind.PIPELINE, POISONED, expr.span)
        return TRef(name, RefKind.PIPELINE, sig, expr.span)

    # ------------------------------------------------------------ plans

    def _spawn(self, expr: syntax.Spawn) -> TExpr:
        """``spawn(t) p`` (§12): the toolbox's plan type, plus ``PlanRejected`` and the planner's errors;
        the planner must take a ``PlanRequest`` and give ``str`` (MCE010), ``t`` must be a toolbox (MCE031)."""
        planner = self.infer(expr.body, PLAN_REQUEST)
        planner_name = describe(expr.body)
        if flows(PLAN_REQUEST, planner.sig.input) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.PLANNER_INPUT,
                    actual=PLAN_REQUEST,
                    expected=planner.sig.input,
                    producer=("", expr.keyword),
                    consumer=(planner_name, expr.body.span),
                    primary=expr.body.span,
                )
            )
        if flows(planner.sig.output, STR) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.PLANNER_OUTPUT,
                    actual=planner.sig.output,
                    expected=STR,
                    producer=("", expr.keyword),
                    consumer=(planner_name, expr.body.span),
                    primary=expr.body.span,
                )
            )
        toolbox = self._toolbox_of(expr.toolbox)
        if toolbox is None:
            return TSpawn(expr.toolbox.text, planner, POISONED, expr.span)
        errors = toolbox.errors | planner.sig.errors | {PLAN_REJECTED}
        stateful = planner.sig.stateful or self.toolbox_stateful(toolbox)
        return TSpawn(expr.toolbox.text, planner, Sig(toolbox.input, toolbox.output, errors, stateful), expr.span)

    def _toolbox_of(self, name: syntax.Name) -> DeclaredToolbox | None:
        """The toolbox ``spawn(NAME)`` names, or None after MCE031 (or the name's own report)."""
        binding = self.declared.env.lookup(name.text)
        toolbox = self.declared.toolboxes.get(name.text)
        if binding is not None and binding.kind is Kind.TOOLBOX and toolbox is not None:
            return toolbox
        if binding is None:
            help = self.declared.env.suggestion(name.text, (Kind.TOOLBOX,))
            message = f"unknown toolbox `{name.text}`: `spawn(…)` names a declared `toolbox`"
        else:
            help = None
            message = f"`{name.text}` is {binding.kind.article}, not a toolbox: `spawn(…)` names a declared `toolbox`"
        self.sink.add(
            report.outside_toolbox(
                message,
                name.span,
                help=help or "declare `toolbox t : A -> B ! E = n1, n2, …` and write `spawn(t) planner`",
            )
        )
        return None

    def toolbox_stateful(self, toolbox: DeclaredToolbox) -> bool:
        """May a plan over ``toolbox`` change state? Iff an entry may: a step, or an llm step,
        a pipeline of this file (its body may be checked later), or a used pipeline that does."""
        for entry in toolbox.decl.entries:
            binding = self.declared.env.bindings.get(entry.text)
            if binding is None:
                continue
            if binding.kind is Kind.STEP:
                return True
            if binding.kind is Kind.LLM and entry.text in self.declared.llms:
                if self.declared.llms[entry.text].sig.stateful:
                    return True
            if binding.kind is Kind.PIPELINE:
                used = self.declared.uses.get(entry.text)
                if used is None or used.sig.stateful:
                    return True
        return False

    # ------------------------------------------------------------ sub-agents

    def _sub_agent(self, expr: syntax.SubAgent, adapter: syntax.Name) -> TExpr:
        """``local(state=f) p`` (§11): ``f`` a ``fn`` from this spec's state to the state of
        ``p``'s spec, ``p`` a pipeline of another spec; MCE030 for any part that does not fit."""
        fn = self._adapter_fn(adapter)
        body = expr.body
        used = self.declared.uses.get(body.name) if isinstance(body, syntax.Ref) else None
        if used is None or not isinstance(body, syntax.Ref):
            if isinstance(body, syntax.Ref) and body.name in self.declared.poisoned:
                pass  # an import already reported; nothing more to say here
            elif isinstance(body, syntax.Ref) and self.declared.env.lookup(body.name) is None:
                self.infer(body)  # the unknown name's own MCE001
            else:
                self.sink.add(
                    report.adapter_misfit(
                        f"the body of `local(state={adapter.text}) …` is {describe(body)}, not a pipeline of another spec",
                        body.span,
                        help="only a pipeline of another spec has a state of its own; "
                        "to run an expression of this spec and keep this state, write `local e`",
                    )
                )
            return TLocal(TRef(adapter.text, RefKind.FN, POISONED, body.span), POISONED, expr.span)
        self.declared.env.lookup(body.name)  # counts as a use of the import
        sig = self.pipeline_sig(body.name)
        ref = TRef(body.name, RefKind.PIPELINE, sig, body.span)
        whole = Sig(sig.input, sig.output, sig.errors, False)
        if fn is None:
            return TLocal(ref, whole, expr.span)
        ours, theirs = self.declared.state, used.state
        fits = True
        if not _same_state(fn.sig.input, ours):
            fits = False
            self.sink.add(
                report.adapter_misfit(
                    f"adapter `{adapter.text}` takes `{fn.sig.input}`, but this spec's state is `{state_text(ours)}`",
                    adapter.span,
                    help=f"an adapter makes the sub-agent's state from this spec's: declare it `fn {adapter.text} : "
                    f"{state_text(ours)} -> {state_text(theirs)}`",
                )
            )
        if not _same_state(fn.sig.output, theirs):
            fits = False
            self.sink.add(
                report.adapter_misfit(
                    f"adapter `{adapter.text}` makes `{fn.sig.output}`, but pipeline `{body.name}` of "
                    f"`{used.spec}` runs on state `{state_text(theirs)}`",
                    adapter.span,
                    help=f"declare it `fn {adapter.text} : {state_text(ours)} -> {state_text(theirs)}`",
                )
            )
        if not fits:
            return TLocal(ref, whole, expr.span)
        return TSubAgent(TRef(adapter.text, RefKind.FN, fn.sig, adapter.span), ref, whole, expr.span)

    def _adapter_fn(self, adapter: syntax.Name) -> TFn | None:
        """The ``fn`` that ``local(state=NAME)`` names, or None after MCE030 (or the name's own report)."""
        name = adapter.text
        binding = self.declared.env.lookup(name)
        if binding is None:
            help = self.declared.env.suggestion(name, (Kind.FN,))
            self.sink.add(
                report.adapter_misfit(
                    f"unknown adapter `{name}`: `local(state=…)` names a declared `fn`",
                    adapter.span,
                    help=help or "declare a `fn` from this spec's state to the sub-agent's, and name it here",
                )
            )
            return None
        if binding.kind is not Kind.FN or name not in self.declared.fns:
            if name not in self.declared.poisoned:
                self.sink.add(
                    report.adapter_misfit(
                        f"adapter `{name}` is {binding.kind.article}, not a `fn`",
                        adapter.span,
                        help="an adapter is a pure `fn` from this spec's state to the sub-agent's",
                    )
                )
            return None
        return self.declared.fns[name]

    # ------------------------------------------------------------ chains

    def _flatten(self, exprs: list[syntax.Expr]) -> list[syntax.Expr]:
        """Inline nested binds (``(a >>= b) >>= c``, block statements that are chains):
        bind is associative, and one flat chain is what codegen wants."""
        flat: list[syntax.Expr] = []
        stack = list(reversed(exprs))
        while stack:
            item = stack.pop()
            if isinstance(item, syntax.Bind):
                stack.extend(reversed(item.parts))
            else:
                flat.append(item)
        return flat

    def _chain(self, exprs: list[syntax.Expr], span: Span, given: Type | None = None) -> TExpr:
        parts = self._flatten(exprs)
        typed: list[TExpr] = []
        for part in parts:  # each part is given what the one before it produces
            typed.append(self.infer(part, typed[-1].sig.output if typed else given))
        if len(typed) == 1:
            return typed[0]
        return TBind(tuple(typed), self._fold(parts, typed), span)

    def _fold(self, parts: list[syntax.Expr], typed: list[TExpr]) -> Sig:
        """Thread a chain left to right: each output must flow into the next input (MCE010)."""
        first = typed[0].sig
        output = first.output
        errors = set(first.errors)
        stateful = first.stateful
        for index in range(1, len(typed)):
            sig = typed[index].sig
            if flows(output, sig.input) is Compat.NO:
                producer, consumer = parts[index - 1], parts[index]
                self.sink.add(
                    report.mismatch(
                        Situation.BIND,
                        actual=output,
                        expected=sig.input,
                        producer=(describe(producer), producer.span),
                        consumer=(describe(consumer), consumer.span),
                        primary=consumer.span,
                    )
                )
            output = sig.output
            if sig.errors:
                errors |= sig.errors
            stateful = stateful or sig.stateful
        return Sig(first.input, output, frozenset(errors), stateful)

    # ------------------------------------------------------------ par and each

    def _par(self, expr: syntax.Par, given: Type | None = None) -> TPar:
        if len(expr.branches) < 2:
            self.sink.add(report.par_too_small(len(expr.branches), expr.keyword))
        mark = len(self.sink.items)
        branches = tuple(self.infer(b, given) for b in expr.branches)
        declared = next((b.sig.input for b in branches if b.sig.input not in (ANY, given)), None)
        if given is not None and declared is not None and flows(given, declared) is not Compat.NO:
            # A branch that takes just what it is given (a `match`, an `if`) took the narrow type
            # of its context — `Literal[0]` in the arm `0 => …` — beside a branch declared on the
            # wider one (`int`), which the given value is too: the group takes the wider type, so
            # those branches are checked again given it (their first diagnostics dropped).
            del self.sink.items[mark:]
            branches = tuple(self.infer(b, declared if t.sig.input == given else given) for b, t in zip(expr.branches, branches))
        # The group's input is the first branch input that says something (not Any);
        # every branch must take that same type (MCE011).
        chosen = 0
        for index, branch in enumerate(branches):
            if branch.sig.input != ANY:
                chosen = index
                break
        input_type = branches[chosen].sig.input if branches else ANY
        for index, branch in enumerate(branches):
            if index != chosen and same(branch.sig.input, input_type) is Compat.NO:
                first, this = expr.branches[chosen], expr.branches[index]
                self.sink.add(
                    report.mismatch(
                        Situation.PAR_INPUT,
                        actual=branch.sig.input,
                        expected=input_type,
                        producer=(describe(first), first.span),
                        consumer=(describe(this), this.span),
                        primary=this.span,
                    )
                )
        errors: set[Type] = set()
        for branch in branches:
            errors |= branch.sig.errors
        stateful_count = len([b for b in branches if b.sig.stateful])
        merge = self._merge_kind(stateful_count)
        if merge == "by_field":
            errors.add(MERGE_CONFLICT)
        output = Generic("tuple", tuple([b.sig.output for b in branches])) if branches else ANY
        sig = Sig(input_type, output, frozenset(errors), stateful_count > 0)
        return TPar(branches, merge, sig, expr.span)

    def _merge_kind(self, stateful_runs: int) -> MergeKind:
        """How a group with that many stateful runs merges their states (see :data:`MergeKind`)."""
        if stateful_runs == 0:
            return "none"
        if self.custom_merge:
            return "declared"
        return "one_writer" if stateful_runs == 1 else "by_field"

    def _each(self, expr: syntax.Each, given: Type | None = None) -> TEach:
        if expr.limit is not None and expr.limit < 1:
            self.sink.add(report.limit_too_small(expr.limit, expr.limit_span or expr.keyword))
        element = given.args[0] if isinstance(given, Generic) and given.head == "list" else None
        body = self.infer(expr.body, element)
        errors = body.sig.errors
        # the body runs once per element: a stateful body is any number of writers
        merge = self._merge_kind(2 if body.sig.stateful else 0)
        if merge == "by_field":
            errors = errors | {MERGE_CONFLICT}
        sig = Sig(Generic("list", (body.sig.input,)), Generic("list", (body.sig.output,)), errors, body.sig.stateful)
        return TEach(body, expr.limit, merge, sig, expr.span)

    # ------------------------------------------------------------ catch and orelse

    def _catch(self, expr: syntax.Catch, given: Type | None = None) -> TCatch:
        body = self.infer(expr.body, given)
        caught = self.declarations.errors_of(expr.errors, "in `catch`")
        handler = self.infer(expr.handler, union([t for t, _ in caught]) if caught else None)
        body_errors = body.sig.errors
        for caught_type, span in caught:
            # A caught type can match an error e of the body when the two classes overlap: e
            # may be a caught one, or the caught one a kind of e (a subclass of a declared error).
            if not any(flows(e, caught_type) is not Compat.NO or flows(caught_type, e) is not Compat.NO for e in body_errors):
                self.sink.add(
                    report.impossible_catch(
                        caught_type, span, expr.body.span, render_errors(body_errors) if body_errors else None
                    )
                )
        caught_types = tuple(dict.fromkeys(t for t, _ in caught))
        caught_union = union(caught_types)
        errors_span = expr.errors[0].span.cover(expr.errors[-1].span) if expr.errors else expr.keyword
        if caught_types and flows(caught_union, handler.sig.input) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.CATCH_INPUT,
                    actual=caught_union,
                    expected=handler.sig.input,
                    producer=("the caught errors", errors_span),
                    consumer=(describe(expr.handler), expr.handler.span),
                    primary=expr.handler.span,
                )
            )
        if flows(handler.sig.output, body.sig.output) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.CATCH_OUTPUT,
                    actual=handler.sig.output,
                    expected=body.sig.output,
                    producer=(describe(expr.body), expr.body.span),
                    consumer=(describe(expr.handler), expr.handler.span),
                    primary=expr.handler.span,
                )
            )
        # Only errors certainly matched are removed; one that might not match stays.
        remaining = {e for e in body_errors if not any(flows(e, c) is Compat.YES for c in caught_types)}
        errors = frozenset(remaining | handler.sig.errors)
        sig = Sig(body.sig.input, body.sig.output, errors, body.sig.stateful or handler.sig.stateful)
        return TCatch(body, caught_types, handler, sig, expr.span)

    def _orelse(self, expr: syntax.OrElse, given: Type | None = None) -> TOrElse:
        body = self.infer(expr.body, given)
        # the fallback runs on the original input, as the body took it: a fallback that takes
        # what it is given gets the body's input type, which the value given (a `Literal[0]`
        # of a match arm, say) flows into
        fallback = self.infer(expr.fallback, body.sig.input if given is None or body.sig.input != ANY else given)
        if flows(body.sig.input, fallback.sig.input) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.ORELSE_INPUT,
                    actual=body.sig.input,
                    expected=fallback.sig.input,
                    producer=(describe(expr.body), expr.body.span),
                    consumer=(describe(expr.fallback), expr.fallback.span),
                    primary=expr.fallback.span,
                )
            )
        if flows(fallback.sig.output, body.sig.output) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.ORELSE_OUTPUT,
                    actual=fallback.sig.output,
                    expected=body.sig.output,
                    producer=(describe(expr.body), expr.body.span),
                    consumer=(describe(expr.fallback), expr.fallback.span),
                    primary=expr.fallback.span,
                )
            )
        sig = Sig(body.sig.input, body.sig.output, fallback.sig.errors, body.sig.stateful or fallback.sig.stateful)
        return TOrElse(body, fallback, sig, expr.span)


def state_text(state: Type | None) -> str:
    """A state type as messages name it (a spec without ``state`` runs on ``None``)."""
    return "None" if state is None else str(state)


def _same_state(declared: Type, state: Type | None) -> bool:
    """Is the type an adapter declares the state type ``state`` (``None`` for a spec without one)?
    Only a definite "no" is an error: an unknown relation is left to mypy, as everywhere."""
    return same(declared, NONE if state is None else state) is not Compat.NO
