"""A scripted model for the research agent's ``decide`` step: ReAct without a network.

``mcec run examples/research/research.mce react --model planner=py:examples.research.planner:plan``
puts :func:`plan` in place of the spec's ``model planner`` (it becomes an
``agentmonad.testing.FunctionModel``); tests serve the same function from an
OpenAI-compatible HTTP server, so the real client carries its requests.

It is a function of the request, not a canned script: it reads the prompt
``decide.j2`` rendered (the question and the observations so far) and the
functions offered (one per member of ``Answer | SearchArgs | AddArgs``), and
plays what a model following the prompt would: one tool call for the next
part of the question (parts joined by " and ") that has no observation yet —
``AddArgs`` for "N plus M", ``SearchArgs`` otherwise — then ``Answer`` built
from the observations the server's tools returned. A request it cannot
follow (no ``Question:`` line, or the function it needs is not offered) gets
a text reply, which does not validate as the union, so the step is sent a
repair and finally fails with ``LLMFailed``, as with a confused model.
"""

from __future__ import annotations

import re

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text, tool_call

__all__ = ["plan"]

_QUESTION = re.compile(r"^Question: (?P<question>.*)$", re.M)
_OBSERVATION = re.compile(r"^Observation (?P<n>\d+): (?P<text>.*)$", re.M)
_SUM = re.compile(r"^(?P<a>\d+) plus (?P<b>\d+)$")


def plan(request: LLMRequest) -> Reply:
    """The next ReAct move for ``request`` (see the module docstring)."""
    prompt = request.rendered
    asked = _QUESTION.search(prompt)
    if asked is None:
        return text("I see no question to work on.")
    question = asked["question"].strip()
    observations = [m["text"] for m in _OBSERVATION.finditer(prompt)]
    arguments: dict[str, object]
    parts = [part.strip() for part in question.split(" and ") if part.strip()]
    if len(observations) >= len(parts):
        choice, arguments = "Answer", {"text": f"{question} -> {' | '.join(observations)}"}
    else:
        part = parts[len(observations)]
        total = _SUM.match(part.lower())
        if total is not None:
            choice, arguments = "AddArgs", {"a": int(total["a"]), "b": int(total["b"])}
        else:
            choice, arguments = "SearchArgs", {"query": part}
    if choice not in request.tool_names:
        return text(f"I would call {choice}, but it is not offered ({', '.join(request.tool_names) or 'nothing'}).")
    return tool_call(choice, arguments, id=f"call_{len(observations)}")
