"""A plan's total work is bounded, and a running plan lets a `timeout` fire (issue 29 item 3).

tests/plans/edgebox/spin.mce's toolbox has two entries, ``same : int -> int | str``
and ``tick : int -> int``, which give their input back: ``loop(N) same`` runs it N times and fails with
``LoopExhausted``, which a ``retry(N, on=LoopExhausted)`` around it retries. The
bounds of nested loops and retries multiply (MCE032 past
:data:`~mcec.plans.check.MAX_PLAN_WORK` step runs), and the worst plan still
accepted is stopped by a ``timeout`` around its spawn: sync steps never suspend,
so the plan runner pauses every so often (``mcec.plans.engine.PACE``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agentmonad import Err, LoopExhausted, PlanRejected, Timeout
from mcec.plans.check import MAX_PLAN_WORK
from mcec.run.interpret import interpret
from mcec.plans.engine import AcceptedPlan, CheckedToolbox

from edgebox import impl
from plan_support import compiled_edge

RETRY = "retry(10, on=LoopExhausted, backoff=0) "
#: The worst plan accepted: 10 × 10 × 1,000 = MAX_PLAN_WORK runs of `same`.
WORST = RETRY * 2 + "loop(1000) same"


@pytest.fixture(autouse=True)
def runs() -> Iterator[list[int]]:
    impl.RUNS[0] = 0
    yield impl.RUNS
    impl.SCRIPT[:] = ["same"]


def spin() -> CheckedToolbox:
    checked = compiled_edge("spin")[0].TOOLBOX_spin.checked()
    assert isinstance(checked, CheckedToolbox)
    return checked


def test_nested_bounds_multiply_past_the_plans_work_bound() -> None:
    # the plan: six retry(10) around loop(1000) was accepted and ran 10**9 sync calls
    verdict = spin().check(RETRY * 6 + "loop(1000) same")
    assert isinstance(verdict, PlanRejected)
    [error] = verdict.errors
    assert error["code"] == "MCE032"
    assert error["message"].startswith("this plan may run up to 1,000,000,000 steps (`retry(10)` × ")
    assert error["message"].endswith(f"× `loop(1000)` × 1 step): a plan may run at most {MAX_PLAN_WORK:,} steps")


@pytest.mark.parametrize(
    "plan, work",
    [
        (RETRY * 3 + "loop(1000) same", 1_000_000),
        (RETRY + "(tick >>= " + RETRY + "loop(1000) same)", 100_010),
        ("loop(1000) (" + "tick >>= " * 100 + "same)", 101_000),
    ],
    ids=["three retries", "one step more", "a long body"],
)
def test_a_plan_over_the_work_bound_is_mce032(plan: str, work: int) -> None:
    verdict = spin().check(plan)
    assert isinstance(verdict, PlanRejected)
    assert [d["code"] for d in verdict.errors] == ["MCE032"], verdict.text
    assert f"up to {work:,} steps" in verdict.errors[0]["message"]


@pytest.mark.parametrize(
    "plan, work",
    [
        ("shout", 1),
        ("split >>= each (shout >>= shout) >>= join", 4),
        ("retry(3, on=Bad) (shout >>= shout) catch Bad => apology", 7),
        ("shout orelse look_up", 2),
        ('match { "x" => shout, _ => look_up >>= shout }', 2),
    ],
)
def test_plan_work_counts_step_runs(plan: str, work: int) -> None:
    from mcec.plans.check import check_plan, plan_work
    from mcec.span import SourceFile

    from plan_support import compiled_box

    scope = compiled_box().TOOLBOX_research.checked().scope
    checked = check_plan(scope, SourceFile("<plan research>", plan))
    assert checked.body is not None, checked.diagnostics
    assert plan_work(checked.body) == work


def test_the_worst_accepted_plan_finishes() -> None:
    assert isinstance(spin().check(WORST), AcceptedPlan)
    assert isinstance(spin().check(RETRY * 2 + "loop(1000) (tick >>= same)"), PlanRejected)
    impl.SCRIPT[:] = [WORST]
    outcome = asyncio.run(compiled_edge("spin")[0].solve(impl.Log(), 7))
    assert isinstance(outcome, Err) and outcome.error == LoopExhausted(1000, 7)
    assert impl.RUNS[0] == MAX_PLAN_WORK


@pytest.mark.parametrize("how", ["compiled", "interpreted"])
def test_a_timeout_around_the_spawn_stops_the_worst_accepted_plan_on_time(how: str) -> None:
    # sync steps never suspend: without pauses the 100,000 runs went on past `timeout(0.02)`
    impl.SCRIPT[:] = [WORST]
    module, program = compiled_edge("spin")
    if how == "compiled":
        outcome = asyncio.run(module.hurried(impl.Log(), 7))
    else:
        outcome = asyncio.run(interpret(program, "hurried", impl.Log(), 7))
    assert isinstance(outcome, Err) and outcome.error == Timeout(0.02), outcome
    # at ~2 µs a run, 0.02 s is ~10,000 runs on an idle machine (fewer on a busy one)
    assert impl.RUNS[0] < MAX_PLAN_WORK // 2, impl.RUNS[0]
