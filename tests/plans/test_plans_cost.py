"""A running plan's per-step cost (issue 36, item 4), counted in Python calls (tests/calls.py).

An accepted plan runs on the reference interpreter, which builds the plan's program at
each run: a chain ``shout >>= shout >>= …`` cost, per step, a lambda and a ``then`` (a
``reduce`` building one ``_Bind`` each, with its ``typing.cast``) and eight calls of
the interpreter's own, and ran at 4.8× the same text compiled. Now the chain is one
``AgentMonad.chain`` node and a step costs no call of the runtime's or mcec's: what is
left per step is the step (``shout``, with its pydantic state) and its ``Ok``.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from mcec.plans.engine import AcceptedPlan, CheckedToolbox

from calls import per_step, python_calls
from planbox.impl import Notes
from plan_support import compiled_box


def research() -> CheckedToolbox:
    checked = compiled_box().TOOLBOX_research.checked()
    assert isinstance(checked, CheckedToolbox)
    return checked


def _ours(name: str) -> bool:
    """A function of the runtime, of mcec, or of ``typing`` (``cast``), by ``file:name``."""
    file = name.split(":", 1)[0]
    return file in {"monad.py", "interpret.py", "plans.py", "typing.py", "functools.py"} or name.endswith("<lambda>")


@pytest.mark.parametrize("shape", ["{0}", "local ({0})", "({0}) catch Bad => apology"])
def test_a_plans_step_costs_no_call_of_the_runtime_or_mcec(shape: str) -> None:
    checked = research()

    def calls_of(n: int) -> Counter[str]:
        plan = checked.check(shape.format(" >>= ".join(["shout"] * n)))
        assert isinstance(plan, AcceptedPlan), plan
        asyncio.run(plan.run(Notes(), "hi"))  # the first run makes the arrow and the guard, once
        out = []

        async def run() -> None:
            out.append(await plan.run(Notes(), "hi"))

        counted = python_calls(run)
        assert out[0].value == "HI" and out[0].state.steps == (0 if shape.startswith("local") else n)
        return counted

    steps = per_step(calls_of)
    assert {name: count for name, count in steps.items() if _ours(name)} == {}
    assert steps["impl.py:shout"] == 1.0
