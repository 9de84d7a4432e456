"""A scripted model for judge.mce's ``grader``: the LLM judge without a network.

``--model grader=py:examples.support.judge:grade`` puts :func:`grade` in place of the
spec's ``model grader``. It reads the rendered prompt (the ticket id, the customer and the
reply) and answers a ``Verdict`` as a model following the prompt would: the reply is
grounded when it names the customer and quotes the ticket id; its tone is warm when it
apologises or thanks, curt when it does neither and does not name the customer, neutral
otherwise. Each request is logged like the writer's (``SUPPORT_MODEL_LOG``: ``judge ID``).
"""

from __future__ import annotations

import json
import re

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text

from examples.support.writer import log_request

__all__ = ["grade"]

_FIELD = re.compile(r"^(?P<key>Ticket|Customer|Reply): (?P<value>.*)$", re.M)


def grade(request: LLMRequest) -> Reply:
    """The verdict on the reply in ``request``'s prompt (see the module docstring)."""
    fields = {m["key"]: m["value"].strip() for m in _FIELD.finditer(request.rendered)}
    if not {"Ticket", "Customer", "Reply"} <= fields.keys():
        return text("There is no reply here to grade.")
    ticket, customer, reply = fields["Ticket"], fields["Customer"], fields["Reply"]
    log_request("judge", ticket)
    named, quoted = customer in reply, ticket in reply
    kind = any(word in reply.lower() for word in ("sorry", "thank"))
    tone = "warm" if kind else "neutral" if named else "curt"
    missing = [what for what, ok in (("the customer's name", named), ("the ticket id", quoted)) if not ok]
    reason = "names the customer and quotes the ticket" if not missing else "lacks " + " and ".join(missing)
    return text(json.dumps({"grounded": not missing, "tone": tone, "reason": reason}))
