"""Steps of ``benchmarks/plans/calc.mce``: small integer steps over an ``int`` state.

Cheap on purpose: a plan's per-step overhead (the interpreter's combinators
around each step) is what ``plan_bench`` measures, so a step does almost
nothing else. Every step is declared ``! Bad`` (none fails on the inputs the
benchmark uses) so ``catch Bad`` in a plan is a real handler.
"""

from __future__ import annotations

import asyncio
from typing import Never

from agentmonad import Err, Ok, Outcome, PlanRequest


class Bad(Exception):
    """A step refused its input (a negative number)."""


def inc(state: int, value: int) -> Outcome[int, Bad, int]:
    if value < 0:
        return Err(Bad(f"negative: {value}"), state)
    return Ok(value + 1, state + 1)


def dec(state: int, value: int) -> Outcome[int, Bad, int]:
    if value < 0:
        return Err(Bad(f"negative: {value}"), state)
    return Ok(value - 1 if value > 0 else 0, state + 1)


def dbl(state: int, value: int) -> Outcome[int, Bad, int]:
    if value < 0:
        return Err(Bad(f"negative: {value}"), state)
    return Ok(value * 2 % 1_000_003, state + 1)


def half(state: int, value: int) -> Outcome[int, Bad, int]:
    if value < 0:
        return Err(Bad(f"negative: {value}"), state)
    return Ok(value // 2, state + 1)


async def ainc(state: int, value: int) -> Outcome[int, Bad, int]:
    await asyncio.sleep(0)
    return inc(state, value)


async def adbl(state: int, value: int) -> Outcome[int, Bad, int]:
    await asyncio.sleep(0)
    return dbl(state, value)


def pick(pair: tuple[int, int]) -> int:
    return max(pair)


def spread(value: int) -> list[int]:
    return [value, value + 1, value + 2]


def total(values: list[int]) -> int:
    return sum(values) % 1_000_003


def recover(error: Bad) -> int:
    return 0


#: What ``write_plan`` answers (the benchmark sets it).
PLAN: list[str] = ["inc"]


def write_plan(state: int, request: PlanRequest) -> Outcome[int, Never, str]:
    """A scripted planner: the text in :data:`PLAN`."""
    return Ok(PLAN[0], state)
