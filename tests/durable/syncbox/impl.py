"""A sync step for the durable-run tests: each call sleeps ``MCEC_PACE`` seconds, then appends
``bump N`` to the file named by ``MCEC_EFFECTS`` (what a test counts to see that each completed
effect ran once) and gives N + 1."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import NoReturn

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Count:
    """How many steps ran."""

    done: int = 0


def bump(state: Count, n: int) -> Outcome[Count, NoReturn, int]:
    time.sleep(float(os.environ.get("MCEC_PACE", "0")))
    path = os.environ.get("MCEC_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"bump {n}\n")
            out.flush()
            os.fsync(out.fileno())
    return Ok(n + 1, replace(state, done=state.done + 1))
