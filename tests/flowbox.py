"""A tiny ReAct-shaped world for the control-flow code-generation cases
(tests/codegen/cases/control.mce): unrelated classes a model step chooses
between, a transcript state, and errors worth retrying or not."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from agentmonad import Err, Ok, Outcome


@dataclass(frozen=True)
class Chat:
    """The transcript: one line per observation."""

    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Turn:
    text: str


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass(frozen=True)
class Search:
    query: str


@dataclass(frozen=True)
class Calc:
    a: int
    b: int


class Flaky(Exception):
    """The model did not answer this time."""


class Refused(Exception):
    """The model will not answer."""


def decide(state: Chat, value: Turn) -> Outcome[Chat, Flaky | Refused, Answer | Search | Calc]:
    """Search first, then calculate, then answer; "refuse" in the question is Refused."""
    if "refuse" in value.text:
        return Err(Refused(value.text), state)
    seen = len(state.lines)
    if seen == 0:
        return Ok(Search(value.text), state)
    if seen == 1:
        return Ok(Calc(seen, 2), state)
    return Ok(Answer(" / ".join(state.lines)), state)


def search(value: Search) -> str:
    return f"found {value.query}"


def calc(value: Calc) -> str:
    return str(value.a + value.b)


def observe(state: Chat, value: str) -> Outcome[Chat, Flaky, Turn]:
    return Ok(Turn(value), replace(state, lines=(*state.lines, value)))


def done(value: Answer) -> Answer:
    return value


def is_long(value: str) -> bool:
    return len(value) > 8


def shorten(value: str) -> str:
    return value[:8]


def kind(value: str) -> Literal["search", "calc", "other"]:
    if value.startswith("?"):
        return "search"
    return "calc" if value[:1].isdigit() else "other"


def label(value: str) -> str:
    return f"[{value}]"
