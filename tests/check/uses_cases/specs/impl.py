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
    # the value shows the state it ran on; a failure leaves a state of its own (lines + 100),
    # so a caller can tell whose state an error carries
    if not value:
        return Err(ResearchError("nothing to note"), replace(state, lines=state.lines + 100))
    return Ok(f"{value} #{state.lines + 1}", replace(state, lines=state.lines + 1))


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


def notes_for(state: Chat) -> Notes:
    """The adapter of the Notes sub-agent: its state made from the caller's."""
    return Notes(lines=state.turns)


def chat_again(state: Notes) -> Chat:
    """An adapter backwards (Notes to Chat), for the mistyped-adapter cases."""
    return Chat(turns=state.lines)


def no_notes(state: Chat) -> Notes:
    """An adapter that breaks: its exception is a Defect at the adapter's site."""
    raise ValueError(f"no notes for {state.turns} turns")
