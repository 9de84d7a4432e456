"""Implementations of the generated specs' steps and fns (tests/cli/test_adapter_props.py).

The sub spec's steps run on ``Notes``, the main spec's on ``Chat``; the adapters make a ``Notes``
from a ``Chat`` (two of them raise, with the state they were given in the message, so a test can
tell which state a Defect carries). The ``via_*`` steps are the adapter law's oracle: each runs a
pipeline of the sub spec's compiled module (``SUB``, set by the test) from the adapter's state
(awaiting it, as the compiled ``local(state=f) p`` does), and gives back its value or error with
the caller's state unchanged.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Any, Never

from agentmonad import Err, MergeConflict, Ok, Outcome

from adapter_props.models import Blank, Busy, Chat, Notes, TooLong

# -- the sub spec (state Notes) ---------------------------------------------------------------


def note(state: Notes, value: str) -> Outcome[Notes, Blank, str]:
    # a failure leaves a state of its own (lines + 100), so a caller can tell whose state it has
    if not value:
        return Err(Blank("nothing to note"), replace(state, lines=state.lines + 100))
    return Ok(f"{value}#{state.lines + 1}", replace(state, lines=state.lines + 1, last=value))


def clip(state: Notes, value: str) -> Outcome[Notes, TooLong, str]:
    if len(value) > 6:
        return Err(TooLong(f"{len(value)} chars"), replace(state, last="!"))
    return Ok(value, replace(state, lines=state.lines + len(value)))


def recall(state: Notes, value: str) -> Outcome[Notes, Never, str]:
    return Ok(value + state.last, state)


def crash(state: Notes, value: str) -> Outcome[Notes, Never, str]:
    # a step that breaks on a text with a "?": a Defect inside the sub-agent
    if "?" in value:
        raise RuntimeError(f"crash on {value!r} at {state!r}")
    return Ok(value, state)


def upper(value: str) -> str:
    return value.upper()


def half(value: str) -> str:
    return value[: len(value) // 2]


def excuse(value: Blank | TooLong) -> str:
    return f"({value})"


def pair(value: tuple[str, str]) -> str:
    return f"{value[0]}|{value[1]}"


# -- the main spec (state Chat) ---------------------------------------------------------------


def turn(state: Chat, value: str) -> Outcome[Chat, Never, str]:
    return Ok(value + "!", replace(state, turns=state.turns + 1))


def busy(state: Chat, value: str) -> Outcome[Chat, Busy, str]:
    # fails on an odd turn, counting the turn either way: a retry's next attempt may succeed
    after = replace(state, turns=state.turns + 1)
    if state.turns % 2 == 1:
        return Err(Busy(f"busy at turn {state.turns}"), after)
    return Ok(value, after)


def say(state: Chat, value: str) -> Outcome[Chat, Never, str]:
    return Ok(value, replace(state, said=value[:4]))


def shorten(value: str) -> str:
    return value[:-1]


def chars(value: str) -> list[str]:
    return list(value[:3])


def glue(value: list[str]) -> str:
    return "+".join(value)


def is_blank(value: str) -> bool:
    return not value


def apology(value: Blank | TooLong | Busy) -> str:
    return f"sorry: {value}"


def notes_for(state: Chat) -> Notes:
    return Notes(lines=state.turns, last=state.said)


def fresh(state: Chat) -> Notes:
    return Notes()


def no_notes(state: Chat) -> Notes:
    raise ValueError(repr(state))


def picky(state: Chat) -> Notes:
    # raises on some states only: a Defect in some positions of an expression, not in others
    if state.turns % 3 == 2:
        raise ValueError(repr(state))
    return Notes(lines=-state.turns)


# -- the adapter law's oracle -----------------------------------------------------------------

#: The sub spec's compiled module the ``via_*`` steps run (set by the test before a run).
SUB: ModuleType | None = None


async def _via(
    adapter: Any, pipeline: str, state: Chat, value: str
) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    assert SUB is not None
    outcome = await getattr(SUB, pipeline)(adapter(state), value)
    if isinstance(outcome, Ok):
        return Ok(outcome.value, state)
    return Err(outcome.error, state)


async def via_notes_for_p0(state: Chat, value: str) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    return await _via(notes_for, "p0", state, value)


async def via_notes_for_p1(state: Chat, value: str) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    return await _via(notes_for, "p1", state, value)


async def via_notes_for_p2(state: Chat, value: str) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    return await _via(notes_for, "p2", state, value)


async def via_fresh_p0(state: Chat, value: str) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    return await _via(fresh, "p0", state, value)


async def via_fresh_p1(state: Chat, value: str) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    return await _via(fresh, "p1", state, value)


async def via_fresh_p2(state: Chat, value: str) -> Outcome[Chat, Blank | TooLong | MergeConflict, str]:
    return await _via(fresh, "p2", state, value)
