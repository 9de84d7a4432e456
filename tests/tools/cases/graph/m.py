"""The Python side of shapes.mce and control.mce (read by the checker, never run by the graph tests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Never

from agentmonad import Err, Ok, Outcome, Timeout


@dataclass(frozen=True)
class S:
    n: int = 0


class A: ...


class B: ...


class C: ...


class E(Exception): ...


class F(Exception): ...


def fetch(state: S, value: A) -> Outcome[S, E, B]:
    return Ok(B(), state)


async def lookup(state: S, value: A) -> Ok[S, B] | Err[S, E | F]:
    return Ok(B(), state)


def recover(error: E) -> B:
    return B()


def recover_f(error: F) -> B:
    return B()


def finish(value: B) -> C:
    return C()


def pair(values: tuple[B, B]) -> C:
    return C()


# ---------------------------------------------------------------- control.mce (v2 control flow)


class Turn: ...


class Answer: ...


class SearchArgs: ...


class CalcArgs: ...


class Hits: ...


def decide(state: S, value: Turn) -> Outcome[S, E, Answer | SearchArgs | CalcArgs]:
    return Ok(Answer(), state)


def search(state: S, value: SearchArgs) -> Outcome[S, E, Hits]:
    return Ok(Hits(), state)


def hits(value: Hits) -> str:
    return "hits"


def calc(value: CalcArgs) -> str:
    return "42"


def observe(state: S, value: str) -> Outcome[S, Never, Turn]:
    return Ok(Turn(), state)


def done(value: Answer) -> Answer:
    return value


def is_final(value: Turn) -> bool:
    return False


def conclude(value: Turn) -> str:
    return "done"


def think(state: S, value: Turn) -> Outcome[S, E, Turn]:
    return Ok(value, state)


def summarise(value: Turn) -> str:
    return "summary"


def kind(value: Turn) -> int | str:
    return "search"


def say(value: str) -> str:
    return value


def count(value: int) -> str:
    return str(value)


def other(value: int | str) -> str:
    return str(value)


def give_up(error: Timeout) -> str:
    return f"gave up after {error.seconds} s"
