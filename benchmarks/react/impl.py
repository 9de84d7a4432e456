"""The Python side of ``benchmarks/react/react.mce``, shared with the LangGraph and
pydantic-ai versions of the same agent in ``benchmarks/react_bench.py``.

The agent's state remembers the question and one note per observation; the
model's choice is one of ``Answer``, ``SearchArgs`` and ``AddArgs`` (the union
its ``llm decide`` step returns); the tools' results are ``Hits`` and ``int``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Never

from pydantic import BaseModel

from agentmonad import Ok, Outcome

#: The prompt of every turn (the spec's template says the same in Jinja2).
PROMPT = "Question: {question}\n{notes}Call a tool, or answer."


@dataclass(frozen=True)
class Notes:
    """The agent's state: the question and what the tools said so far."""

    question: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class Turn(BaseModel):
    """What the model is asked each turn."""

    question: str
    notes: list[str] = []


class Answer(BaseModel):
    """The final answer."""

    text: str


class SearchArgs(BaseModel):
    """Arguments of the ``search`` tool."""

    query: str


class AddArgs(BaseModel):
    """Arguments of the ``add`` tool."""

    a: int
    b: int


class Hits(BaseModel):
    """What ``search`` finds (its structured content)."""

    query: str
    hits: list[str]


def prompt(question: str, notes: list[str] | tuple[str, ...]) -> str:
    """The prompt of a turn, as the spec's template renders it."""
    return PROMPT.format(question=question, notes="".join(f"- {n}\n" for n in notes))


def hits_note(hits: Hits) -> str:
    return "; ".join(hits.hits) or f"nothing on {hits.query}"


def sum_note(total: int) -> str:
    return f"the sum is {total}"


def ask(state: Notes, value: str) -> Outcome[Notes, Never, Turn]:
    """Start a run: remember the question."""
    return Ok(Turn(question=value), replace(state, question=value, notes=()))


def _observe(state: Notes, note: str) -> Outcome[Notes, Never, Turn]:
    notes = (*state.notes, note)
    return Ok(Turn(question=state.question, notes=list(notes)), replace(state, notes=notes))


def observe_hits(state: Notes, value: Hits) -> Outcome[Notes, Never, Turn]:
    """Note what ``search`` found, and ask the model again."""
    return _observe(state, hits_note(value))


def observe_sum(state: Notes, value: int) -> Outcome[Notes, Never, Turn]:
    """Note the sum ``add`` gave, and ask the model again."""
    return _observe(state, sum_note(value))


def final(value: Answer) -> str:
    return f"Answer: {value.text}"
