"""A checked plan tells the event sink it was checked (agentmonad.events.PlanChecked,
docs/language.md §14): accepted, or rejected with its errors' count, at the spawn's site; the
plan's own steps are effects of the run like the spec's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from agentmonad import Ok
from agentmonad.context import hooks
from agentmonad.events import EffectStarted, Event, PlanChecked

from planbox import impl
from plan_support import compiled_box


@pytest.fixture(autouse=True)
def script() -> Iterator[list[str]]:
    impl.REQUESTS.clear()
    yield impl.SCRIPT
    impl.SCRIPT[:] = ["shout"]


def test_each_plan_checked_is_an_event_accepted_or_rejected(script: list[str]) -> None:
    script[:] = ["secret >>= shout", "shout >>= count", "split >>= each(limit=2) look_up >>= join"]
    events: list[Event] = []

    class Sink:
        def emit(self, event: Event) -> None:
            events.append(event)

    with hooks(events=Sink()):
        outcome = asyncio.run(compiled_box().repaired(impl.Notes(), "cats, dogs"))
    assert isinstance(outcome, Ok)
    checked = [e for e in events if isinstance(e, PlanChecked)]
    assert [(c.accepted, c.diagnostics) for c in checked] == [(False, 1), (False, 1), (True, 0)]
    assert all(c.site is not None and (c.site.step, c.site.file) == ("spawn", "box.mce") for c in checked)
    # the accepted plan's steps ran as effects, with their sites in the plan's text; its fns
    # (split, join) are no effects (docs/language.md §14)
    planned = [e.effect.site for e in events if isinstance(e, EffectStarted) and e.effect.site.file == "<plan research>"]
    assert sorted(s.step for s in planned) == ["look_up", "look_up"]
