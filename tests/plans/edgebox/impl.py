"""Steps for tests/plans/edgebox: ``spin.mce`` (a loop that never ends by itself) and
``alias.mce`` (types the checker cannot relate: a Python alias, an abstract error base).

Each planner (``write_plan``) takes its plan from ``SCRIPT[0]``; ``RUNS`` counts the runs of
``same``, so a test sees how much of a plan ran before a timeout stopped it.
"""

from __future__ import annotations

import abc
from typing import Any, Never

from pydantic import BaseModel, ConfigDict

from agentmonad import Err, Ok, Outcome, PlanRequest


class Log(BaseModel):
    """The state of both specs (nothing in it: these tests look at values and errors)."""

    model_config = ConfigDict(frozen=True)

SCRIPT: list[str] = ["same"]
RUNS: list[int] = [0]


def write_plan(state: Log, request: PlanRequest) -> Outcome[Log, Never, str]:
    """The scripted planner: ``SCRIPT[0]``."""
    return Ok(SCRIPT[0], state)


# ---------------------------------------------------------------- spin.mce


def same(n: int) -> int | str:
    """Gives its input back: a loop over it goes round until its bound."""
    RUNS[0] += 1
    return n


def tick(n: int) -> int:
    """Gives its input back, counted too."""
    RUNS[0] += 1
    return n


# ---------------------------------------------------------------- alias.mce

#: A type alias: the checker cannot relate `Label` to `str` or `int` (it is no class).
Label = str
#: An alias of int: a relation the checker cannot prove that happens to hold.
Code = int


class AgentError(Exception, abc.ABC):
    """An abstract base: a class may count as one without deriving from it."""


class Refused(AgentError):
    """A declared kind of AgentError."""


class Internal(Exception):
    """No AgentError at all."""


def label(n: int) -> Label:
    return f"label-{n}"


def code(n: int) -> Code:
    return n + 1


def unlabel(text: Label) -> int:
    return len(text)


def is_empty(text: str) -> bool:
    return text == ""


def pick(pair: tuple[int, bool]) -> int:
    return pair[0] if pair[1] else -pair[0]


def double(n: int) -> int:
    return n * 2


def anything(n: int) -> Any:
    """Declared `-> Any`: what the checker lets flow anywhere."""
    return f"any-{n}"


def boom(state: Log, n: int) -> Outcome[Log, Internal, int]:
    return Err(Internal(f"boom {n}"), state)


def refuse(state: Log, n: int) -> Outcome[Log, Refused, int]:
    if n % 2:
        return Err(Refused(f"odd {n}"), state)
    return Ok(n, state)


def mend(error: AgentError) -> int:
    return 0


def mend_internal(error: Internal) -> int:
    return -1
