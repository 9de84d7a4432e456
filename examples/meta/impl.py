"""The Python side of meta.mce and specialists.mce: adapters, the task's parts, the specialists.

The specialists are deterministic stand-ins for real research (a short pause,
then a finding); a topic containing "impossible" makes one fail, to show the
failure path. ``look_up`` and ``measure`` run on a specialist's own state, a
``Desk``; ``note`` records in the meta-agent's state what a specialist wrote.
"""

from __future__ import annotations

import asyncio
from typing import Never

from agentmonad import Err, Ok, Outcome

from examples.meta.models import Desk, Finding, MetaState, Section, SpecialistError, Task


def desk_for(state: MetaState) -> Desk:
    """The state a researcher starts from: a fresh research desk."""
    return Desk(desk="research")


def stats_for(state: MetaState) -> Desk:
    """The state a statistician starts from: a fresh statistics desk."""
    return Desk(desk="statistics")


def topics(task: Task) -> list[str]:
    """The parts of the goal ("monads and agents" → ["monads", "agents"])."""
    return [part.strip() for part in task.goal.split(" and ") if part.strip()]


async def look_up(desk: Desk, topic: str) -> Outcome[Desk, SpecialistError, Finding]:
    """A researcher looks a topic up (a pause stands for the work)."""
    await asyncio.sleep(0.01)
    if "impossible" in topic:
        return Err(SpecialistError(f"nothing can be found on {topic!r}"), desk)
    source = f"{desk.desk}: encyclopedia/{topic.replace(' ', '_')}"
    return Ok(Finding(topic=topic, fact=f"{topic} is a topic worth a section"), _consulted(desk, source))


async def measure(desk: Desk, topic: str) -> Outcome[Desk, SpecialistError, Finding]:
    """A statistician counts what there is to count in a topic."""
    await asyncio.sleep(0.01)
    if "impossible" in topic:
        return Err(SpecialistError(f"{topic!r} cannot be measured"), desk)
    words = len(topic.split())
    fact = f"{topic} has {len(topic)} letters in {words} word{'' if words == 1 else 's'}"
    return Ok(Finding(topic=topic, fact=fact), _consulted(desk, f"{desk.desk}: counted {topic}"))


def _consulted(desk: Desk, source: str) -> Desk:
    return desk.model_copy(update={"sources": (*desk.sources, source)})


def draft(finding: Finding) -> Section:
    """A section from a finding."""
    return Section(title=finding.topic.title(), body=finding.fact + ".")


def note(state: MetaState, section: Section) -> Outcome[MetaState, Never, Section]:
    """The meta-agent records that a specialist wrote ``section``."""
    updated = state.model_copy(
        update={"notes": (*state.notes, f"wrote {section.title}"), "specialists_run": state.specialists_run + 1}
    )
    return Ok(section, updated)
