"""Code for v2 control flow: ``match``, ``if``, ``loop``, ``retry``, ``timeout`` (docs/language.md §7).

Each construct is one helper function, like the v1 groups, or is written inline
in the function it stands in (at the end of a function; a ``match`` also in the
middle of a chain, except directly in a ``budget``'s body: see ``CONTROL_NODES``),
and its body is straight-line Python: a ``match`` is an ``if``/``elif``/``else``
chain with each arm's steps inline, an ``if`` the condition's steps then an
``if``/``else``, a ``loop`` a ``for`` loop with the body's steps inline, a
``retry`` a ``for`` loop around one attempt, a ``timeout`` an ``async with
Deadline`` block around the body's steps. Inline steps update ``state`` as they
complete, and in a timed body each interruptible await notes the state it started
from on a cancellation (emitter), so a timeout reports the state after the last
step that finished, in its own function or in any helper below it.

The run-time tests (a pattern, "is this result of the loop's input type") are
``isinstance`` checks mypy narrows on, ``is None``, and for literals an equality
with a type check (``1`` does not match ``True``). The shapes are documented,
with the runtime's side, in docs/DESIGN.md and tests/runtime/control_shapes.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias, assert_never, get_args

import libcst as cst

from mcec.check import typed as t
from mcec.check.types import Builtin, ClassRef, Generic, Lit, Type, Union, members, widen_literals
from mcec.codegen import cst as c
from mcec.codegen.names import NameAllocator

if TYPE_CHECKING:
    from mcec.codegen.emitter import Emitter

__all__ = ["CONTROL_NODES", "Control", "ControlEmitter"]

COMPILED = "agentmonad.compiled"
RUNTIME = "agentmonad"

#: The v2 constructs. At the end of a function (a pipeline whose whole body is a
#: ``loop``, the last part of a chain) their statements are written inline there
#: instead of in a helper of their own: one call and one check fewer per run. A
#: ``match`` is written inline in the middle of a chain too (``match_inline``).
Control: TypeAlias = t.TMatch | t.TIf | t.TLoop | t.TRetry | t.TTimeout
#: The classes of :data:`Control`, for ``isinstance`` (derived: one list to keep).
CONTROL_NODES: tuple[type[Control], ...] = get_args(Control)


class ControlEmitter:
    """Writes the helper bodies of the v2 constructs for an :class:`~mcec.codegen.emitter.Emitter`."""

    def __init__(self, emitter: Emitter) -> None:
        self.e = emitter

    def body(self, expr: Control, state: str, value: str, scope: NameAllocator, owner: str) -> list[cst.BaseStatement]:
        """The statements of ``expr`` on ``value`` and ``state`` (names of the function they go in),
        ending in a ``return`` on every path."""
        match expr:
            case t.TMatch():
                return self.match_body(expr, state, value, scope, owner)
            case t.TIf():
                return self.if_body(expr, state, value, scope, owner)
            case t.TLoop():
                return self.loop_body(expr, state, value, scope, owner)
            case t.TRetry():
                return self.retry_body(expr, state, value, scope, owner)
            case t.TTimeout():
                return self.timeout_body(expr, state, value, scope, owner)
            case _:
                assert_never(expr)

    # ------------------------------------------------------------ match and if

    def match_body(self, expr: t.TMatch, state: str, value: str, scope: NameAllocator, owner: str) -> list[cst.BaseStatement]:
        """``if test1: arm1 … elif …: else: last arm``; each arm's steps inline, each ending in a return."""
        return self._dispatch(expr, state, value, scope, owner, None)

    def match_inline(
        self, body: list[cst.BaseStatement], expr: t.TMatch, state: str, value: str, scope: NameAllocator, owner: str
    ) -> str:
        """A ``match`` in the middle of a chain, written where it stands: ``w: B`` (the match's
        output type), then the ``if``/``elif``/``else`` chain, each arm's steps inline ending in
        ``w = `` its output (a failure returns from the function, as any inline step's does);
        returns ``w``. A helper would cost a call and an Outcome per dispatch, and a ``match``
        inside a ``loop`` dispatches once per turn."""
        result = scope.fresh("w")
        output_type = cst.Annotation(self.e.type_expr(expr.sig.output))
        declared = c.line(cst.AnnAssign(target=c.name(result), annotation=output_type))
        self.e.record(declared, expr.span)
        body.append(declared)
        body.extend(self._dispatch(expr, state, value, scope, owner, result))
        return result

    def _dispatch(
        self, expr: t.TMatch, state: str, value: str, scope: NameAllocator, owner: str, result: str | None
    ) -> list[cst.BaseStatement]:
        """The arms as an ``if``/``elif``/``else`` chain (see :meth:`_arm` for ``result``).

        The checker proved the arms cover the input, so the last arm needs no test.
        """
        arms = list(expr.arms)
        last = arms.pop()
        branches: list[tuple[cst.BaseExpression, list[cst.BaseStatement]]] = []
        for arm in arms:
            test = self.pattern_test(arm.pattern, value)
            if test is None:  # `_` before the last arm: the rest can never run (W002)
                last = arm
                break
            branches.append((test, self._arm(arm, state, value, scope, owner, result)))
        otherwise = self._arm(last, state, value, scope, owner, result)
        if not branches:
            return otherwise
        return [c.if_chain(branches, otherwise)]

    def _arm(
        self, arm: t.TArm, state: str, value: str, scope: NameAllocator, owner: str, result: str | None = None
    ) -> list[cst.BaseStatement]:
        """An arm's steps, ending in a ``return`` of its result (or, given ``result``, in
        ``result = `` its output)."""
        body: list[cst.BaseStatement] = []
        if isinstance(arm.pattern, t.PLiteral) and widen_literals(arm.body.sig.input) != arm.body.sig.input:
            # The arm's steps take the literal type itself (a `match` or a group given `Literal[0]`):
            # mypy does not narrow `value == 0` to Literal[0], so the arm goes on with the constant,
            # which the value equals (of the same type) here.
            constant = scope.fresh("v")
            literal = Lit(arm.pattern.value)
            body.append(c.annotated(constant, self.e.type_expr(literal), self._literal(arm.pattern.value)))
            value = constant
        if result is None:
            self.e.inline_chain(body, scope, arm.body, state, value, owner, last=True)
            return body
        output = self.e.inline_chain(body, scope, arm.body, state, value, owner, last=False)
        assigned = c.assign(result, c.name(output))
        self.e.record(assigned, arm.span)
        body.append(assigned)
        return body

    @staticmethod
    def _literal(value: str | int) -> cst.BaseExpression:
        return c.string(value) if isinstance(value, str) else c.integer(value)

    def if_body(self, expr: t.TIf, state: str, value: str, scope: NameAllocator, owner: str) -> list[cst.BaseStatement]:
        """The condition's steps (threading the state), then ``if cond: then else: otherwise``,
        both on the original input."""
        body: list[cst.BaseStatement] = []
        decided = self.e.inline_chain(body, scope, expr.condition, state, value, owner, last=False)
        then: list[cst.BaseStatement] = []
        self.e.inline_chain(then, scope, expr.then, state, value, owner, last=True)
        otherwise: list[cst.BaseStatement] = []
        self.e.inline_chain(otherwise, scope, expr.otherwise, state, value, owner, last=True)
        statement = c.if_chain([(c.name(decided), then)], otherwise)
        self.e.record(statement, expr.span)
        body.append(statement)
        return body

    # ------------------------------------------------------------ loop

    def loop_body(self, expr: t.TLoop, state: str, value: str, scope: NameAllocator, owner: str) -> list[cst.BaseStatement]:
        """``for _ in range(N):`` the body's steps inline; a result that is not of the loop's
        input type ``break``\\ s out with it, the others go round; ``else``: LoopExhausted."""
        site = self.e.site("loop", expr.span)
        current = scope.fresh("v")
        turn = scope.fresh("turn")
        body: list[cst.BaseStatement] = [c.assign(current, c.name(value))]
        inside: list[cst.BaseStatement] = []
        result = self.e.inline_chain(inside, scope, expr.body, state, current, owner, last=False)
        if result == current:  # a body that passes its input through (an empty block)
            result = scope.fresh("w")
            inside.append(c.assign(result, c.name(current)))
        goes_round = self.type_test(expr.continues, result)
        inside.append(c.if_(c.not_(_parenthesised(goes_round)), [cst.SimpleStatementLine([cst.Break()])]))
        inside.append(c.assign(current, c.name(result)))
        exhausted = c.return_(
            c.call(
                self.e.runtime("Err"),
                c.call(self.e.runtime("LoopExhausted"), c.integer(expr.bound), c.name(current)),
                c.name(state),
                site,
            )
        )
        self.e.record(exhausted, expr.span)
        loop = cst.For(
            target=c.name(turn),
            iter=c.call(self.e.builtin("range"), c.integer(expr.bound)),
            body=cst.IndentedBlock(body=inside),
            orelse=cst.Else(body=cst.IndentedBlock(body=[exhausted])),
        )
        self.e.record(loop, expr.span)
        body.append(loop)
        body.append(c.return_(c.call(self.e.runtime("Ok"), c.name(result), c.name(state))))
        return body

    # ------------------------------------------------------------ retry

    def retry_body(self, expr: t.TRetry, state: str, value: str, scope: NameAllocator, owner: str) -> list[cst.BaseStatement]:
        """``for attempt in range(1, N + 1):`` one attempt; success ``break``\\ s, a failure worth
        retrying hands its state on and pauses, any other failure (or the last) is returned."""
        if not expr.body.sig.errors:  # nothing can fail: one attempt is all there is
            body: list[cst.BaseStatement] = []
            self.e.inline_chain(body, scope, expr.body, state, value, owner, last=True)
            return body
        attempt = scope.fresh("attempt")
        result = scope.fresh("r")
        inside = self._attempt(expr.body, state, value, result, scope, owner)
        inside.append(c.if_(self.e.is_ok(result), [cst.SimpleStatementLine([cst.Break()])]))
        inside.append(c.assign(state, c.attr(c.name(result), "state")))
        give_up: cst.BaseExpression = cst.Comparison(
            left=c.name(attempt),
            comparisons=[cst.ComparisonTarget(operator=cst.Equal(), comparator=c.integer(expr.attempts))],
        )
        if expr.on is not None:
            worth_it = c.call(
                self.e.builtin("isinstance"),
                c.attr(c.name(result), "error"),
                self.e.error_classes(frozenset(expr.on)),
            )
            give_up = cst.BooleanOperation(left=give_up, operator=cst.Or(), right=c.not_(worth_it))
        returned = c.return_(c.name(result))
        self.e.record(returned, expr.span)
        inside.append(c.if_(give_up, [returned]))
        arguments: list[cst.BaseExpression] = [c.name(attempt), cst.Float(repr(expr.backoff))]
        if self.e.timed:  # a deadline landing in the pause reports the failed attempt's state
            arguments.append(c.name(state))
        pause = c.line(cst.Expr(c.await_(c.call(self.e.runtime("retry_pause", COMPILED), *arguments))))
        attempts = c.call(self.e.builtin("range"), c.integer(1), c.integer(expr.attempts + 1))
        if not self.e.reaches_spawn(expr.body):
            # no planner inside to show the last failure to: nothing to remember
            inside.append(pause)
            loop = cst.For(target=c.name(attempt), iter=attempts, body=cst.IndentedBlock(body=inside))
            self.e.record(loop, expr.span)
            return [loop, c.return_(c.name(result))]
        # the next attempt's planner sees how this one failed (its last rejection, §12)
        remembered = scope.fresh("remembered")
        remember = c.call(
            self.e.runtime("remember_failure", COMPILED),
            c.attr(c.name(result), "error"),
            c.name(attempt),
            c.name(remembered),
        )
        inside.append(c.assign(remembered, remember))
        inside.append(pause)
        loop = cst.For(target=c.name(attempt), iter=attempts, body=cst.IndentedBlock(body=inside))
        self.e.record(loop, expr.span)
        forget = c.line(cst.Expr(c.call(self.e.runtime("forget_failure", COMPILED), c.name(remembered))))
        guarded = cst.Try(
            body=cst.IndentedBlock(body=[loop, c.return_(c.name(result))]),
            finalbody=cst.Finally(body=cst.IndentedBlock(body=[forget])),
        )
        return [c.assign(remembered, cst.Name("None")), guarded]

    def _attempt(
        self, body: t.TExpr, state: str, value: str, result: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        """``result = `` one run of ``body``: a step's call inline (its exception turned into an
        ``Err`` or a Defect, its ``Err`` given its site), anything else through its helper."""
        if isinstance(body, t.TRef) and _inline_attempt(body.kind):
            return self.e.step_attempt(body, state, value, result, scope)
        callee = self.e.function_of(body, owner)
        statement = c.assign(result, c.await_(c.call(callee, c.name(state), c.name(value))))
        self.e.record(statement, body.span)
        return [statement]

    # ------------------------------------------------------------ timeout

    def timeout_body(
        self, expr: t.TTimeout, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        """The body's steps inline under ``with Deadline(S)``; the deadline's own
        ``TimeoutError`` becomes ``Err(Timeout(S), deadline.reached(state), site)``: the
        state the body reached, noted by the await it interrupted, however deep in
        helpers (the body and everything it calls is timed code, see emitter)."""
        site = self.e.site("timeout", expr.span)
        deadline = scope.fresh("deadline")
        seconds = cst.Float(repr(expr.seconds))
        inside: list[cst.BaseStatement] = []
        timed, self.e.timed = self.e.timed, True
        try:
            self.e.inline_chain(inside, scope, expr.body, state, value, owner, last=True)
        finally:
            self.e.timed = timed
        # a plain ``with``: entering and leaving a Deadline never wait, and two coroutines
        # fewer per entry is a tenth of what a ``timeout`` costs (benchmarks: control)
        block = cst.With(items=[cst.WithItem(item=c.name(deadline))], body=cst.IndentedBlock(body=inside))
        not_ours = c.if_(
            c.not_(c.call(c.attr(c.name(deadline), "expired"))), [cst.SimpleStatementLine([cst.Raise()])]
        )
        reached = c.call(c.attr(c.name(deadline), "reached"), c.name(state))
        timed_out = c.return_(c.call(self.e.runtime("Err"), c.call(self.e.runtime("Timeout"), seconds), reached, site))
        self.e.record(timed_out, expr.span)
        guarded = cst.Try(
            body=cst.IndentedBlock(body=[block]),
            handlers=[
                cst.ExceptHandler(
                    body=cst.IndentedBlock(body=[not_ours, timed_out]), type=self.e.builtin("TimeoutError")
                )
            ],
        )
        start = c.assign(deadline, c.call(self.e.runtime("Deadline", COMPILED), seconds))
        self.e.record(start, expr.span)
        return [start, guarded]

    # ------------------------------------------------------------ budget

    def budget_body(
        self, expr: t.TBudget, state: str, value: str, scope: NameAllocator, owner: str
    ) -> list[cst.BaseStatement]:
        """The body's steps inline under ``async with budget(N)``; its ``BudgetExceeded``
        becomes ``Err(exc, state, site)`` with the state after the last completed step. The
        body is timed code, as a timeout's is: the await the budget's cancellation interrupts,
        however deep in helpers, notes the state it started from.

        Every ``return`` of an outcome as it is, or of a failed step's ``stop(…)``, goes through
        ``spending.ending(…)``: when a step recorded
        the tokens that spend the budget and the body then returned before the cancellation
        could arrive, the budget fails as it closes, and ``spending.state_after(state)`` is the
        state of the outcome returned (``state`` itself, not yet updated by a last step whose
        outcome is returned as it is, would be the state before that step)."""
        site = self.e.site("budget", expr.span)
        exc, spending = scope.fresh("exc"), scope.fresh("spending")
        inside: list[cst.BaseStatement] = []
        timed, self.e.timed = self.e.timed, True  # a spent budget cancels like a deadline
        try:
            self.e.inline_chain(inside, scope, expr.body, state, value, owner, last=True)
        finally:
            self.e.timed = timed
        through = _ReturnThrough(self.e, spending)
        block = cst.With(
            items=[cst.WithItem(item=c.name(spending))],
            body=cst.IndentedBlock(body=[statement.visit(through) for statement in inside]),  # type: ignore[misc]
            asynchronous=cst.Asynchronous(),
        )
        reached = c.call(c.attr(c.name(spending), "state_after"), c.name(state))
        exceeded = c.return_(c.call(self.e.runtime("Err"), c.name(exc), reached, site))
        self.e.record(exceeded, expr.span)
        guarded = cst.Try(
            body=cst.IndentedBlock(body=[block]),
            handlers=[
                cst.ExceptHandler(
                    body=cst.IndentedBlock(body=[exceeded]),
                    type=self.e.runtime("BudgetExceeded"),
                    name=cst.AsName(name=c.name(exc)),
                )
            ],
        )
        self.e.record(guarded, expr.span)
        start = c.assign(spending, c.call(self.e.runtime("budget", f"{RUNTIME}.llm"), c.integer(expr.tokens)))
        self.e.record(start, expr.span)
        return [start, guarded]

    # ------------------------------------------------------------ run-time tests

    def pattern_test(self, pattern: t.TPattern, value: str) -> cst.BaseExpression | None:
        """The test an arm's pattern makes of ``value`` (None for ``_``, which needs none)."""
        match pattern:
            case t.PClass(type=type_):
                return self.type_test(type_, value)
            case t.PLiteral(value=literal):
                return self.type_test(Lit(literal), value)
            case t.PWildcard():
                return None
            case _:
                assert_never(pattern)

    def type_test(self, type_: Type, value: str) -> cst.BaseExpression:
        """``value``'s run-time test for ``type_`` (testable, :func:`mcec.check.types.testable`):
        one ``isinstance`` for the classes, ``is None``, and a test per literal, joined by ``or``."""
        classes: list[cst.BaseExpression] = []
        tests: list[cst.BaseExpression] = []
        for member in members(type_):
            match member:
                case Builtin(name="None"):
                    tests.append(cst.Comparison(c.name(value), [cst.ComparisonTarget(cst.Is(), c.name("None"))]))
                case Builtin() | ClassRef():
                    classes.append(self.e.type_expr(member))
                case Lit(value=literal):
                    tests.append(self._literal_test(literal, value))
                case Generic() | Union():
                    raise AssertionError(f"{member} cannot be tested at run time (the checker rejects it)")
                case _:
                    assert_never(member)
        if classes:
            checked = classes[0] if len(classes) == 1 else c.tuple_(classes)
            tests.insert(0, c.call(self.e.builtin("isinstance"), c.name(value), checked))
        return c.or_([_parenthesised(test) for test in tests]) if len(tests) > 1 else tests[0]

    def _literal_test(self, literal: str | int, value: str) -> cst.BaseExpression:
        """``isinstance(v, str) and v == "a"``; ``type(v) is int and v == 1`` (so True is not 1)."""
        if isinstance(literal, str):
            kind: cst.BaseExpression = c.call(self.e.builtin("isinstance"), c.name(value), self.e.builtin("str"))
            written: cst.BaseExpression = c.string(literal)
        else:
            kind = cst.Comparison(
                c.call(self.e.builtin("type"), c.name(value)), [cst.ComparisonTarget(cst.Is(), self.e.builtin("int"))]
            )
            written = c.integer(literal)
        equal = cst.Comparison(c.name(value), [cst.ComparisonTarget(cst.Equal(), written)])
        return c.and_(kind, equal)


def _parenthesised(test: cst.BaseExpression) -> cst.BaseExpression:
    """``test`` in parentheses when it is a boolean operation (inside ``not`` or ``or``)."""
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return test


class _ReturnThrough(cst.CSTTransformer):
    """``return R`` → ``return SPENDING.ending(R)`` in a budget's inline body, for an outcome ``R``
    returned as it is or a failed step's ``stop(…)`` (see ``budget_body``).

    A node rebuilt on the way (the return, the statements around it) keeps the span its
    original was recorded with, so the source map and mypy's findings still point into the spec.
    """

    def __init__(self, emitter: Emitter, spending: str) -> None:
        super().__init__()
        self.e = emitter
        self.spending = spending
        self.stop = emitter.imported_as("stop", COMPILED)  # the body is written: any `stop` in it is imported

    def _is_stop(self, value: cst.BaseExpression) -> bool:
        """``stop(…)``: a failed step's outcome, with the state that step failed with (a step that
        spent the budget and then failed: the budget's failure keeps that state)."""
        return (
            self.stop is not None
            and isinstance(value, cst.Call)
            and isinstance(value.func, cst.Name)
            and value.func.value == self.stop
        )

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's returns are its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        # Only an outcome returned as it is (a step's or a helper's result: a name, an await) or a
        # failed step's `stop(…)` can carry a state that `state` does not hold yet. The outcomes
        # built here from `state` (`Ok(v, state)`, `raised(…, state, …)`) are left alone.
        value = updated_node.value
        if value is None or not (isinstance(value, (cst.Name, cst.Await)) or self._is_stop(value)):
            return updated_node
        return updated_node.with_changes(value=c.call(c.attr(c.name(self.spending), "ending"), value))

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Any:
        result = super().on_leave(original_node, updated_node)
        if result is not original_node and isinstance(result, cst.CSTNode) and id(original_node) in self.e.spans:
            self.e.record(result, self.e.spans[id(original_node)], self.e.hints.get(id(original_node)))
        return result


def _inline_attempt(kind: t.RefKind) -> bool:
    """Is one attempt of a reference of this kind written inline (a step's or tool's call), rather
    than a call of its function (an llm step, a fn, a pipeline)?"""
    match kind:
        case t.RefKind.STEP | t.RefKind.TOOL | t.RefKind.ASK:
            return True
        case t.RefKind.LLM | t.RefKind.FN | t.RefKind.PIPELINE:
            return False
        case _:
            assert_never(kind)
