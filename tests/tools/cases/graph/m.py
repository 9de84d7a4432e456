"""The Python side of shapes.mce (read by the checker, never run by the graph tests)."""

from __future__ import annotations

from dataclasses import dataclass

from agentmonad import Err, Ok, Outcome


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
