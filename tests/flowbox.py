"""A tiny ReAct-shaped world for the control-flow code-generation cases
(tests/codegen/cases/control.mce): unrelated classes a model step chooses
between, a transcript state, and errors worth retrying or not."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel

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


class Cite(BaseModel):
    """A source a report cites (tests/codegen/cases/stream.mce: a record inside a streamed answer)."""

    url: str
    note: str | None = None


class Report(BaseModel):
    """A structured answer that streams (docs/language.md §14): nested records, a literal, a dict."""

    title: str
    verdict: Literal["yes", "no"]
    cites: list[Cite]
    scores: dict[str, float] = {}


@dataclass(frozen=True)
class Brief(Answer):
    """A dataclass answer deriving from another: its partial has the base's fields first."""

    lead: Report | None = None


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
