"""Steps for the durable-run tests: every step appends one line to the file named by
``MCEC_EFFECTS`` (what a test counts to see that each completed effect ran once), and sleeps
``MCEC_PACE`` seconds first (so a kill can land anywhere)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from typing import Annotated

from agentmonad import Append, Ok, Outcome, PlanRequest, Sum, Timeout


@dataclass(frozen=True)
class Log:
    """What the run did: one line per stateful step, and a count."""

    lines: Annotated[tuple[str, ...], Append] = ()
    total: Annotated[int, Sum] = 0


@dataclass
class Busy(Exception):
    """A source that asks to be asked again (a dataclass: its fields are what a durable run records)."""

    what: str

    def __str__(self) -> str:
        return f"{self.what} is busy"


def _effect(line: str) -> None:
    path = os.environ.get("MCEC_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())


async def _pace() -> None:
    await asyncio.sleep(float(os.environ.get("MCEC_PACE", "0")))


async def fetch(state: Log, topic: str) -> Outcome[Log, Busy, str]:
    await _pace()
    _effect(f"fetch {topic}")
    return Ok(f"<{topic}>", replace(state, lines=state.lines + (f"fetched {topic}",), total=state.total + 1))


async def flaky(state: Log, topic: str) -> Outcome[Log, Busy, str]:
    """Busy until the element has fetched twice (a retry's next attempt starts from the state the
    failed one reached); then the topic in capitals."""
    await _pace()
    _effect(f"flaky {topic}")
    if state.total < 2:
        raise Busy(topic)
    return Ok(topic.upper(), state)


async def slow(state: Log, topic: str) -> Outcome[Log, Busy, str]:
    """Never in time for its timeout."""
    await asyncio.sleep(30)
    return Ok(topic, state)


def measure(state: Log, text: str) -> Outcome[Log, Busy, int]:
    _effect(f"measure {len(text)}")
    return Ok(len(text), replace(state, total=state.total + len(text)))


async def shrink(state: Log, n: int) -> Outcome[Log, Busy, int | str]:
    """Halve n; below 4 the loop ends with a word."""
    await _pace()
    _effect(f"shrink {n}")
    return Ok(n // 2 if n >= 4 else f"small {n}", state)


def split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def join(parts: list[str]) -> str:
    return "+".join(parts)


def gave_up(error: Timeout) -> str:
    return "late"


def pair(values: tuple[str, str]) -> str:
    return "|".join(values)


def describe(n: int) -> str:
    return f"n={n}"


def words(text: str) -> str:
    return f"words:{text}"


@dataclass(frozen=True)
class Notes:
    """The sub-agent's own state."""

    written: tuple[str, ...] = ()


async def jot(state: Notes, text: str) -> Outcome[Notes, None, str]:
    await _pace()
    if os.environ.get("MCEC_DIE") == text:  # the process dies here (a crash, for the resume tests)
        os._exit(9)
    _effect(f"jot {text}")
    return Ok(f"{text}.", replace(state, written=state.written + (text,)))


def notes_for(state: Log) -> Notes:
    return Notes(written=state.lines[:1])


def write_plan(state: Log, request: PlanRequest) -> Outcome[Log, Busy, str]:
    """The scripted planner: a plan over the toolbox."""
    _effect("plan")
    return Ok("fetch >>= words", state)
