"""Steps for the tests of moving runs in flight to a new spec version (``mcec runs upgrade``): a
refund loaded, approved by a person, paid — and, in the new version, the customer notified. Every
step appends a line per call to the file named by ``MCEC_EFFECTS`` (what a test reads to see
which version ran)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Never

from pydantic import BaseModel

from agentmonad import Ok, Outcome


class Refund(BaseModel):
    """A refund to approve."""

    order: str
    amount: float


class Approval(BaseModel):
    """A person's answer."""

    ok: bool


@dataclass(frozen=True)
class Desk:
    """The state of the first version: how many refunds were paid."""

    paid: int = 0


@dataclass(frozen=True)
class AuditedDesk:
    """The state of the new version: a field more, with a default (a run moved keeps its count)."""

    paid: int = 0
    notified: int = 0


def _effect(line: str) -> None:
    path = os.environ.get("MCEC_EFFECTS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


async def load(state: Desk, text: str) -> Outcome[Desk, Never, Refund]:
    """``"A-1:120"`` as a refund."""
    _effect(f"load {text}")
    order, amount = text.split(":")
    return Ok(Refund(order=order, amount=float(amount)), state)


async def load_audited(state: AuditedDesk, text: str) -> Outcome[AuditedDesk, Never, Refund]:
    """:func:`load`, in the new version's state."""
    _effect(f"load {text}")
    order, amount = text.split(":")
    return Ok(Refund(order=order, amount=float(amount)), state)


async def check(state: Desk, refund: Refund) -> Outcome[Desk, Never, Refund]:
    """A check added before the approval (the change that strands a waiting run)."""
    _effect(f"check {refund.order}")
    return Ok(refund, state)


async def pay(state: Desk, approval: Approval) -> Outcome[Desk, Never, str]:
    """Pay when approved."""
    _effect(f"pay {approval.ok}")
    return Ok("paid" if approval.ok else "refused", Desk(state.paid + (1 if approval.ok else 0)))


async def pay_audited(state: AuditedDesk, approval: Approval) -> Outcome[AuditedDesk, Never, str]:
    """:func:`pay`, in the new version's state."""
    _effect(f"pay {approval.ok}")
    return Ok("paid" if approval.ok else "refused",
              AuditedDesk(state.paid + (1 if approval.ok else 0), state.notified))


async def notify(state: AuditedDesk, text: str) -> Outcome[AuditedDesk, Never, str]:
    """The step the new version adds after the approval: the customer is told."""
    _effect(f"notify {text}")
    return Ok(f"{text}, customer notified", AuditedDesk(state.paid, state.notified + 1))


class Claim(BaseModel):
    """A refund as a later version loads it: with a reason it cannot do without."""

    order: str
    amount: float
    reason: str


async def load_claim(state: Desk, text: str) -> Outcome[Desk, Never, Claim]:
    """``"A-1:120"`` as a claim (a changed output type: runs that passed ``load`` cannot carry over)."""
    _effect(f"load {text}")
    order, amount = text.split(":")
    return Ok(Claim(order=order, amount=float(amount), reason="damaged"), state)


@dataclass(frozen=True)
class SourcedDesk:
    """A state with fields and no defaults: a first-version state cannot be read as one without a
    migration (:func:`from_desk`)."""

    paid: int
    notified: int
    source: str


def from_desk(desk: Desk) -> SourcedDesk:
    """The migration of a first-version state: what a moved run's states become."""
    return SourcedDesk(paid=desk.paid, notified=0, source="moved from v1")


async def load_sourced(state: SourcedDesk, text: str) -> Outcome[SourcedDesk, Never, Refund]:
    """:func:`load`, in the migrated state."""
    _effect(f"load {text}")
    order, amount = text.split(":")
    return Ok(Refund(order=order, amount=float(amount)), state)


async def pay_sourced(state: SourcedDesk, approval: Approval) -> Outcome[SourcedDesk, Never, str]:
    """:func:`pay`, in the migrated state."""
    _effect(f"pay {approval.ok}")
    return Ok("paid" if approval.ok else "refused",
              SourcedDesk(state.paid + (1 if approval.ok else 0), state.notified, state.source))


async def notify_sourced(state: SourcedDesk, text: str) -> Outcome[SourcedDesk, Never, str]:
    """:func:`notify`, in the migrated state."""
    _effect(f"notify {text}")
    return Ok(f"{text}, customer notified", SourcedDesk(state.paid, state.notified + 1, state.source))


def claim_of(refund: Refund) -> Claim:
    """The output migration of ``load`` (a first-version refund as the claim a later version loads)."""
    return Claim(order=refund.order, amount=refund.amount, reason="moved from v1")


def claim_of_small(refund: Refund) -> Claim:
    """:func:`claim_of` for refunds up to 100; it fails on a larger one (that run stays)."""
    if refund.amount > 100:
        raise ValueError(f"{refund.order} is over 100: ask the customer why")
    return claim_of(refund)
