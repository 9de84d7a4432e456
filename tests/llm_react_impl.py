"""The Python side of the ReAct spec in tests/test_llm_react.py: an agent state that
remembers the question and the observations, and the tools as plain functions."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pydantic import BaseModel

from agentmonad import Err, Ok, Outcome


@dataclass(frozen=True)
class Chat:
    question: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


class Turn(BaseModel):
    question: str
    notes: list[str] = []


class Answer(BaseModel):
    text: str


class SearchArgs(BaseModel):
    query: str


class CalcArgs(BaseModel):
    expression: str


FACTS = {"monads": "A monad sequences computations that carry context."}


def ask(state: Chat, value: str) -> Outcome[Chat, None, Turn]:
    """Start a run: remember the question."""
    return Ok(Turn(question=value), replace(state, question=value))


def observe(state: Chat, value: str) -> Outcome[Chat, None, Turn]:
    """Add an observation and ask the model again."""
    notes = (*state.notes, value)
    return Ok(Turn(question=state.question, notes=list(notes)), replace(state, notes=notes))


def search(value: SearchArgs) -> str:
    return FACTS.get(value.query, f"nothing on {value.query}")


def calc(value: CalcArgs) -> str:
    left, right = value.expression.split("+")
    return str(int(left) + int(right))


def final(value: Answer) -> str:
    return f"Answer: {value.text}"


def spend(state: Chat, value: Turn) -> Outcome[Chat, None, Turn]:
    """A step that calls a model by itself (20 tokens, recorded with ``record_usage``) and notes it."""
    from agentmonad.llm import record_usage

    record_usage("own", 15, 5)
    notes = (*state.notes, "spent 20")
    return Ok(Turn(question=state.question, notes=list(notes)), replace(state, notes=notes))


class Refusal(Exception):
    """What :func:`spend_and_fail` fails with."""


def spend_and_fail(state: Chat, value: Turn) -> Outcome[Chat, Refusal, Turn]:
    """:func:`spend`, then a failure that keeps the state it noted."""
    from agentmonad.llm import record_usage

    record_usage("own", 15, 5)
    return Err(Refusal("no"), replace(state, notes=(*state.notes, "failed after 20")), None)


async def wait(state: Chat, value: Turn) -> Outcome[Chat, None, Turn]:
    """A step that awaits long enough for a spent budget's cancellation to land in it."""
    import asyncio

    await asyncio.sleep(5)
    return Ok(value, state)
