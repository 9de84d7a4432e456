"""A scripted model for examples/batch/batch.mce: extraction without a network.

``mcec run examples/batch/batch.mce extract_all --model extractor=py:examples.batch.extractor:extract``
puts :func:`extract` in place of the spec's ``model extractor``. It reads the
rendered prompt (the document's id, title and text) and answers what a model
following it would: the id, the title, the number of words, and the most
frequent longer words as topics.

Two environment variables make it a model worth crashing on, for the README's
demonstration and the kill-and-resume test: ``BATCH_MODEL_DELAY`` (seconds each
answer takes, default 0) and ``BATCH_MODEL_LOG`` (a file to which each request
appends one line, ``start ID`` before answering and ``end ID`` after, so a test
can count how often each document was asked about).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter

from agentmonad.llm import LLMRequest
from agentmonad.testing import Reply, text, tool_call

__all__ = ["extract"]

_FIELD = re.compile(r"^\s*(?P<key>Document ID|Title|Text): (?P<value>.*)$", re.M)
_WORD = re.compile(r"[a-z]+")
#: Words too common to be a topic.
_STOP = frozenset("another report about after again their there these those which while where would could should other being".split())


async def extract(request: LLMRequest) -> Reply:
    """The facts of the document in ``request`` (see the module docstring)."""
    fields = {m["key"]: m["value"].strip() for m in _FIELD.finditer(request.rendered)}
    if "Document ID" not in fields or "Text" not in fields:
        return text("I see no document to extract from.")
    doc = fields["Document ID"]
    _log("start", doc)
    delay = float(os.environ.get("BATCH_MODEL_DELAY", "0") or 0)
    if delay > 0:
        await asyncio.sleep(delay)
    words = _WORD.findall(fields["Text"].lower())
    counts = Counter(w for w in words if len(w) > 4 and w not in _STOP)
    topics = [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:3]]
    facts = {"id": doc, "title": fields.get("Title", ""), "words": len(fields["Text"].split()), "topics": topics}
    _log("end", doc)
    if request.tool_names:  # asked as a function call
        return tool_call(request.tool_names[0], facts, id=f"call_{doc}")
    return text(json.dumps(facts))


def _log(what: str, doc: str) -> None:
    path = os.environ.get("BATCH_MODEL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:  # one short line per write: appends stay whole
            log.write(f"{what} {doc}\n")
