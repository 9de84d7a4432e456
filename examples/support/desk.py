"""The support desk's Python side (examples/support/support.mce): tickets, refunds, payments.

A refund is paid by appending a line to the file named by ``SUPPORT_LEDGER`` (default
``ledger.txt`` in the working directory): a stand-in for the payment system, keyed by the
ticket id so that paying twice is seen at once."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Annotated, Never

from pydantic import BaseModel

from agentmonad import Append, Ok, Outcome


class Ticket(BaseModel):
    """A customer's refund request."""

    id: str
    customer: str
    amount: float
    reason: str


class Approval(BaseModel):
    """A person's decision on a refund over the threshold."""

    approve: bool
    note: str = ""


@dataclass(frozen=True)
class Desk:
    """What the desk did: one line per ticket."""

    log: Annotated[tuple[str, ...], Append] = ()


#: Refunds up to this amount are paid without asking anyone.
THRESHOLD = 100.0


@dataclass(frozen=True)
class Small:
    """A refund paid without asking."""

    ticket: Ticket


@dataclass(frozen=True)
class Large:
    """A refund over the threshold: a person approves it first."""

    ticket: Ticket


def triage(ticket: Ticket) -> Small | Large:
    """Small refunds are paid at once; larger ones wait for a person's approval."""
    return Small(ticket) if ticket.amount <= THRESHOLD else Large(ticket)


def auto(small: Small) -> tuple[Ticket, Approval]:
    """The approval of a small refund."""
    return small.ticket, Approval(approve=True, note="under the threshold")


def ticket_of(large: Large) -> Ticket:
    """The ticket of a large refund (what the person is asked about)."""
    return large.ticket


def _ledger(line: str) -> None:
    with open(os.environ.get("SUPPORT_LEDGER", "ledger.txt"), "a", encoding="utf-8") as out:
        out.write(line + "\n")


async def settle(state: Desk, decision: tuple[Ticket, Approval]) -> Outcome[Desk, Never, str]:
    """Pay an approved refund (or not): the reply to the customer."""
    ticket, approval = decision
    if not approval.approve:
        reply = f"{ticket.id}: refund declined ({approval.note})"
    else:
        _ledger(f"{ticket.id} paid {ticket.amount:.2f} to {ticket.customer}")
        reply = f"{ticket.id}: refunded {ticket.amount:.2f}"
    return Ok(reply, replace(state, log=state.log + (reply,)))
