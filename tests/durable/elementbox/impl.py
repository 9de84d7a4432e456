"""Steps for the element tests (tests/durable/test_elements.py): every call appends a line to the
file named by ``MCEC_EFFECTS`` (its pid and what it did: where each element ran, and how often)
after sleeping ``MCEC_PACE`` seconds."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from typing import Annotated

from agentmonad import Append, Ok, Outcome, Sum


@dataclass(frozen=True)
class Tally:
    """What the elements did: one line per stateful call, and a sum."""

    seen: Annotated[tuple[str, ...], Append] = ()
    total: Annotated[int, Sum] = 0


@dataclass
class Refused(Exception):
    """An element the step will not take (a dataclass: its fields are what a run records)."""

    n: int

    def __str__(self) -> str:
        return f"{self.n} refused"


def _effect(line: str) -> None:
    path = os.environ.get("MCEC_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {line}\n")


async def _pace() -> None:
    await asyncio.sleep(float(os.environ.get("MCEC_PACE", "0")))


async def work(state: Tally, n: int) -> Outcome[Tally, Refused, int]:
    await _pace()
    _effect(f"work {n}")
    return Ok(n * 10, state)


async def note(state: Tally, n: int) -> Outcome[Tally, Refused, str]:
    await _pace()
    _effect(f"note {n}")
    return Ok(f"#{n}", replace(state, seen=state.seen + (f"n{n}",), total=state.total + n))


async def picky(state: Tally, n: int) -> Outcome[Tally, Refused, int]:
    """Refuses 7; the others take a while (so the refusal cancels elements in flight)."""
    await _pace()
    if n == 7:
        _effect(f"refuse {n}")
        raise Refused(n)
    await asyncio.sleep(float(os.environ.get("MCEC_PACE", "0")) * 5)
    _effect(f"picky {n}")
    return Ok(n, state)


def add(pair: tuple[list[int], list[int]]) -> list[int]:
    return [a + b for a, b in zip(*pair)]


async def late(state: Tally, n: int) -> Outcome[Tally, Refused, int]:
    """Slower than the timeout around its each allows for all of them."""
    await asyncio.sleep(0.25)
    _effect(f"late {n}")
    return Ok(n, state)


def gave_up(error: object) -> list[int]:
    return []
