"""The types of the meta-agent (meta.mce) and of its specialists (specialists.mce)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict

from agentmonad import Append, Sum


class MetaState(BaseModel):
    """The meta-agent's state: what it recorded of each specialist (appended) and how many ran (summed)."""

    model_config = ConfigDict(frozen=True)

    notes: Annotated[tuple[str, ...], Append] = ()
    specialists_run: Annotated[int, Sum] = 0


class Desk(BaseModel):
    """A specialist's own state (its spec's): the sources it consulted, and its desk's name."""

    model_config = ConfigDict(frozen=True)

    desk: str = "research"
    sources: Annotated[tuple[str, ...], Append] = ()


class Task(BaseModel):
    """What the meta-agent is asked: a goal whose parts are joined by " and "."""

    model_config = ConfigDict(frozen=True)

    goal: str


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    fact: str


class Section(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    body: str


class Report(BaseModel):
    """The synthesizer's answer."""

    model_config = ConfigDict(frozen=True)

    headline: str
    sections: list[Section]


class SpecialistError(Exception):
    """A specialist could not complete its part."""
