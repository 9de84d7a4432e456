"""The Python side of the refund approval that outlives a deploy (docs/language.md §13, "Changing a
spec with runs in flight"): ``approval.mce`` is the version runs start on, ``approval_v2.mce`` the
one they are moved to while they wait (a step after the approval, a field in the state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Never

from agentmonad import Ok, Outcome
from examples.support.desk import Approval, Ticket


@dataclass(frozen=True)
class Ledger:
    """The first version's state: the refunds paid."""

    paid: int = 0


@dataclass(frozen=True)
class NotifiedLedger:
    """The second version's state: a field more, with a default (a moved run starts it at 0)."""

    paid: int = 0
    notified: int = 0


async def pay(state: Ledger, decision: tuple[Ticket, Approval]) -> Outcome[Ledger, Never, str]:
    """Pay the refund when approved: the reply to the customer."""
    ticket, approval = decision
    if not approval.approve:
        return Ok(f"{ticket.id}: refund declined", state)
    return Ok(f"{ticket.id}: refunded {ticket.amount:.2f}", Ledger(state.paid + 1))


async def pay_v2(state: NotifiedLedger, decision: tuple[Ticket, Approval]) -> Outcome[NotifiedLedger, Never, str]:
    """:func:`pay`, in the second version's state."""
    ticket, approval = decision
    if not approval.approve:
        return Ok(f"{ticket.id}: refund declined", state)
    return Ok(f"{ticket.id}: refunded {ticket.amount:.2f}", NotifiedLedger(state.paid + 1, state.notified))


async def notify(state: NotifiedLedger, reply: str) -> Outcome[NotifiedLedger, Never, str]:
    """The step the second version adds after the approval: the customer is told."""
    return Ok(f"{reply} (customer notified)", NotifiedLedger(state.paid, state.notified + 1))


async def check(state: Ledger, ticket: Ticket) -> Outcome[Ledger, Never, Ticket]:
    """A check of the ticket before anyone is asked: a version that adds it strands the runs
    already waiting (their question is no longer the first effect of its branch)."""
    return Ok(ticket, state)
