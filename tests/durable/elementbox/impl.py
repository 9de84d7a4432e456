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


#: The elements above 7 of ``picky`` that started, per run (in this process).
_STARTED: dict[str, set[int]] = {}


def _run_of_this_call() -> str:
    """The durable run this call belongs to (an element's workflow id is ``{run_id}/{element}``)."""
    from agentmonad.durable.dbos import workflow_id

    return (workflow_id() or "").split("/", 1)[0]


async def picky(state: Tally, n: int) -> Outcome[Tally, Refused, int]:
    """Refuses 7 once 8 has started; those above 7 take 30 s (so the refusal always finds one in
    flight, which fail-fast must cancel), those below are quick."""
    await _pace()
    started = _STARTED.setdefault(_run_of_this_call(), set())
    if n == 7:
        for _ in range(500):  # 8 starts once 5 or 6 frees its slot (up to 5 s on a loaded machine)
            if 8 in started:
                break
            await asyncio.sleep(0.01)
        _effect(f"refuse {n}")
        raise Refused(n)
    if n > 7:
        started.add(n)
        await asyncio.sleep(30)
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


async def gated(state: Tally, n: int) -> Outcome[Tally, Refused, str]:
    """Waits until the file ``n`` exists in the folder ``MCEC_GATES`` (the test opens it)."""
    gate = os.path.join(os.environ["MCEC_GATES"], str(n))
    while not os.path.exists(gate):
        await asyncio.sleep(0.01)
    _effect(f"gated {n}")
    return Ok(f"#{n}", state)


async def hold(state: Tally, n: int) -> Outcome[Tally, Refused, int]:
    """Notes that it holds, then waits until the file ``n`` exists in the folder ``MCEC_GATES``."""
    _effect(f"hold {n}")
    gate = os.path.join(os.environ["MCEC_GATES"], str(n))
    while not os.path.exists(gate):
        await asyncio.sleep(0.01)
    return Ok(n, state)
