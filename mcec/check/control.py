"""Typing rules for v2 control flow: ``match``, ``if``, ``loop``, ``retry``, ``timeout`` (docs/language.md §5).

:class:`ControlChecker` is the part of :class:`~mcec.check.expr.ExprChecker`
for these forms; it infers their parts through the expression checker, so
nesting works in both directions. The questions they ask about types are
answered by :mod:`mcec.check.types` (``≤``, narrowing, run-time testability),
which knows the user's classes as far as their source says
(:mod:`mcec.check.pyindex`): "is ``Answer ≤ Turn``" is a definite no when
neither derives from the other.

- ``match`` is checked against the type it is *given* (bidirectional): each
  arm sees that type less what earlier arms took, narrowed by its pattern;
  what no arm takes is MCE021, an arm nothing reaches W002.
- ``loop(N) e``: the members of e's output that are ≤ its input type go round
  again, the others end the loop; it needs both kinds (MCE022), and its input
  type must be testable at run time (MCE022).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.report import Situation
from mcec.check.typed import (
    DEFAULT_BACKOFF,
    PClass,
    PLiteral,
    PWildcard,
    Sig,
    TArm,
    TExpr,
    TIf,
    TLoop,
    TMatch,
    TPattern,
    TRetry,
    TTimeout,
    TBudget,
)
from mcec.check.types import (
    ANY,
    BOOL,
    LOOP_EXHAUSTED,
    NEVER,
    TIMEOUT,
    BUDGET_EXCEEDED,
    Builtin,
    ClassRef,
    Compat,
    Type,
    flows,
    literal_text,
    members,
    narrow_to_class,
    narrow_to_literal,
    render_errors,
    testable,
    union,
    widen_literals,
)

if TYPE_CHECKING:
    from mcec.check.expr import ExprChecker

__all__ = ["ControlChecker"]

_TESTABLE_HELP = (
    "a run-time test can tell classes, builtins, `None` and literals apart, not generics (`list[str]`), "
    "`Any`, `TypedDict` or `Protocol` types"
)


class ControlChecker:
    """Infers the v2 control-flow forms for an :class:`~mcec.check.expr.ExprChecker`."""

    def __init__(self, outer: ExprChecker) -> None:
        self.outer = outer
        self.sink = outer.sink

    # ------------------------------------------------------------ match

    def match(self, expr: syntax.Match, given: Type | None) -> TMatch:
        input_type = given if given is not None else ANY
        remainder = input_type
        arms: list[TArm] = []
        taken_by: list[tuple[Type, syntax.Arm]] = []  # what each earlier arm took, for W002's label
        for arm in expr.arms:
            pattern, narrowed, rest = self._pattern(arm, remainder)
            if narrowed == NEVER and remainder != ANY:
                earlier = next((a.span for took, a in taken_by if flows(self._pattern_type(pattern), took) is not Compat.NO), None)
                self.sink.add(report.unreachable_arm(arm.span, earlier, input_type))
            body = self.outer.infer(arm.body, narrowed)
            if narrowed != NEVER and flows(narrowed, body.sig.input) is Compat.NO:
                self.sink.add(
                    report.mismatch(
                        Situation.MATCH_ARM,
                        actual=narrowed,
                        expected=body.sig.input,
                        producer=(_pattern_text(arm.pattern), arm.pattern.span),
                        consumer=(self.outer.describe(arm.body), arm.body.span),
                        primary=arm.body.span,
                    )
                )
            arms.append(TArm(pattern, body, narrowed, arm.span))
            taken_by.append((narrowed, arm))
            remainder = rest
        if remainder != NEVER:
            self.sink.add(report.not_covered(remainder, expr.keyword, input_type))
        errors: set[Type] = set()
        for arm_ in arms:
            errors |= arm_.body.sig.errors
        output = union([a.body.sig.output for a in arms]) if arms else NEVER
        sig = Sig(input_type, output, frozenset(errors), any(a.body.sig.stateful for a in arms))
        return TMatch(tuple(arms), sig, expr.span)

    def _pattern(self, arm: syntax.Arm, remainder: Type) -> tuple[TPattern, Type, Type]:
        """The typed pattern of ``arm``, and ``(narrowed, remainder)`` of the values still unmatched."""
        written = arm.pattern
        if arm.is_wildcard:
            return PWildcard(), remainder, NEVER
        if isinstance(written, syntax.TypeLiteral):
            narrowed, rest = narrow_to_literal(remainder, written.value)
            return PLiteral(written.value), narrowed, rest
        resolved = self.outer.declarations.type_of(written)
        if resolved == ANY:
            return PWildcard(), remainder, NEVER  # did not resolve (reported): match anything, say nothing more
        if not isinstance(resolved, (ClassRef, Builtin)) or not testable(resolved):
            self.sink.add(report.untestable("the pattern", resolved, written.span, _TESTABLE_HELP))
        narrowed, rest = narrow_to_class(remainder, resolved)  # as if it could be tested: no cascade
        return PClass(resolved), narrowed, rest

    @staticmethod
    def _pattern_type(pattern: TPattern) -> Type:
        match pattern:
            case PClass(type=type_):
                return type_
            case PLiteral(value=value):
                return narrow_to_literal(ANY, value)[0]
            case PWildcard():
                return ANY
            case _:
                assert_never(pattern)

    # ------------------------------------------------------------ if

    def if_else(self, expr: syntax.IfElse, given: Type | None) -> TIf:
        condition = self.outer.infer(expr.condition, given)
        input_type = given if given is not None else condition.sig.input
        self._given_the_if_input(Situation.IF_CONDITION_INPUT, input_type, condition, expr.condition, expr)
        if flows(condition.sig.output, BOOL) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    Situation.IF_CONDITION,
                    actual=condition.sig.output,
                    expected=BOOL,
                    producer=(self.outer.describe(expr.condition), expr.condition.span),
                    consumer=("the `if`", expr.keyword),
                    primary=expr.condition.span,
                )
            )
        branches = []
        for written in (expr.then, expr.otherwise):
            branch = self.outer.infer(written, input_type)
            self._given_the_if_input(Situation.IF_BRANCH, input_type, branch, written, expr)
            branches.append(branch)
        then, otherwise = branches
        errors = condition.sig.errors | then.sig.errors | otherwise.sig.errors
        stateful = condition.sig.stateful or then.sig.stateful or otherwise.sig.stateful
        sig = Sig(input_type, union([then.sig.output, otherwise.sig.output]), errors, stateful)
        return TIf(condition, then, otherwise, sig, expr.span)

    def _given_the_if_input(
        self, situation: Situation, input_type: Type, part: TExpr, written: syntax.Expr, expr: syntax.IfElse
    ) -> None:
        """MCE010 when a part of an ``if`` (its condition or a branch), which receives the ``if``'s
        input, cannot take it."""
        if flows(input_type, part.sig.input) is Compat.NO:
            self.sink.add(
                report.mismatch(
                    situation,
                    actual=input_type,
                    expected=part.sig.input,
                    producer=("the `if`", expr.keyword),
                    consumer=(self.outer.describe(written), written.span),
                    primary=written.span,
                )
            )

    # ------------------------------------------------------------ loop

    def loop(self, expr: syntax.Loop, given: Type | None) -> TLoop:
        if expr.bound < 1:
            self.sink.add(
                report.bound_too_small("loop", expr.bound, "at least 1", expr.bound_span, "write `loop(8) body`: at most 8 runs")
            )
        mark = len(self.sink.items)
        body = self.outer.infer(expr.body, given)
        if given is not None and body.sig.input == given and given != widen_literals(given):
            wider = widen_literals(given)
            if not _continues(body.sig.output, given) and _continues(body.sig.output, wider):
                # A body that takes what it is given took the literal type of its context (the arm
                # `0 => loop(3) …` gives `Literal[0]`), but what goes round is of the literal's base
                # type (`int`): the loop takes that, and its body is checked again given it.
                del self.sink.items[mark:]
                body = self.outer.infer(expr.body, wider)
        input_type = body.sig.input if body.sig.input != ANY or given is None else given
        output = body.sig.output
        if not testable(input_type):
            self.sink.add(
                report.untestable(
                    "the loop's input type",
                    input_type,
                    expr.keyword,
                    "the loop goes round while its body's result is of its input type; " + _TESTABLE_HELP,
                )
            )
            ends = output
        else:
            continuing = [m for m in members(output) if flows(m, input_type) is not Compat.NO]
            ending = [m for m in members(output) if flows(m, input_type) is not Compat.YES]
            if output != ANY and not ending:
                self.sink.add(report.loop_never(True, output, input_type, expr.keyword, expr.body.span))
            elif output != ANY and not continuing:
                self.sink.add(report.loop_never(False, output, input_type, expr.keyword, expr.body.span))
            ends = union(ending) if output != ANY else ANY
        sig = Sig(input_type, ends, body.sig.errors | {LOOP_EXHAUSTED}, body.sig.stateful)
        return TLoop(body, expr.bound, input_type, sig, expr.span)

    # ------------------------------------------------------------ retry and timeout

    def retry(self, expr: syntax.Retry, given: Type | None) -> TRetry:
        if expr.attempts < 1:
            self.sink.add(
                report.bound_too_small(
                    "retry", expr.attempts, "at least 1", expr.attempts_span, "`retry(3) e` makes at most 3 attempts in all"
                )
            )
        body = self.outer.infer(expr.body, given)
        on: tuple[Type, ...] | None = None
        if expr.on is not None:
            named = self.outer.declarations.errors_of(expr.on, "in `retry(on=…)`")
            body_errors = body.sig.errors
            for error_type, span in named:
                if not any(
                    flows(e, error_type) is not Compat.NO or flows(error_type, e) is not Compat.NO for e in body_errors
                ):
                    self.sink.add(
                        report.impossible_retry(
                            error_type, span, expr.body.span, render_errors(body_errors) if body_errors else None
                        )
                    )
            on = tuple(dict.fromkeys(t for t, _ in named))
        backoff = expr.backoff if expr.backoff is not None else DEFAULT_BACKOFF
        return TRetry(body, expr.attempts, on, backoff, body.sig, expr.span)

    def timeout(self, expr: syntax.Timeout, given: Type | None) -> TTimeout:
        if not expr.seconds > 0:
            self.sink.add(
                report.bound_too_small(
                    "timeout", expr.seconds, "more than 0 seconds", expr.seconds_span, "write `timeout(10) e` or `timeout(0.5) e`"
                )
            )
        body = self.outer.infer(expr.body, given)
        sig = Sig(body.sig.input, body.sig.output, body.sig.errors | {TIMEOUT}, body.sig.stateful)
        return TTimeout(body, expr.seconds, sig, expr.span)


    def budget(self, expr: syntax.Budget, given: Type | None) -> TBudget:
        if not expr.tokens > 0:
            self.sink.add(
                report.bound_too_small("budget", expr.tokens, "at least 1 token", expr.tokens_span, "write `budget(1000) e`")
            )
        body = self.outer.infer(expr.body, given)
        sig = Sig(body.sig.input, body.sig.output, body.sig.errors | {BUDGET_EXCEEDED}, body.sig.stateful)
        return TBudget(body, expr.tokens, sig, expr.span)


def _continues(output: Type, input_type: Type) -> bool:
    """Whether some result of type ``output`` may go round a loop whose input type is ``input_type``."""
    return output == ANY or any(flows(m, input_type) is not Compat.NO for m in members(output))


def _pattern_text(pattern: syntax.Pattern) -> str:
    """How a message names a pattern: ``the pattern `Answer```."""
    match pattern:
        case syntax.Name(text=text):
            return f"the pattern `{text}`"
        case syntax.QualName():
            return f"the pattern `{pattern.dotted}`"
        case syntax.TypeLiteral():
            return f"the pattern `{literal_text(pattern.value)}`"
        case _:
            assert_never(pattern)
