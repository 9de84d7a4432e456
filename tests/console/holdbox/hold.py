"""The step of hold.mce: ``hold`` is done at once with an item, except ``"wait"``, which waits
until the file ``$CONSOLE_HOLD`` exists (the test creates it once it has seen the run's progress
in the page)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Never

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Held:
    """The run's state: nothing to keep."""


async def hold(state: Held, item: str) -> Outcome[Held, Never, str]:
    """``item`` done, once it may be (see the module)."""
    if item == "wait":
        flag = Path(os.environ["CONSOLE_HOLD"])
        for _ in range(6000):  # at most 10 minutes: a test that never lets go fails, it does not hang
            if flag.exists():
                break
            await asyncio.sleep(0.1)
    return Ok(f"{item} done", state)
