"""The support desk's replies (examples/support/reply.mce) and how they are scored.

``reply.mce`` drafts the answer to a refund ticket with a model (``respond``); ``judge.mce``
asks a model to grade that answer (``judge``). ``mcec eval`` runs ``respond`` over the
tickets of ``tickets.jsonl`` and scores every answer twice: with :func:`decision_matches`
(a Python evaluator: the decision is the expected one) and with the judge (an LLM judge
whose typed :class:`Verdict` becomes an assertion and a label). See README.md, "Evaluating
the replies".
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from examples.support.desk import Ticket

__all__ = ["Answer", "Graded", "Verdict", "decision_matches"]


class Answer(BaseModel):
    """The desk's answer to a ticket: what it decided, and the reply to the customer."""

    decision: Literal["refund", "escalate", "decline"]
    reply: str


class Graded(BaseModel):
    """What the judge is shown: the ticket, the answer given, and the answer expected (if any)."""

    input: Ticket
    output: Answer
    expected: Answer | None = None


class Verdict(BaseModel):
    """The judge's verdict: ``grounded`` (an assertion) — the reply names the customer and the
    ticket; ``tone`` (a label); ``reason`` (shown beside both)."""

    grounded: bool
    tone: Literal["warm", "neutral", "curt"]
    reason: str


def decision_matches(case: Any, output: Answer) -> bool:
    """A Python evaluator, ``(case, output) -> bool``: the answer's decision is the one the
    case expects (a case without an expected answer passes)."""
    expected: Answer | None = case.expected_output
    return expected is None or output.decision == expected.decision
