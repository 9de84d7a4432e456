"""Implementations, some of which do not fit the declarations that name them (on purpose)."""

from __future__ import annotations

from typing import Never

from agentmonad import Err, Ok, Outcome, PlanRequest

from agents.models import Answer, Chat, Coordinates, Draft, PlannerError, Plan, Point, RetryableError, Review, SpecialistError, Turn


def draft(state: Chat, value: Turn) -> Outcome[Chat, PlannerError, Draft]:
    return Ok(Draft(body=value.text), state)


def review(state: Chat, value: Draft) -> Outcome[Chat, SpecialistError, Review]:
    return Ok(Review(verdict="ok"), state)


def answer(state: Chat, value: Review) -> Outcome[Chat, SpecialistError, Answer]:
    return Ok(Answer(text=value.verdict), state)


def plan(state: Chat, value: Turn) -> Ok[Chat, Plan] | Err[Chat, PlannerError]:
    return Ok(Plan(steps=[value.text]), state)


async def fetch(state: Chat, value: Turn) -> Outcome[Chat, SpecialistError, Turn]:
    return Ok(value, state)


def sync_fetch(state: Chat, value: Turn) -> Outcome[Chat, SpecialistError, Turn]:
    return Ok(value, state)


def consult(state: Chat, value: Turn) -> Outcome[Chat, SpecialistError | PlannerError, Turn]:
    return Ok(value, state)


def shout(value: str) -> str:
    return value.upper()


def stateful_shout(state: Chat, value: str) -> Outcome[Chat, PlannerError, str]:
    return Ok(value.upper(), state)


def to_text(value: Turn) -> str:
    return value.text


def to_turn(value: str) -> Turn:
    return Turn(text=value)


def apologise(error: SpecialistError) -> Answer:
    return Answer(text="sorry")


def fallback_review(value: Draft) -> Review:
    return Review(verdict="skipped")


def fallback_draft(error: RetryableError) -> Draft:
    return Draft(body=str(error))


def skip_draft(error: SpecialistError) -> Draft:
    return Draft(body="")


def apologise_planner(error: PlannerError) -> Answer:
    return Answer(text="sorry")


def fallback_turn(value: Turn) -> Review:
    return Review(verdict=value.text)


#: A type alias: the checker does not read aliases, so what `label` takes is mypy's to check.
Label = int


def label(value: Label) -> str:
    return str(value)


def quoted(state: Chat, value: Turn) -> "Outcome[Chat, PlannerError, Draft]":
    """A string annotation: unread by the checker (mypy reads it)."""
    return Ok(Draft(body=value.text), state)


def point(value: str) -> Point:
    return {"x": len(value), "y": 0}


def show_coordinates(value: Coordinates) -> str:
    return f"{value['x']},{value['y']}"


def write_plan(state: Chat, request: PlanRequest) -> Outcome[Chat, Never, str]:
    """A planner for ``spawn`` (docs/language.md §12)."""
    return Ok("draft", state)
