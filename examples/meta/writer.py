"""A scripted writer for meta.mce's ``synthesize``: the report without a network.

``--model writer=py:examples.meta.writer:synthesize`` puts :func:`synthesize` in
place of ``model writer``. It reads the ``Section: Title: body`` lines of the
prompt ``synthesize.j2`` rendered and answers as a model asked for structured
output would: JSON of ``Report``, the headline naming every section's title.
"""

from __future__ import annotations

import json
import re

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text

__all__ = ["synthesize"]

_SECTION = re.compile(r"^Section: (?P<title>[^:]*): (?P<body>.*)$", re.M)


def synthesize(request: LLMRequest) -> Reply:
    """The report of the sections in ``request``'s prompt."""
    sections = [{"title": m["title"], "body": m["body"]} for m in _SECTION.finditer(request.rendered)]
    if not sections:
        return text("There is nothing to report.")
    headline = "Report on " + ", ".join(s["title"] for s in sections)
    return text(json.dumps({"headline": headline, "sections": sections}))
