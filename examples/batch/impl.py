"""Types and pure functions for examples/batch/batch.mce: documents in, facts out, a summary.

Everything a durable run records here is a pydantic model (a document, the facts
extracted from it, the summary), so `mcec check --durable` passes: each value
round-trips as JSON.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Doc(BaseModel):
    """One document of the batch."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    text: str


class Facts(BaseModel):
    """What the model extracts from one document."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    words: int
    topics: list[str]


class Summary(BaseModel):
    """The batch's result: every document's facts, in input order, and the topics across them."""

    model_config = ConfigDict(frozen=True)

    documents: int
    words: int
    topics: dict[str, int]
    facts: list[Facts]


def summarise(facts: list[Facts]) -> Summary:
    """The summary of the facts of every document (``each`` keeps the input order)."""
    topics: dict[str, int] = {}
    for found in facts:
        for topic in found.topics:
            topics[topic] = topics.get(topic, 0) + 1
    ordered = dict(sorted(topics.items(), key=lambda item: (-item[1], item[0])))
    return Summary(documents=len(facts), words=sum(f.words for f in facts), topics=ordered, facts=facts)
