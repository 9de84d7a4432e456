"""Steps for the durable waiting tests: refunds a person approves (``desk.mce``: the ``ask``
declaration; ``refunds.mce``: a Python step that asks, ``agentmonad.human.ask``); every step appends a line per call to the file
named by ``MCEC_EFFECTS`` (what a test counts to see what ran again after a resume)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Never

from pydantic import BaseModel

from agentmonad import Ok, Outcome, Site
from agentmonad.human import BadAnswer, NoAnswer, NoOneToAsk, ask


class Refund(BaseModel):
    """A refund to approve."""

    order: str
    amount: float


@dataclass
class Unanswered(Exception):
    """Nobody answered (the ask's typed error, as this spec declares it: ``NoOneToAsk``,
    ``NoAnswer`` or ``BadAnswer`` and its message)."""

    why: str

    def __str__(self) -> str:
        return self.why


@dataclass(frozen=True)
class Desk:
    """The run's state: how many refunds were paid."""

    paid: int = 0


@dataclass(frozen=True)
class Approval:
    """A person's answer."""

    ok: bool
    note: str = ""


SITE = Site("approve", "refunds.mce", 1, 1)


def _effect(line: str) -> None:
    path = os.environ.get("MCEC_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


def refunds(text: str) -> list[Refund]:
    """``"A-1:120,B-2:80"`` as refunds."""
    return [Refund(order=o, amount=float(a)) for o, a in (part.split(":") for part in text.split(","))]


async def approve(state: Desk, refund: Refund) -> Outcome[Desk, Unanswered, Approval]:
    """Ask a person whether to pay ``refund``."""
    _effect(f"asking {refund.order}")
    try:
        answer = await ask(SITE, "approve", refund, Approval, f"Refund {refund.amount} for {refund.order}?", None)
    except (NoOneToAsk, NoAnswer, BadAnswer) as exc:
        raise Unanswered(f"{type(exc).__name__}: {exc}") from None
    return Ok(answer, state)


async def pay(state: Desk, approval: Approval) -> Outcome[Desk, Never, str]:
    """Pay an approved refund (after ``MCEC_PACE`` seconds: a test kills the process meanwhile)."""
    await asyncio.sleep(float(os.environ.get("MCEC_PACE", "0")))
    _effect(f"pay {approval.ok}")
    if not approval.ok:
        return Ok(f"refused: {approval.note}", state)
    return Ok("paid", Desk(state.paid + 1))


def skip(refund: Refund) -> str:
    """What a refund nobody approved in time settles as."""
    return f"skipped {refund.order}"


def first(text: str) -> Refund:
    """The first refund of ``text``."""
    return refunds(text)[0]


def numbers(text: str) -> list[int]:
    """400 numbers: pure work for ``each(limit=1)`` to go through one at a time."""
    return list(range(400))


def double(number: int) -> int:
    """Twice ``number``."""
    return 2 * number


def total(numbers: list[int]) -> str:
    """The sum of ``numbers``, as text."""
    return f"total {sum(numbers)}"


async def note(state: Desk, text: str) -> Outcome[Desk, Never, str]:
    """Note ``text`` (an effect: a line in the effects file)."""
    _effect(f"note {text}")
    return Ok(text, state)
