"""The interpreter's per-step cost (issue 36, item 4), counted in Python calls, not timed.

Accepted plans run on ``AgentMonad``'s interpreter, so the work it does around each
step is every plan's per-step overhead. Timing it on a shared machine is the
benchmarks' job (benchmarks/README.md, "The interpreter's per-step cost"); what a
test can hold exactly is the number of Python-level calls a step costs, which is
where the time went: a chain that ran at 1.4× the hand-written floor ran at 4.3×
once each step cost the interpreter eight calls of its own (a coroutine per step,
an unwinding function, a node made through ``StepSpec.__call__``, ``typing.cast``).

The count is the difference between a chain of 2N steps and one of N (what the
run costs once — ``asyncio.run``, the first step — cancels out), divided by N.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from agentmonad import AgentMonad, Ok, lift_step

N = 200


def inc(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state + 1)


async def ainc(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state + 1)


def _calls(run: Callable[[], Any]) -> Counter[str]:
    """The Python functions called while ``run()`` is awaited, by ``file:name``."""
    calls: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code
            calls[f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}"] += 1

    async def profiled() -> None:
        sys.setprofile(hook)
        try:
            await run()
        finally:
            sys.setprofile(None)

    asyncio.run(profiled())
    return calls


def _per_step(calls_of: Callable[[int], Counter[str]]) -> dict[str, float]:
    """Calls per step: (calls for 2N steps − calls for N steps) / N."""
    small, large = calls_of(N), calls_of(2 * N)
    return {name: (large[name] - small[name]) / N for name in large if large[name] != small[name]}


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

        counted = _calls(run)
        assert out == [Ok(n, n)]
        return counted

    # the step itself and the Ok it returns (a dataclass's generated __init__), nothing else
    assert _per_step(calls_of) == {f"test_interpreter_cost.py:{impl.__name__}": 1.0, "<string>:__init__": 1.0}
