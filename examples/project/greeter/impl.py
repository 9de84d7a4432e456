"""Step implementations for greet.mce."""

from __future__ import annotations

from dataclasses import dataclass

from agentmonad import Err, Ok, Outcome


@dataclass(frozen=True)
class Log:
    """The pipeline's state: the names greeted so far."""

    names: tuple[str, ...] = ()


class BlankName(Exception):
    """The name was empty once whitespace was removed."""


def clean(state: Log, value: str) -> Outcome[Log, BlankName, str]:
    """Trim and title-case a name, remembering it; a blank name fails."""
    name = value.strip().title()
    if not name:
        return Err(BlankName("a name is needed"), state)
    return Ok(name, Log(state.names + (name,)))


def greet(value: str) -> str:
    """The greeting itself (pure)."""
    return f"Hello, {value}!"
