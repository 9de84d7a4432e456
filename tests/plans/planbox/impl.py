"""Steps for tests/plans/planbox/box.mce: a small toolbox that plans are checked against.

The planner (``write_plan``) takes its plans from ``SCRIPT``, one per attempt
(the last repeats), and records every request it is given in ``REQUESTS``, so a
test can see what a planner was told, rejections included.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Never

from pydantic import BaseModel, ConfigDict

from agentmonad import Append, Err, Ok, Outcome, PlanRequest, Sum


class Notes(BaseModel):
    """The state: what ran (appended) and how many steps did (summed)."""

    model_config = ConfigDict(frozen=True)

    seen: Annotated[tuple[str, ...], Append] = ()
    steps: Annotated[int, Sum] = 0


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    fact: str


class Bad(Exception):
    """A step refused its input."""


def _noted(state: Notes, what: str) -> Notes:
    return state.model_copy(update={"seen": (*state.seen, what), "steps": state.steps + 1})


def shout(state: Notes, text: str) -> Outcome[Notes, Bad, str]:
    if "bad" in text:
        return Err(Bad(f"refused {text!r}"), _noted(state, "shout!"))
    return Ok(text.upper(), _noted(state, f"shout {text}"))


async def search(state: Notes, topic: str) -> Outcome[Notes, Bad, Finding]:
    await asyncio.sleep(0)
    if "bad" in topic:
        return Err(Bad(f"no finding on {topic!r}"), _noted(state, "search!"))
    return Ok(Finding(topic=topic, fact=f"{topic} has {len(topic)} letters"), _noted(state, f"search {topic}"))


async def slow(state: Notes, text: str) -> Outcome[Notes, Never, str]:
    await asyncio.sleep(30)
    return Ok(text, state)


def secret(state: Notes, text: str) -> Outcome[Notes, Never, str]:
    return Ok("s3cret", _noted(state, "secret"))


def summarize(finding: Finding) -> str:
    return finding.fact


def split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def count(text: str) -> int:
    return len(text)


def join(parts: list[str]) -> str:
    return "; ".join(parts)


def apology(error: Bad) -> str:
    return f"sorry: {error}"


SCRIPT: list[str] = ["shout"]
REQUESTS: list[PlanRequest] = []


def write_plan(state: Notes, request: PlanRequest) -> Outcome[Notes, Never, str]:
    """The scripted planner: plan number ``attempt`` of ``SCRIPT`` (the last repeats)."""
    REQUESTS.append(request)
    return Ok(SCRIPT[min(request.attempt, len(SCRIPT)) - 1], _noted(state, f"plan {request.attempt}"))
