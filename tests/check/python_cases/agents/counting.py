"""Steps over ``int`` for the literal-arm cases: a count in the state, a step that can fail,
and a loop body that halves its input until it is small, then gives it as text."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from agentmonad import Err, Ok, Outcome


@dataclass(frozen=True)
class Tally:
    steps: int = 0


class Odd(Exception):
    pass


def inc(state: Tally, value: int) -> Outcome[Tally, Odd, int]:
    return Ok(value + 1, replace(state, steps=state.steps + 1))


def even_only(state: Tally, value: int) -> Outcome[Tally, Odd, int]:
    return Ok(value, state) if value % 2 == 0 else Err(Odd(value), state)


def halve(state: Tally, value: int) -> Outcome[Tally, Odd, int | str]:
    return Ok(str(value) if abs(value) < 3 else value // 2, replace(state, steps=state.steps + 1))


def double(value: int) -> int:
    return value * 2


def parse(text: str) -> int:
    return int(text)


def add_pair(values: tuple[int, int]) -> int:
    return values[0] + values[1]


def is_zero(value: int) -> bool:
    return value == 0


def sign(value: int) -> Literal[-1, 0, 1]:
    return -1 if value < 0 else 1 if value > 0 else 0


def describe(value: int) -> str:
    return f"{value:+d}"
