"""A support desk's types for the ``ask`` cases (docs/language.md §15; tests/codegen/cases/ask.mce,
tests/cli/test_ask.py): a refund asked for approval, tickets triaged by a person."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel


@dataclass(frozen=True)
class Desk:
    """The desk's state: its name (a template reads it)."""

    name: str = "north"


class Refund(BaseModel):
    order: str
    amount: float


@dataclass(frozen=True)
class Approval:
    ok: bool
    note: str = ""


@dataclass(frozen=True)
class Ticket:
    subject: str


def settle(approval: Approval) -> str:
    """What the desk does with an approval."""
    return "refunded" if approval.ok else f"refused: {approval.note}"


def label(choice: str) -> str:
    return f"[{choice}]"


def said(yes: bool) -> str:
    return "confirmed" if yes else "not confirmed"
