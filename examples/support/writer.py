"""A scripted model for reply.mce's ``writer``: the desk's answers without a network.

``mcec eval examples/support/reply.mce respond examples/support/tickets.jsonl --model
writer=py:examples.support.writer:draft …`` puts :func:`draft` in place of the spec's
``model writer``. It reads the rendered prompt (the ticket's id, customer, amount and
reason) and answers as a model asked for an ``Answer`` would (JSON of its schema), with
the flaws an evaluation is there to find:

- it follows the threshold (refund up to 100, escalate above) but never declines: a
  ticket for an item used for over a year is refunded or escalated all the same;
- within 1 of the threshold it wavers: its first, third, … answer about a ticket in a
  process says "refund", its second, fourth, … "escalate" (what sampling does to a real
  model near a boundary; ``mcec eval --repeat`` sees it);
- a ticket whose reason is written in capitals gets "Dear customer" and no apology (the
  judge finds it neither grounded nor warm).

``SUPPORT_WRITER_WORSE=ID`` makes it decline ticket ID (a regression made on purpose, which
``--baseline`` flags); ``SUPPORT_MODEL_DELAY`` (seconds) slows every answer down and
``SUPPORT_MODEL_LOG`` names a file that gets one line ``writer ID`` per request (the
kill-and-resume test counts them).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text

__all__ = ["draft", "log_request"]

_FIELD = re.compile(r"^(?P<key>Ticket|Customer|Amount|Reason): (?P<value>.*)$", re.M)
#: How often each ticket was asked about in this process (the wavering near the threshold).
_ASKED: Counter[str] = Counter()
THRESHOLD = 100.0


async def draft(request: LLMRequest) -> Reply:
    """The answer to the ticket in ``request``'s prompt (see the module docstring)."""
    fields = {m["key"]: m["value"].strip() for m in _FIELD.finditer(request.rendered)}
    if not {"Ticket", "Customer", "Amount", "Reason"} <= fields.keys():
        return text("I see no ticket to answer.")
    ticket, customer, reason = fields["Ticket"], fields["Customer"], fields["Reason"]
    amount = float(fields["Amount"])
    log_request("writer", ticket)
    attempt = _ASKED[ticket]
    _ASKED[ticket] += 1
    await _delay()
    if os.environ.get("SUPPORT_WRITER_WORSE") == ticket:
        decision = "decline"
    elif abs(amount - THRESHOLD) <= 1:
        decision = "refund" if attempt % 2 == 0 else "escalate"
    else:
        decision = "refund" if amount <= THRESHOLD else "escalate"
    shouting = reason.upper() == reason and any(c.isalpha() for c in reason)
    if shouting:
        reply = f"Dear customer, your request about ticket {ticket} is noted."
    elif decision == "refund":
        reply = f"Dear {customer}, we are sorry: {amount:.2f} is refunded for ticket {ticket}."
    elif decision == "escalate":
        reply = f"Dear {customer}, thank you for your patience: a colleague reviews ticket {ticket} today."
    else:
        reply = f"Dear {customer}, we cannot refund ticket {ticket}."
    return text(json.dumps({"decision": decision, "reply": reply}))


async def _delay() -> None:
    seconds = float(os.environ.get("SUPPORT_MODEL_DELAY", "0") or 0)
    if seconds > 0:
        await asyncio.sleep(seconds)


def log_request(model: str, ticket: str) -> None:
    """Append ``MODEL TICKET`` to ``$SUPPORT_MODEL_LOG`` (when set): one line per request."""
    path = os.environ.get("SUPPORT_MODEL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:  # one short line per write: appends stay whole
            log.write(f"{model} {ticket}\n")
