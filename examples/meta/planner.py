"""A scripted planner for meta.mce's ``write_plan``: plans without a network.

``--model planner=py:examples.meta.planner:plan`` puts :func:`plan` in place of
the spec's ``model planner``; tests also serve it from an OpenAI-compatible HTTP
server, so the real client carries the requests.

It is a function of the prompt ``plan.j2`` rendered, and it makes the mistake a
hurried model makes: it maps the chosen specialist over the task's parts with
``each(limit=3) …`` but forgets that the plan is given the whole ``Task``, not
the list of its parts. The checker rejects that plan (MCE012: the plan takes
Task, but the ``each`` takes list[str]); shown the rejection, the planner reads
it and begins the plan with ``topics``, as the diagnostic's help says. The
specialist is ``statistics`` when the goal asks to count or measure, else
``research``; a step the toolbox does not list is never chosen.
"""

from __future__ import annotations

import re

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text

__all__ = ["plan"]

_TASK = re.compile(r"^Task: (?P<task>.*)$", re.M)
_STEP = re.compile(r"^(?P<name>[a-z_]+) : ", re.M)


def plan(request: LLMRequest) -> Reply:
    """The plan for the task in ``request``'s prompt (see the module docstring)."""
    prompt = request.rendered
    task = _TASK.search(prompt)
    if task is None:
        return text("I see no task to plan.")
    offered = {m["name"] for m in _STEP.finditer(prompt)}
    wanted = "statistics" if re.search(r"\b(count|measure|how many)\b", task["task"]) else "research"
    if wanted not in offered:
        return text(f"I would use {wanted}, but the toolbox does not offer it.")
    body = f"each(limit=3) {wanted}"
    rejected = "rejected by the checker" in prompt
    if rejected and "MCE012" in prompt and "takes Task" in prompt and "topics" in offered:
        return text(f"topics >>= {body}")
    return text(body)
