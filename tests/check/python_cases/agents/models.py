"""Classes with known relations: Answer derives from Turn; Draft and Review are unrelated; Point and
Coordinates are TypedDicts of the same keys (compatible by their keys, not by derivation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from pydantic import BaseModel


@dataclass(frozen=True)
class Chat:
    turns: int = 0


class Turn(BaseModel):
    text: str


class Answer(Turn):
    final: bool = True


class Draft(BaseModel):
    body: str


class Review(BaseModel):
    verdict: str


class Plan(BaseModel):
    steps: list[str]


class SpecialistError(Exception):
    """A specialist could not answer."""


class PlannerError(Exception):
    """The planner could not plan."""


class RetryableError(PlannerError):
    """A planner error worth trying again."""


class Point(TypedDict):
    x: int
    y: int


class Coordinates(TypedDict):
    x: int
    y: int
