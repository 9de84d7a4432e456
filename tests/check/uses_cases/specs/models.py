"""The classes the specs of uses_cases share: the state Chat, Notes (another state), a Finding."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chat:
    turns: int = 0


@dataclass(frozen=True)
class Notes:
    lines: int = 0


@dataclass(frozen=True)
class Finding:
    topic: str
    facts: int


class ResearchError(Exception):
    """Nothing could be found."""
