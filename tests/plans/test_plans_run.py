"""Running spawned plans (docs/language.md §12): the repair loop, sites, state, cancellation.

The planner of planbox/box.mce is scripted (``impl.SCRIPT``: one plan per
attempt) and records the ``PlanRequest`` of each call, so these tests see what
the planner was told — in particular the previous attempt's rejection, as data.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import agentmonad.plans as plans
from agentmonad import Defect, Err, Ok, PlanRejected, Site, Timeout
from agentmonad.control import previous_failure
from mcec.run.interpret import interpret

from planbox import impl
from plan_support import compiled_box, compiled_program

SOLVE = Site("spawn", "box.mce", 25, 68)


@pytest.fixture(autouse=True)
def script() -> Iterator[list[str]]:
    impl.REQUESTS.clear()
    yield impl.SCRIPT
    impl.SCRIPT[:] = ["shout"]


def test_a_rejected_plan_is_repaired_from_its_diagnostics(script: list[str]) -> None:
    script[:] = ["secret >>= shout", "shout >>= count", "split >>= each(limit=2) look_up >>= join"]
    outcome = asyncio.run(compiled_box().repaired(impl.Notes(), "cats, dogs"))
    assert outcome == Ok("cats has 4 letters; dogs has 4 letters", outcome.state)
    # the planner's steps are kept across attempts: retry goes on from the state at the failure
    assert outcome.state.seen == ("plan 1", "plan 2", "plan 3", "search cats", "search dogs")
    first, second, third = impl.REQUESTS
    assert (first.attempt, second.attempt, third.attempt) == (1, 2, 3)
    assert first.rejection is None
    assert first.input == "cats, dogs" and first.task == "cats, dogs"
    assert first.signature == "str -> str ! MergeConflict | Bad"
    assert "look_up : str -> str ! Bad" in first.toolbox.splitlines()
    assert second.rejection is not None and second.rejection.plan == "secret >>= shout"
    [diagnostic] = second.rejection.diagnostics
    assert (diagnostic["code"], diagnostic["file"], diagnostic["line"], diagnostic["column"]) == (
        "MCE031",
        "<plan research>",
        1,
        1,
    )
    assert "`secret` is a step of the spec, but toolbox `research` does not list it" in diagnostic["message"]
    assert "1 | secret >>= shout" in second.rejection.text
    assert third.rejection is not None and third.rejection.errors[0]["message"].startswith("`count` is a fn")


def test_after_the_retry_no_failure_is_remembered(script: list[str]) -> None:
    script[:] = ["secret", "shout"]

    async def run() -> Any:
        outcome = await compiled_box().repaired(impl.Notes(), "hi")
        return outcome, previous_failure()

    outcome, remembered = asyncio.run(run())
    assert outcome.value == "HI" and remembered is None


def test_a_rejected_plan_fails_with_plan_rejected_at_the_spawn(script: list[str]) -> None:
    script[:] = ["shout >>= secret"]
    outcome = asyncio.run(compiled_box().solve(impl.Notes(), "hi"))
    assert isinstance(outcome, Err) and isinstance(outcome.error, PlanRejected)
    assert outcome.site == SOLVE
    assert outcome.state.seen == ("plan 1",)  # the state after the planner: nothing of the plan ran
    assert str(outcome.error).startswith("plan rejected (1 error): 1:11 MCE031")


def test_a_failing_plan_step_has_its_site_in_the_plan_and_keeps_its_state(script: list[str]) -> None:
    script[:] = ["split >>= each(limit=1) shout >>= join"]
    outcome = asyncio.run(compiled_box().solve(impl.Notes(), "ok, bad"))
    assert isinstance(outcome, Err) and isinstance(outcome.error, impl.Bad)
    assert outcome.site == Site("shout", "<plan research>", 1, 25)
    assert outcome.state.seen == ("plan 1", "shout!")


def test_parallel_branches_of_a_plan_merge_their_states(script: list[str]) -> None:
    script[:] = ["split >>= each(limit=3) look_up >>= join"]
    outcome = asyncio.run(compiled_box().solve(impl.Notes(), "a, bb, ccc"))
    assert outcome.value == "a has 1 letters; bb has 2 letters; ccc has 3 letters"
    assert outcome.state.seen == ("plan 1", "search a", "search bb", "search ccc")
    assert outcome.state.steps == 4


def test_compiled_and_interpreted_spawns_agree(script: list[str]) -> None:
    cases = [
        (["secret", "split >>= each(limit=2) look_up >>= join"], "cats, dogs"),
        (["shout catch Bad => apology"], "bad"),
        (["shout >>= count"], "x"),
        (["summarize"], "x"),  # MCE012, with a label in the spec
        (["split >>= each shout >>= join"], "a, bad"),
    ]
    for plan_script, value in cases:
        for pipeline in ("solve", "repaired"):
            script[:] = plan_script
            compiled = asyncio.run(getattr(compiled_box(), pipeline)(impl.Notes(), value))
            script[:] = plan_script
            interpreted = asyncio.run(interpret(compiled_program(), pipeline, impl.Notes(), value))
            assert type(compiled) is type(interpreted), (pipeline, plan_script)
            assert compiled.state == interpreted.state, (pipeline, plan_script)
            if isinstance(compiled, Ok):
                assert compiled.value == interpreted.value
            else:
                assert isinstance(interpreted, Err)
                assert type(compiled.error) is type(interpreted.error) and compiled.site == interpreted.site
                assert str(compiled.error) == str(interpreted.error)
                if isinstance(compiled.error, PlanRejected):  # the same diagnostics, naming box.mce alike
                    assert compiled.error == interpreted.error and compiled.error.text == interpreted.error.text


@pytest.mark.parametrize("plan", ["slow", "split >>= each slow >>= join", "par <slow, shout> >>= match { _ => shout }"])
def test_a_timeout_through_a_running_plan_leaves_no_task(script: list[str], plan: str) -> None:
    script[:] = ["split >>= each slow >>= join"] if "par" in plan else [plan]

    async def run() -> Any:
        outcome = await compiled_box().hurried(impl.Notes(), "a, b")
        await asyncio.sleep(0)
        return outcome, [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    outcome, left = asyncio.run(run())
    assert isinstance(outcome, Err) and outcome.error == Timeout(0.2)
    assert outcome.state.seen == ("plan 1",)  # the state the plan started from
    assert left == []


def test_cancelling_a_running_plan_cancels_everything_it_started(script: list[str]) -> None:
    script[:] = ["split >>= each slow >>= join"]

    async def run() -> list[asyncio.Task[Any]]:
        task = asyncio.ensure_future(compiled_box().solve(impl.Notes(), "a, b, c"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    assert asyncio.run(run()) == []


def test_without_a_plan_engine_a_spawn_is_a_defect(monkeypatch: pytest.MonkeyPatch) -> None:
    box = plans.Toolbox[Any, Any, Any, Any]("nowhere", "box.mce", "", "", {})
    monkeypatch.setattr(plans, "_ENGINE", None)
    monkeypatch.setattr(plans, "entry_points", lambda group: [])

    async def planner(state: Any, request: Any) -> Any:
        return Ok("shout", state)

    with pytest.raises(Defect) as raised:
        asyncio.run(box.spawn(impl.Notes(), "x", planner, SOLVE))
    assert "checking plans needs mcec" in str(raised.value)
    assert raised.value.site == SOLVE
