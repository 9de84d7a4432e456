"""A ReAct agent's classes and steps for the control-flow cases: Turn, Answer, SearchArgs and
CalcArgs are unrelated, so every relation between them is a definite no."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Chat:
    turns: int = 0


@dataclass(frozen=True)
class Turn:
    text: str


@dataclass(frozen=True)
class Answer:
    text: str


@dataclass(frozen=True)
class SearchArgs:
    query: str


@dataclass(frozen=True)
class CalcArgs:
    expression: str


class Hits(TypedDict):
    titles: list[str]


class ModelDown(Exception):
    """The model did not answer: worth trying again."""


class BadReply(Exception):
    """The model answered nonsense."""


def decide(state: Chat, value: Turn) -> Outcome[Chat, ModelDown | BadReply, Answer | SearchArgs | CalcArgs]:
    return Ok(Answer(value.text), state)


def search(value: SearchArgs) -> str:
    return value.query


def calc(value: CalcArgs) -> str:
    return value.expression


def observe(state: Chat, value: str) -> Outcome[Chat, ModelDown, Turn]:
    return Ok(Turn(value), Chat(state.turns + 1))


def done(value: Answer) -> Answer:
    return value


def is_long(value: str) -> bool:
    return len(value) > 10


def shorten(value: str) -> str:
    return value[:10]


def kind(value: str) -> Literal["search", "calc"]:
    return "search" if value.startswith("?") else "calc"


def hits(value: Hits) -> str:
    return ", ".join(value["titles"])


def give_up(value: SearchArgs | CalcArgs) -> Answer:
    return Answer("gave up")


def answer_text(value: Answer) -> str:
    return value.text


def names(value: list[str]) -> list[str] | str:
    return value[1:] if len(value) > 1 else value[0]


class Timeout(Exception):
    """A v1 spec's own error named like the built-in `Timeout` of v2."""


def slow_observe(state: Chat, value: str) -> Outcome[Chat, Timeout, Turn]:
    return Ok(Turn(value), state)


def again(value: str) -> str | Answer:
    return value[1:] if value else Answer("")
