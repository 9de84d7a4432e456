"""Hand-written modules in the shape mcec will generate for v2 control flow.

Each function below is what ``mcec compile`` is meant to emit for the spec in
its docstring (docs/language.md §7: ``retry``/``loop`` become ``for`` loops,
``timeout`` a ``with Deadline`` block, straight-line, no closure per
step), calling only ``agentmonad`` and ``agentmonad.compiled``. The runtime
tests run them next to the interpreter's ``AgentMonad.retry``/``timeout``/
``loop``, and ``test_control_flow.test_shapes_pass_mypy_strict`` checks them
with ``mypy --strict``: the shapes need no ``cast``.

Step implementations are module-level bindings typed with their spec
signature, as in generated code, so tests substitute them with
``monkeypatch.setattr``.
"""

from __future__ import annotations

import asyncio
from asyncio import CancelledError
from dataclasses import dataclass, replace
from typing import Any

from agentmonad import Err, LoopExhausted, Ok, Outcome, Site, Timeout, ToolFailed, ToolUnavailable
from agentmonad.compiled import AsyncStep, Deadline, Step, group, note_reached, raised, retry_pause, stop


@dataclass(frozen=True)
class St:
    """A state that records which steps completed."""

    log: tuple[str, ...] = ()


class Flaky(Exception):
    """An error worth retrying."""


class Fatal(Exception):
    """An error not worth retrying."""


def noted(state: St, tag: str) -> St:
    return replace(state, log=(*state.log, tag))


async def _first(state: St, value: int) -> Outcome[St, Flaky | Fatal, int]:
    return Ok(value + 1, noted(state, "first"))


async def _second(state: St, value: int) -> Outcome[St, Flaky | Fatal, int]:
    await asyncio.sleep(0)
    return Ok(value * 2, noted(state, "second"))


def _hop(state: St, value: int) -> Outcome[St, Fatal, int | str]:
    return Ok(value + 1 if value < 3 else f"done at {value}", noted(state, f"hop {value}"))


async def _call(state: None, value: dict[str, Any]) -> Outcome[None, ToolFailed | ToolUnavailable, str]:
    return Ok("unpatched", state)


first: AsyncStep[St, int, int, Flaky | Fatal] = _first
second: AsyncStep[St, int, int, Flaky | Fatal] = _second
hop: Step[St, int, int | str, Fatal] = _hop
call: AsyncStep[None, dict[str, Any], str, ToolFailed | ToolUnavailable] = _call

SITE_FIRST = Site("first", "shapes.mce", 3, 5)
SITE_SECOND = Site("second", "shapes.mce", 3, 15)
SITE_HOP = Site("hop", "shapes.mce", 4, 9)
SITE_CALL = Site("call", "shapes.mce", 5, 9)
SITE_PAR = Site("par", "shapes.mce", 6, 9)
SITE_TIMEOUT = Site("timeout", "shapes.mce", 7, 1)
SITE_LOOP = Site("loop", "shapes.mce", 8, 1)
SITE_TIMEOUT_TOOL = Site("timeout", "shapes.mce", 9, 1)


async def retried(state: St, value: int) -> Outcome[St, Flaky | Fatal, int]:
    """``pipeline retried : int -> int ! Flaky | Fatal = retry(3, on=Flaky, backoff=0.5) first;``

    Each failed attempt hands its state to the next (``state = r.state``); the
    last attempt's failure, or one outside ``on=``, is returned as it is.
    """
    for attempt in range(1, 3 + 1):
        try:
            r = await first(state, value)
        except Exception as exc:
            r = raised(exc, SITE_FIRST, state, (Flaky, Fatal))
        if isinstance(r, Ok):
            state, v = r.state, r.value
            break
        r = stop(r, SITE_FIRST, (Flaky, Fatal), state=state)
        state = r.state
        if attempt == 3 or not isinstance(r.error, Flaky):
            return r
        await retry_pause(attempt, 0.5)
    return Ok(v, state)


