"""Steps for the worker tests: each appends ``STEP INPUT PID`` to the file named by
``MCEC_EFFECTS`` after sleeping ``MCEC_PACE`` seconds, so a test counts which effects ran, how
often, and in which worker process."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, replace
from typing import Annotated

from agentmonad import Append, Ok, Outcome


@dataclass(frozen=True)
class Tally:
    """What the run did, one line per step."""

    done: Annotated[tuple[str, ...], Append] = ()


async def _effect(step: str, text: str, state: Tally) -> Outcome[Tally, None, str]:
    await asyncio.sleep(float(os.environ.get("MCEC_PACE", "0")))
    path = os.environ.get("MCEC_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{step} {text.split('.')[0]} {os.getpid()}\n")
            out.flush()
            os.fsync(out.fileno())
    return Ok(f"{text}.{step}", replace(state, done=state.done + (step,)))


async def first(state: Tally, text: str) -> Outcome[Tally, None, str]:
    return await _effect("first", text, state)


async def second(state: Tally, text: str) -> Outcome[Tally, None, str]:
    return await _effect("second", text, state)


async def third(state: Tally, text: str) -> Outcome[Tally, None, str]:
    return await _effect("third", text, state)
