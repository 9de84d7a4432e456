"""Checking plans (docs/language.md §12): `.mce` expression text written at run time, over a toolbox.

A plan is checked as the body of a pipeline whose declared type is the
toolbox's, by the same :class:`~mcec.check.expr.ExprChecker` that checks every
pipeline body, with the same diagnostics. Only the scope differs: a
:class:`PlanScope` is made once per toolbox from the whole spec's check, and
sees the toolbox's entries and the spec's types and errors, nothing else.

Before typing, one iterative walk over the plan enforces what a plan may not
do (MCE031: name a step, pipeline … the toolbox does not list, a dotted Python
path, another toolbox) and how big it may be (MCE032); the parser has already
refused declarations, imports and ``;``. After typing, the plan's *work* (the
step runs it may make, :func:`plan_work`: nested loop and retry bounds
multiply) is held to :data:`MAX_PLAN_WORK` (MCE032 too).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Final, assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.env import CALLABLE_KINDS, Env, Kind
from mcec.check.expr import ExprChecker, describe
from mcec.check.names import DeclarationChecker, Declared, DeclaredToolbox
from mcec.check.pipelines import PipelineChecker, find_origin
from mcec.check.pyindex import PythonIndex
from mcec.check.report import Situation
from mcec.check import typed as t
from mcec.check.typed import Program, TExpr, TToolbox
from mcec.check.types import BOOL, NEVER, NONE, Compat, Type, error_union, flows, render_errors, same, sorted_errors, union
from mcec.diagnostics import Diagnostic, DiagnosticSink, Label
from mcec.span import SourceFile, Span

__all__ = [
    "MAX_PLAN_CHARS", "MAX_PLAN_NAMES", "MAX_PLAN_DEPTH", "MAX_PLAN_ROUNDS", "MAX_PLAN_ATTEMPTS", "MAX_PLAN_WORK",
    "PlanScope", "PlanCheck", "plan_scopes", "check_plan", "plan_work",
]  # fmt: skip

#: The bounds of a plan (MCE032): its text, the names it uses, how deep it nests.
MAX_PLAN_CHARS: Final = 20_000
MAX_PLAN_NAMES: Final = 500
MAX_PLAN_DEPTH: Final = 32
#: The most rounds of a plan's ``loop(N)`` and attempts of its ``retry(N)`` (MCE032).
MAX_PLAN_ROUNDS: Final = 1_000
MAX_PLAN_ATTEMPTS: Final = 10
#: The most step runs a plan may make on one value (MCE032, :func:`plan_work`): the bounds of
#: nested ``loop`` and ``retry`` multiply, and six ``retry(10)`` around a ``loop(1000)`` is 10**9.
MAX_PLAN_WORK: Final = 100_000

@dataclass(frozen=True, slots=True)
class PlanCheck:
    """A checked plan: its typed body (None when rejected) and every diagnostic, sorted."""

    body: TExpr | None
    diagnostics: tuple[Diagnostic, ...]


class PlanScope:
    """What plans over one toolbox are checked in: the spec's declarations, restricted."""

    def __init__(
        self,
        program: Program,
        toolbox: TToolbox,
        declared: DeclaredToolbox,
        scope: Declared,
        declarations: DeclarationChecker,
        pipelines: PipelineChecker,
    ) -> None:
        self.program = program
        self.toolbox = toolbox
        self.declared_toolbox = declared
        self.full = scope
        self.declarations = declarations
        self.pipelines = pipelines
        entries = {ref.name for ref in toolbox.entries}
        bindings = {
            name: binding
            for name, binding in scope.env.bindings.items()
            if (binding.kind in CALLABLE_KINDS and name in entries)
            or binding.kind in (Kind.FROM_IMPORT, Kind.BUILTIN_ERROR)
        }
        #: The declarations a plan sees: the entries, the imported names (types) and the built-in errors.
        self.restricted = dataclasses.replace(scope, env=Env(bindings=bindings, index=scope.env.index))

    @property
    def name(self) -> str:
        """The toolbox's name."""
        return self.toolbox.name

    @functools.cached_property
    def listing(self) -> str:
        """The toolbox's entries, one ``name : A -> B ! E`` line each (what a planner is told;
        made once: every spawn over the toolbox tells it)."""
        return "\n".join(f"{ref.name} : {ref.sig}" for ref in self.toolbox.entries)

    @functools.cached_property
    def signature(self) -> str:
        """The type every plan must have."""
        return str(self.toolbox.sig)


