"""Planner, specialists and combiner for examples/meta/meta.mce.

Deterministic stand-ins for LLM calls: the planner splits a task on " and ",
each specialist "investigates" its sub-task (an async pause, then a finding),
and the combiner writes the report. A sub-task containing "impossible" makes
its specialist fail, to show the failure path.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Never

from pydantic import BaseModel, ConfigDict

from agentmonad import Append, Err, Ok, Outcome, Sum


class MetaState(BaseModel):
    """Notes taken by the specialists (appended) and how many ran (summed)."""

    model_config = ConfigDict(frozen=True)

    notes: Annotated[tuple[str, ...], Append] = ()
    specialists_run: Annotated[int, Sum] = 0


class Task(BaseModel):
    """A task for the meta-agent."""

    model_config = ConfigDict(frozen=True)

    goal: str


class SubTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    topic: str


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)

    topic: str
    fact: str


class Section(BaseModel):
    model_config = ConfigDict(frozen=True)

    title: str
    body: str


class Report(BaseModel):
    model_config = ConfigDict(frozen=True)

    goal: str
    sections: list[Section]


class PlanError(Exception):
    """The task could not be decomposed."""


class SpecialistError(Exception):
    """A specialist could not complete its sub-task."""


def plan(state: MetaState, task: Task) -> Outcome[MetaState, PlanError, list[SubTask]]:
    """Split the goal into sub-tasks (one per " and "-separated part)."""
    topics = [part.strip() for part in task.goal.split(" and ") if part.strip()]
    if not topics:
        return Err(PlanError("nothing to do: the goal is empty"), state)
    return Ok([SubTask(index=i, topic=topic) for i, topic in enumerate(topics)], state)


async def investigate(state: MetaState, sub: SubTask) -> Outcome[MetaState, SpecialistError, Finding]:
    """A specialist looks into one sub-task."""
    await asyncio.sleep(0.01 * (1 + sub.index % 3))
    if "impossible" in sub.topic:
        raise SpecialistError(f"cannot investigate {sub.topic!r}")
    finding = Finding(topic=sub.topic, fact=f"{sub.topic} has {len(sub.topic)} letters")
    updated = state.model_copy(
        update={"notes": (*state.notes, f"investigated {sub.topic}"), "specialists_run": state.specialists_run + 1}
    )
    return Ok(finding, updated)


def draft(finding: Finding) -> Section:
    """Write a report section from a finding."""
    return Section(title=finding.topic.title(), body=finding.fact + ".")


def combine(state: MetaState, sections: list[Section]) -> Outcome[MetaState, Never, Report]:
    """Assemble the report from the sections, in sub-task order."""
    goal = " and ".join(section.title.lower() for section in sections)
    return Ok(Report(goal=goal, sections=sections), state)
