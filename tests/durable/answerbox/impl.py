"""Steps for the answer race (tests/durable/test_races.py): claims wait for a person's approval;
each approved claim is noted after ``MCEC_PACE`` seconds, with the line ``noted YES PID`` in the
file named by ``MCEC_EFFECTS`` (what the test counts: once per answer, in the answering process)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from typing import NoReturn

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Desk:
    """How many claims were noted."""

    noted: int = 0


@dataclass(frozen=True)
class Claim:
    """A claim to approve: its id."""

    id: str


def claims(text: str) -> list[Claim]:
    """``"E1,E2"`` as claims."""
    return [Claim(part) for part in text.split(",")]


def note(state: Desk, yes: bool) -> Outcome[Desk, NoReturn, str]:
    """Note an answered claim (slowly: ``MCEC_PACE``)."""
    time.sleep(float(os.environ.get("MCEC_PACE", "0")))
    with open(os.environ["MCEC_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(f"noted {yes} {os.getpid()}\n")
        out.flush()
        os.fsync(out.fileno())
    return Ok("paid" if yes else "refused", replace(state, noted=state.noted + 1))
