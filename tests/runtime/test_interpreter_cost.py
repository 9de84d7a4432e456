"""The interpreter's per-step cost (issue 36, item 4), counted in Python calls, not timed.

Accepted plans run on ``AgentMonad``'s interpreter, so the work it does around each
step is every plan's per-step overhead. Timing it on a shared machine is the
benchmarks' job (benchmarks/README.md, "The interpreter's per-step cost"); what a
test can hold exactly is the number of Python calls a step costs (tests/calls.py),
which is where the time went: a chain that ran at 1.4× the hand-written floor ran
at 4.3× once each step cost the interpreter eight calls of its own (a coroutine
per step, an unwinding function, a node made through ``StepSpec.__call__``,
``typing.cast``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from agentmonad import AgentMonad, Ok, lift_step
from calls import per_step, python_calls


def inc(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state + 1)


async def ainc(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state + 1)


def _chain(impl: Callable[..., Any], n: int, is_async: bool) -> AgentMonad[int, Any, int]:
    arrow = lift_step(impl, name=impl.__name__, errors=(), is_async=is_async)
    program: AgentMonad[int, Any, int] = arrow(0)
    for _ in range(n - 1):
        program = program.then(arrow)
    return program


@pytest.mark.parametrize("impl, is_async", [(inc, False), (ainc, True)], ids=["sync", "async"])
def test_a_step_bound_with_then_costs_the_interpreter_no_call_of_its_own(
    impl: Callable[..., Any], is_async: bool
) -> None:
    def calls_of(n: int) -> Counter[str]:
        program = _chain(impl, n, is_async)  # built outside the count: the program is a value
        out: list[Any] = []

        async def run() -> None:
            out.append(await program.run(0))

        counted = python_calls(run)
        assert out == [Ok(n, n)]
        return counted

    # the step itself and the Ok it returns (a dataclass's generated __init__), nothing else
    assert per_step(calls_of) == {f"test_interpreter_cost.py:{impl.__name__}": 1.0, "<string>:__init__": 1.0}


@pytest.mark.parametrize("impl, is_async", [(inc, False), (ainc, True)], ids=["sync", "async"])
def test_a_chain_is_then_after_then_and_costs_its_steps_only(impl: Callable[..., Any], is_async: bool) -> None:
    """``AgentMonad.chain`` (the interpreter's ``>>=``): the same outcome as ``then`` after ``then``,
    one node however long, and no call of its own per step."""
    arrow = lift_step(impl, name=impl.__name__, errors=(), is_async=is_async)

    def calls_of(n: int) -> Counter[str]:
        chained = AgentMonad.chain([arrow] * n)(0)
        out: list[Any] = []

        async def run() -> None:
            out.append(await chained.run(0))

        counted = python_calls(run)
        assert out == [Ok(n, n)] == [_chain(impl, n, is_async).run_sync(0)]
        return counted

    assert per_step(calls_of) == {f"test_interpreter_cost.py:{impl.__name__}": 1.0, "<string>:__init__": 1.0}