def plan_scopes(
    module: syntax.Module, source: SourceFile, index: PythonIndex | None
) -> tuple[dict[str, PlanScope], tuple[Diagnostic, ...]]:
    """The scope of each toolbox of ``module`` (empty when the spec has errors), and the spec's diagnostics.

    This is :func:`mcec.check.check` keeping what it made on the way: the
    declarations and the checked pipelines, which a plan is checked against
    (llm templates are not read: see :class:`~mcec.check.names.DeclarationChecker`).
    """
    from mcec.check import build_program  # the one place a Program is assembled

    sink = DiagnosticSink()
    # the templates of llm steps are not read: plans do not render them, and the generated
    # module (whose llm steps a plan calls) holds them, checked when it was generated
    declarations = DeclarationChecker(module, sink, index, read_templates=False)
    declared = declarations.run()
    pipelines = PipelineChecker(declared, declarations, sink)
    typed = pipelines.run()
    diagnostics = sink.sorted()
    if any(d.is_error for d in diagnostics):
        return {}, diagnostics
    program = build_program(module, source, declared, typed, pipelines.toolboxes)
    scopes = {
        toolbox.name: PlanScope(
            program, toolbox, declared.toolboxes[toolbox.name], declared, declarations, pipelines
        )
        for toolbox in pipelines.toolboxes
    }
    return scopes, diagnostics


def check_plan(scope: PlanScope, source: SourceFile) -> PlanCheck:
    """Parse and check plan text against ``scope`` (never raises on any text).

    Rejected (``body`` None) when any diagnostic is an error; warnings are kept.
    """
    text = source.text
    if len(text) > MAX_PLAN_CHARS:
        problem = report.plan_too_big(
            f"this plan has {len(text):,} characters; a plan may have at most {MAX_PLAN_CHARS:,}",
            source.span(0, 0),
            help="write a shorter plan: name what repeats with `each`",
        )
        return PlanCheck(None, (problem,))
    parsed = syntax.parse_plan(source)
    if parsed.expr is None:
        return PlanCheck(None, tuple(_for_a_plan(scope, d) for d in parsed.diagnostics))
    confined, repeats = _confine(scope, parsed.expr)
    if confined:
        return PlanCheck(None, tuple(sorted(dict.fromkeys(confined), key=Diagnostic.sort_key)))
    sink = DiagnosticSink()
    sink.extend(parsed.diagnostics)
    declarations = scope.declarations
    outer, declarations.sink = declarations.sink, sink  # types in patterns and `catch` report here
    try:
        checker = ExprChecker(scope.restricted, declarations, sink, scope.pipelines.sig_of)
        body = checker.infer_body(parsed.expr, scope.toolbox.sig.input)
        _check_ends(scope, body, parsed.expr, sink)
        _prove(scope, body, sink)
        if repeats:  # without a loop or a retry, a plan runs each name at most once (≤ MAX_PLAN_NAMES)
            _check_work(body, sink)
    finally:
        declarations.sink = outer
    diagnostics = tuple(_for_a_plan(scope, d) for d in sink.sorted())
    if any(d.is_error for d in diagnostics):
        return PlanCheck(None, diagnostics)
    return PlanCheck(body, diagnostics)


def _for_a_plan(scope: PlanScope, diagnostic: Diagnostic) -> Diagnostic:
    """A diagnostic whose help is for a spec's author (declare an error, rename a declaration)
    given the help a planner can act on: a plan declares nothing."""
    match diagnostic.code:
        case "MCE018":
            declared = sorted(str(t) for t in scope.full.error_types)
            errors = ", ".join(f"`{name}`" for name in declared) or "none"
            help = f"a plan can catch the errors its toolbox's entries fail with, and the spec declares {errors}"
        case "MCE016":
            help = f"a plan uses the toolbox's names: {', '.join(f'`{r.name}`' for r in scope.toolbox.entries)}"
        case _:
            return diagnostic
    return dataclasses.replace(diagnostic, help=help)


