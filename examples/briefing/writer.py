"""A scripted model for the briefing's ``summarize`` step: a summary without a network.

``mcec run examples/briefing/briefing.mce summarized_briefing --input '{"city": "Oslo"}'
--model writer=py:examples.briefing.writer:summarize`` puts :func:`summarize` in
place of the spec's ``model writer`` (an ``agentmonad.testing.FunctionModel``);
tests serve the same function from an OpenAI-compatible HTTP server.

It reads the prompt the step rendered — the briefing's ``News:``,
``Weather:`` and ``Markets:`` lines and the sources said to be unavailable —
and answers as a model asked for structured output would: JSON of the schema
in the request's ``response_format`` (``Summary``). The headline is the first
news item (or the weather, when the news is unavailable); each section gives
one point. A prompt with no briefing lines in it gets a reply that is not
JSON, so the step sends a repair and finally fails with ``LLMFailed``.
"""

from __future__ import annotations

import json
import re

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text

__all__ = ["summarize"]

_SECTION = re.compile(r"^(?P<name>News|Weather|Markets): (?P<body>.*)$", re.M)
_MISSING = re.compile(r"^These sources were unavailable: (?P<names>.*)\.$", re.M)


def summarize(request: LLMRequest) -> Reply:
    """The summary of the briefing in ``request``'s prompt (see the module docstring)."""
    prompt = request.rendered
    sections = {m["name"]: m["body"].strip() for m in _SECTION.finditer(prompt)}
    if not sections:
        return text("There is no briefing here to summarize.")
    missing_line = _MISSING.search(prompt)
    missing = [name.strip() for name in missing_line["names"].split(",")] if missing_line else []
    news = [item.strip() for item in sections.get("News", "").split(";") if item.strip()]
    available = [item for item in news if "unavailable" not in item]
    headline = available[0] if available else sections.get("Weather", "No news today")
    points = [f"{name}: {body}" for name, body in sections.items()]
    return text(json.dumps({"headline": headline[:120], "points": points[:5], "missing": missing}))