async def timed(state: St, value: int) -> Outcome[St, Flaky | Fatal | Timeout, int]:
    """``pipeline timed : int -> int ! Flaky | Fatal | Timeout = timeout(0.2) (first >>= second);``

    The steps run inline and update ``state``; an interrupted async step notes the state
    it started from on the cancellation, which the deadline reports (``reached``).
    """
    deadline = Deadline(0.2)
    try:
        with deadline:
            try:
                r1 = await first(state, value)
            except Exception as exc:
                return raised(exc, SITE_FIRST, state, (Flaky, Fatal))
            except CancelledError:
                note_reached(state)
                raise
            if not isinstance(r1, Ok):
                return stop(r1, SITE_FIRST, (Flaky, Fatal), state=state)
            state, v1 = r1.state, r1.value
            try:
                r2 = await second(state, v1)
            except Exception as exc:
                return raised(exc, SITE_SECOND, state, (Flaky, Fatal))
            except CancelledError:
                note_reached(state)
                raise
            if not isinstance(r2, Ok):
                return stop(r2, SITE_SECOND, (Flaky, Fatal), state=state)
            state, v2 = r2.state, r2.value
            return Ok(v2, state)
    except TimeoutError:
        if not deadline.expired():
            raise  # a TimeoutError that is not this deadline's
        return Err(Timeout(0.2), deadline.reached(state), SITE_TIMEOUT)


async def _par_branch_first(state: St, value: int) -> Outcome[St, Flaky | Fatal, int]:
    try:
        r = await first(state, value)
    except Exception as exc:
        return raised(exc, SITE_FIRST, state, (Flaky, Fatal))
    if not isinstance(r, Ok):
        return stop(r, SITE_FIRST, (Flaky, Fatal), state=state)
    return r


async def _par_branch_second(state: St, value: int) -> Outcome[St, Flaky | Fatal, int]:
    try:
        r = await second(state, value)
    except Exception as exc:
        return raised(exc, SITE_SECOND, state, (Flaky, Fatal))
    if not isinstance(r, Ok):
        return stop(r, SITE_SECOND, (Flaky, Fatal), state=state)
    return r


async def timed_par(state: St, value: int) -> Outcome[St, Flaky | Fatal | Timeout, tuple[int, int]]:
    """``pipeline timed_par : int -> tuple[int, int] = timeout(0.2) par <first, second>;``

    (The par's merge is declared not to conflict here, to keep the shape short.)
    """
    deadline = Deadline(0.2)
    try:
        with deadline:
            r = await group(_par_branch_first).also(_par_branch_second).run_merged(state, value, _keep, SITE_PAR)
            if not isinstance(r, Ok):
                return r
            return Ok(r.value, r.state)
    except TimeoutError:
        if not deadline.expired():
            raise
        return Err(Timeout(0.2), state, SITE_TIMEOUT)


def _keep(base: St, branches: object) -> St:
    return base


async def looped(state: St, value: int) -> Outcome[St, Fatal | LoopExhausted, str]:
    """``pipeline looped : int -> str ! Fatal | LoopExhausted = loop(4) hop;``

    ``hop : int -> int | str``: an ``int`` goes round again, a ``str`` ends the
    loop. ``for … else``: the ``else`` runs only when no iteration ended it.
    """
    v = value
    for _ in range(4):
        try:
            r = hop(state, v)
        except Exception as exc:
            return raised(exc, SITE_HOP, state, (Fatal,))
        if not isinstance(r, Ok):
            return stop(r, SITE_HOP, (Fatal,), state=state)
        state, w = r.state, r.value
        if not isinstance(w, int):
            break
        v = w
    else:
        return Err(LoopExhausted(4, v), state, SITE_LOOP)
    return Ok(w, state)


async def timed_tool(state: None, value: dict[str, Any]) -> Outcome[None, ToolFailed | ToolUnavailable | Timeout, str]:
    """``pipeline timed_tool : dict[str, Any] -> str = timeout(0.5) call;`` (``call`` an MCP tool)."""
    deadline = Deadline(0.5)
    try:
        with deadline:
            try:
                r = await call(state, value)
            except Exception as exc:
                return raised(exc, SITE_CALL, state, (ToolFailed, ToolUnavailable))
            if not isinstance(r, Ok):
                return stop(r, SITE_CALL, (ToolFailed, ToolUnavailable), state=state)
            return r
    except TimeoutError:
        if not deadline.expired():
            raise
        return Err(Timeout(0.5), state, SITE_TIMEOUT_TOOL)