def _confine(scope: PlanScope, plan: syntax.Expr) -> tuple[list[Diagnostic], bool]:
    """MCE031 for every name outside the toolbox, MCE032 beyond the bounds (an iterative walk);
    and whether the plan has a ``loop`` or a ``retry`` (only those multiply its work)."""
    found: list[Diagnostic] = []
    env = scope.full.env
    entries = {ref.name for ref in scope.toolbox.entries}
    listed = ", ".join(f"`{name}`" for name in sorted(entries)) or "nothing"
    help = f"toolbox `{scope.name}` lists {listed}"
    names = 0
    repeats = False
    deepest: syntax.Expr | None = None
    stack: list[tuple[syntax.Expr, int]] = [(plan, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_PLAN_DEPTH and deepest is None:
            deepest = node
        match node:
            case syntax.Ref():
                names += 1
                binding = env.bindings.get(node.name)
                if node.name not in entries and binding is not None and binding.kind in CALLABLE_KINDS:
                    found.append(
                        report.outside_toolbox(
                            f"`{node.name}` is {binding.kind.article} of the spec, but toolbox "
                            f"`{scope.name}` does not list it: a plan may use only its toolbox",
                            node.span,
                            help=help,
                        )
                    )
            case syntax.SubAgent():
                if node.adapter.text not in entries:
                    found.append(
                        report.outside_toolbox(
                            f"adapter `{node.adapter.text}` is not in toolbox `{scope.name}`",
                            node.adapter.span,
                            help=help,
                        )
                    )
            case syntax.Loop():
                repeats = True
                if node.bound > MAX_PLAN_ROUNDS:
                    found.append(
                        report.plan_too_big(
                            f"`loop({node.bound})` in a plan: a plan's loop may run at most {MAX_PLAN_ROUNDS:,} rounds",
                            node.bound_span,
                            help=f"write `loop({MAX_PLAN_ROUNDS})` or fewer",
                        )
                    )
            case syntax.Retry():
                repeats = True
                if node.attempts > MAX_PLAN_ATTEMPTS:
                    found.append(
                        report.plan_too_big(
                            f"`retry({node.attempts})` in a plan: a plan's retry may make at most {MAX_PLAN_ATTEMPTS} attempts",
                            node.attempts_span,
                            help=f"write `retry({MAX_PLAN_ATTEMPTS})` or fewer",
                        )
                    )
                found.extend(_python_paths(node.on or ()))
            case syntax.Spawn():
                found.append(
                    report.outside_toolbox(
                        "a plan cannot spawn plans: it runs only what its toolbox lists",
                        node.keyword,
                        help=help,
                    )
                )
            case syntax.Catch():
                found.extend(_python_paths(node.errors))
            case syntax.Match():
                for arm in node.arms:
                    pattern = arm.pattern
                    if isinstance(pattern, syntax.QualName):
                        found.append(
                            report.outside_toolbox(
                                "a plan cannot name a Python path: a pattern is a class the spec imports",
                                pattern.span,
                                help="write the class by the name the spec imports it as",
                            )
                        )
            case (
                syntax.Bind() | syntax.Par() | syntax.Each() | syntax.Local() | syntax.OrElse() | syntax.IfElse()
                | syntax.Timeout() | syntax.Budget()
            ):
                pass  # no name or bound of its own: its parts are walked below
            case _:
                # a new node kind must say here what a plan may do with it
                assert_never(node)
        stack.extend((child, depth + 1) for child in syntax.expr_children(node))
    if names > MAX_PLAN_NAMES:
        found.append(
            report.plan_too_big(
                f"this plan uses {names:,} names; a plan may use at most {MAX_PLAN_NAMES}",
                plan.span,
                help="write a smaller plan: `each` runs one part over many values",
            )
        )
    if deepest is not None:
        found.append(
            report.plan_too_big(
                f"this plan nests more than {MAX_PLAN_DEPTH} levels deep",
                deepest.span,
                help="write a flatter plan: a chain `a >>= b >>= c` does not nest",
            )
        )
    return found, repeats


def _python_paths(errors: tuple[syntax.TypeExpr, ...]) -> list[Diagnostic]:
    """MCE031 for every dotted Python path among the error types a ``catch`` or ``retry`` names."""
    return [
        report.outside_toolbox(
            "a plan cannot name a Python path: an error is a type the spec declares or imports",
            path.span,
            help="write the error by the name the spec declares it as",
        )
        for path in _dotted(errors)
    ]


def _dotted(types: tuple[syntax.TypeExpr, ...]) -> list[syntax.QualName]:
    """The dotted names in ``types`` (``impl.Bad``, ``list[impl.Bad]``), outermost first."""
    found: list[syntax.QualName] = []
    stack = list(reversed(types))
    while stack:
        node = stack.pop()
        head = node.head if isinstance(node, syntax.TypeApply) else node
        if isinstance(head, syntax.QualName) and len(head.parts) > 1:
            found.append(head)
        stack.extend(reversed(syntax.type_children(node)))
    return found


def _check_ends(scope: PlanScope, body: TExpr, plan: syntax.Expr, sink: DiagnosticSink) -> None:
    """MCE012 when the plan does not have the toolbox's input and output types, MCE013 for an
    error the toolbox does not declare (the labels point at the toolbox's declaration) — each
    when it is *not proved*: a plan has no mypy behind it (:func:`_unproved`)."""
    toolbox = scope.toolbox
    decl = scope.declared_toolbox.decl
    sig = toolbox.sig
    answer = flows(sig.input, body.sig.input)
    if answer is not Compat.YES:
        problem = report.mismatch(
            Situation.PLAN_INPUT,
            actual=sig.input,
            expected=body.sig.input,
            producer=(toolbox.name, decl.input.span),
            consumer=(_describe_first(plan), _first(plan).span),
            primary=_first(plan).span,
        )
        sink.add(problem if answer is Compat.NO else _unproved(problem, sig.input, body.sig.input))
    answer = flows(body.sig.output, sig.output)
    if answer is not Compat.YES:
        problem = report.mismatch(
            Situation.PLAN_OUTPUT,
            actual=body.sig.output,
            expected=sig.output,
            producer=("", _last(plan).span),
            consumer=(toolbox.name, decl.output.span),
            primary=_last(plan).span,
        )
        sink.add(problem if answer is Compat.NO else _unproved(problem, body.sig.output, sig.output))
    allowed = error_union(sig.errors)
    declared_span: Span = decl.errors.span if decl.errors is not None else decl.name.span
    for error_type in sorted_errors(body.sig.errors):
        answer = flows(error_type, allowed)
        if answer is Compat.YES:
            continue
        kind, what, span = find_origin(body, error_type)
        declares = f"declares {render_errors(sig.errors)}" if sig.errors else "declares no errors"
        problem = report.error_outside_toolbox(
            error_type,
            toolbox.name,
            span,
            (Label(span, kind.value.format(what=what, error=error_type)), Label(declared_span, declares)),
        )
        if answer is Compat.UNKNOWN:
            problem = dataclasses.replace(
                _unproved(problem, error_type, allowed),
                message=f"this plan may fail with `{error_type}`, which toolbox `{toolbox.name}` declares only if "
                f"`{error_type} ≤ {allowed}`, and that cannot be proved: a plan runs only what is proved",
            )
        sink.add(problem)


def _unproved(problem: Diagnostic, actual: Type, expected: Type) -> Diagnostic:
    """``problem`` (the diagnostic of a definite "no") said of a relation the checker cannot
    settle: in a spec mypy settles it (MCE100), but a plan has no mypy behind it, so a plan runs
    only when every relation in it is proved (docs/language.md §12)."""
    return dataclasses.replace(
        problem,
        message=f"{problem.message}, and `{actual} ≤ {expected}` cannot be proved: a plan runs only what is proved",
        help=f"nothing the spec says relates {actual} to {expected} (a type alias, a Protocol or an ABC, "
        "a class whose bases cannot be read): use entries whose declared types are the same, or known subclasses",
    )


def _prove(scope: PlanScope, body: TExpr, sink: DiagnosticSink) -> None:
    """Every relation inside the plan that the checker answered *unknown* (a definite "no" is
    already reported, by the :class:`~mcec.check.expr.ExprChecker`) is an error here: a value
    passed from part to part, into a branch, a handler or a fallback (an iterative walk)."""
    stack = [body]
    while stack:
        node = stack.pop()
        if type(node) is t.TRef:
            continue  # most of a plan, and nothing passes inside a reference
        stack.extend(t.children(node))
        found = _unproved_in(scope, node)
        if found:
            sink.extend(found)


def _unproved_in(scope: PlanScope, node: TExpr) -> list[Diagnostic]:
    """The relations of ``node`` itself (not of the parts inside it) that are not proved."""
    found: list[Diagnostic] = []
    match node:
        case t.TBind(parts=parts):
            for before, part in zip(parts, parts[1:]):
                _ask(found, Situation.BIND, before.sig.output, part.sig.input, before, part)
        case t.TPar(branches=branches):
            given = node.sig.input
            first = next((b for b in branches if b.sig.input == given), branches[0])
            for branch in branches:
                if same(branch.sig.input, given) is not Compat.NO:  # a "no" is MCE011 already
                    _ask(found, Situation.PAR_INPUT, given, branch.sig.input, first, branch, swap=True)
        case t.TCatch(body=body, handler=handler):
            if node.errors:
                caught = union(node.errors)
                _ask(found, Situation.CATCH_INPUT, caught, handler.sig.input, ("the caught errors", node.span), handler)
            _ask(found, Situation.CATCH_OUTPUT, handler.sig.output, body.sig.output, body, handler)
        case t.TOrElse(body=body, fallback=fallback):
            _ask(found, Situation.ORELSE_INPUT, body.sig.input, fallback.sig.input, body, fallback)
            _ask(found, Situation.ORELSE_OUTPUT, fallback.sig.output, body.sig.output, body, fallback)
        case t.TMatch():
            for arm in node.arms:
                if arm.narrowed != NEVER:
                    _ask(found, Situation.MATCH_ARM, arm.narrowed, arm.body.sig.input, ("the pattern", arm.span), arm.body)
        case t.TIf(condition=condition):
            given = node.sig.input
            _ask(found, Situation.IF_CONDITION_INPUT, given, condition.sig.input, ("the `if`", node.span), condition)
            _ask(found, Situation.IF_CONDITION, condition.sig.output, BOOL, condition, condition)
            for branch in (node.then, node.otherwise):
                _ask(found, Situation.IF_BRANCH, given, branch.sig.input, ("the `if`", node.span), branch)
        case t.TSubAgent(adapter=adapter, body=body):
            found.extend(_adapter_unproved(scope, adapter, body))
        case t.TLocal() | t.TRef() | t.TIdentity() | t.TEach() | t.TLoop() | t.TRetry() | t.TTimeout() | t.TBudget():
            pass  # nothing passes between parts here (a loop's round is tested at run time)
        case t.TSpawn():
            pass  # a plan cannot spawn (MCE031)
        case _:
            assert_never(node)
    return found


def _ask(
    found: list[Diagnostic],
    situation: Situation,
    actual: Type,
    expected: Type,
    producer: TExpr | tuple[str, Span],
    consumer: TExpr,
    *,
    swap: bool = False,
) -> None:
    """Add to ``found`` the diagnostic of ``actual ≤ expected`` in ``situation`` when the checker
    cannot settle it (a definite "no" is the ExprChecker's to report); ``swap`` for a wording whose
    sides are the other way round (a ``par``'s: the branch "takes" what the group is given)."""
    if flows(actual, expected) is not Compat.UNKNOWN:
        return
    side = producer if isinstance(producer, tuple) else (_describe_typed(producer), producer.span)
    problem = report.mismatch(
        situation,
        actual=expected if swap else actual,
        expected=actual if swap else expected,
        producer=side,
        consumer=(_describe_typed(consumer), consumer.span),
        primary=consumer.span,
    )
    found.append(_unproved(problem, actual, expected))


def _adapter_unproved(scope: PlanScope, adapter: t.TRef, body: t.TRef) -> list[Diagnostic]:
    """``local(state=f) p``: ``f`` must be proved to take this spec's state and make ``p``'s."""
    used = scope.full.uses.get(body.name)
    if used is None:
        return []
    ours = NONE if scope.full.state is None else scope.full.state
    theirs = NONE if used.state is None else used.state
    found = []
    sides = ((adapter.sig.input, ours, "this spec's state"), (adapter.sig.output, theirs, f"the state of `{body.name}`"))
    for declared, state, what in sides:
        if same(declared, state) is Compat.UNKNOWN:
            found.append(
                report.adapter_misfit(
                    f"adapter `{adapter.name}` must be proved to fit {what}, {state}, but `{declared} = {state}` "
                    "cannot be proved: a plan runs only what is proved",
                    adapter.span,
                    help=f"declare `{adapter.name}` with the very state types of both specs",
                )
            )
    return found


def _describe_typed(expr: TExpr) -> str:
    """How messages name a typed part of a plan (as :func:`~mcec.check.expr.describe` names syntax)."""
    match expr:
        case t.TRef():
            return f"`{expr.name}`"
        case t.TBind():
            return f"the chain ending in {_describe_typed(expr.parts[-1])}"
        case t.TIdentity():
            return "the empty block"
        case t.TPar():
            return "the `par` group"
        case t.TEach():
            return "the `each`"
        case t.TLocal() | t.TSubAgent():
            return "the `local`"
        case t.TCatch():
            return "the `catch`"
        case t.TOrElse():
            return "the `orelse`"
        case t.TMatch():
            return "the `match`"
        case t.TIf():
            return "the `if`"
        case t.TLoop():
            return "the `loop`"
        case t.TRetry():
            return "the `retry`"
        case t.TTimeout():
            return "the `timeout`"
        case t.TBudget():
            return "the `budget`"
        case t.TSpawn():
            return "the `spawn`"
        case _:
            assert_never(expr)


def _first(plan: syntax.Expr) -> syntax.Expr:
    while isinstance(plan, syntax.Bind):
        plan = plan.parts[0]
    return plan


def _last(plan: syntax.Expr) -> syntax.Expr:
    while isinstance(plan, syntax.Bind):
        plan = plan.parts[-1]
    return plan


def _describe_first(plan: syntax.Expr) -> str:
    return describe(_first(plan))


# ---------------------------------------------------------------- the work a plan may do


def plan_work(expr: TExpr, *, repeats: bool = True) -> int:
    """The most step runs ``expr`` may make on one value: a reference is one, a chain, a ``par``,
    a ``catch`` or an ``orelse`` the sum of its parts, a ``match`` its biggest arm, an ``if`` its
    condition and its bigger branch, an ``each`` its body (once per element of its list, which the
    data decides), and a ``loop(N)`` or ``retry(N)`` N times its body — or, with ``repeats`` false,
    nothing (the plan runner weighs each round by the work up to the next loop or retry)."""
    return _works(expr, repeats)[id(expr)]


def _works(root: TExpr, repeats: bool = True) -> dict[int, int]:
    """:func:`plan_work` of every node under ``root``, by ``id`` (an iterative post-order walk)."""
    works: dict[int, int] = {}
    stack: list[tuple[TExpr, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        inner = t.children(node)
        if not ready:
            stack.append((node, True))
            stack.extend((child, False) for child in inner)
            continue
        works[id(node)] = _work(node, [works[id(child)] for child in inner], repeats)
    return works


def _work(node: TExpr, inner: list[int], repeats: bool) -> int:
    """The work of ``node`` from the work of its children (:func:`plan_work`)."""
    match node:
        case t.TRef():
            return 1
        case t.TIdentity():
            return 0
        case t.TMatch():
            return max(inner, default=0)
        case t.TIf():
            condition, then, otherwise = inner
            return condition + max(then, otherwise)
        case t.TLoop():
            return node.bound * inner[0] if repeats else 0
        case t.TRetry():
            return node.attempts * inner[0] if repeats else 0
        case t.TLocal():
            return sum(inner)
        case t.TSubAgent():
            return sum(inner) + 1  # the adapter fn's run
        case t.TSpawn():
            return sum(inner) + 1
        case t.TBind() | t.TPar() | t.TEach() | t.TCatch() | t.TOrElse() | t.TTimeout() | t.TBudget():
            return sum(inner)
        case _:
            assert_never(node)


def _check_work(body: TExpr, sink: DiagnosticSink) -> None:
    """MCE032 when the plan may run more than :data:`MAX_PLAN_WORK` steps, naming the bounds that
    multiply, with a label at the smallest part of it that alone may (where a bound must come down)."""
    works = _works(body)
    total = works[id(body)]
    if total <= MAX_PLAN_WORK:
        return
    factors: list[str] = []
    base = total
    inner = body
    while True:  # the bounds along the biggest path down, and what the innermost of them repeats
        match inner:
            case t.TLoop():
                factors.append(f"`loop({inner.bound})`")
                base = works[id(inner.body)]
            case t.TRetry():
                factors.append(f"`retry({inner.attempts})`")
                base = works[id(inner.body)]
            case _:
                pass
        kids = t.children(inner)
        if not kids:
            break
        inner = max(kids, key=lambda child: works[id(child)])
    factors.append(f"{base:,} step{'' if base == 1 else 's'}")
    part = body
    while True:  # down to the innermost part still over the bound: where a bound must come down
        bigger = next((child for child in t.children(part) if works[id(child)] > MAX_PLAN_WORK), None)
        if bigger is None:
            break
        part = bigger
    labels = () if part is body else (Label(part.span, f"this part alone may run {works[id(part)]:,}"),)
    problem = report.plan_too_big(
        f"this plan may run up to {total:,} steps ({' × '.join(factors)}): "
        f"a plan may run at most {MAX_PLAN_WORK:,} steps",
        body.span,
        help="the bounds of nested `loop` and `retry` multiply: lower them, or nest fewer",
    )
    sink.add(dataclasses.replace(problem, labels=labels))
