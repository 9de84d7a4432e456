"""Implementations of the steps and fns of uses_cases (they fit their declarations)."""

from __future__ import annotations

from dataclasses import replace

from agentmonad import Err, Ok, Outcome

from specs.models import Chat, Finding, Notes, ResearchError


def lookup(state: Chat, value: str) -> Outcome[Chat, ResearchError, Finding]:
    if not value:
        return Err(ResearchError("nothing to look up"), state)
    return Ok(Finding(topic=value, facts=len(value)), replace(state, turns=state.turns + 1))


def summary(value: Finding) -> str:
    return f"{value.topic}: {value.facts} facts"


def note(state: Notes, value: str) -> Outcome[Notes, ResearchError, str]:
    return Ok(value, replace(state, lines=state.lines + 1))


def topics(value: str) -> list[str]:
    return [word for word in value.split(",") if word]


def apology(value: ResearchError) -> str:
    return f"sorry: {value}"


def facts(value: Finding) -> int:
    return value.facts


def joined(value: tuple[str, int]) -> str:
    return f"{value[0]} ({value[1]})"


def lengths(value: list[Finding]) -> int:
    return sum(f.facts for f in value)


def shout(value: str) -> str:
    return value.upper()
