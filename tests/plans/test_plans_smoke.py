"""The plan fixture compiles and a scripted planner's plan runs (the shared fixture of tests/plans)."""

from __future__ import annotations

import asyncio

from planbox import impl

from plan_support import compiled_box


def test_an_accepted_plan_runs_with_the_state_threaded() -> None:
    box = compiled_box()
    impl.SCRIPT[:] = ["split >>= each(limit=2) look_up >>= join"]
    impl.REQUESTS.clear()
    outcome = asyncio.run(box.solve(impl.Notes(), "cats, dogs"))
    assert outcome.value == "cats has 4 letters; dogs has 4 letters"
    assert outcome.state.seen == ("plan 1", "search cats", "search dogs")
