"""v2 control flow in the runtime (docs/language.md §6): ``retry``, ``timeout``, ``loop``
and ``if`` as ``AgentMonad`` combinators, the pieces generated code calls
(``agentmonad.control``: ``retry_pause``, ``Deadline``), and the built-in
errors ``LoopExhausted`` and ``Timeout``.

The generated-code side is exercised through ``control_shapes``, hand-written
functions in the shape mcec will emit, run next to the interpreter on the
same scenarios. No test waits on a retry pause (``fake_retry_clock``); the
deadlines are short and every wall-clock bound is a generous hang guard.
"""

from __future__ import annotations

import asyncio
import contextvars
import doctest
import importlib
import pickle
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import control_shapes as shapes
from agentmonad import (
    AgentMonad,
    Defect,
    Err,
    LoopExhausted,
    Ok,
    Outcome,
    Site,
    Timeout,
    ToolFailed,
    ToolUnavailable,
    lift_fn,
    lift_step,
)
from agentmonad import compiled, control
from agentmonad.control import Deadline, RetryClock, fake_retry_clock, retry_clock, retry_delay, retry_pause, use_retry_clock
from agentmonad.tools import StdioServer, tool, tool_scope
from control_shapes import Fatal, Flaky, St

ROOT = Path(__file__).resolve().parents[2]
TOOLBOX = ROOT / "tests" / "mcp_servers" / "toolbox_server.py"
SITE = Site("step", "c.mce", 2, 3)
T_SITE = Site("timeout", "c.mce", 7, 1)
L_SITE = Site("loop", "c.mce", 8, 1)


def others_running() -> set[asyncio.Task[Any]]:
    """Tasks of this loop other than the current one (none may outlive a run)."""
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


def note(tag: str) -> Callable[[St, Any], Ok[St, Any]]:
    """A sync step that records ``tag`` in the state and passes its value on."""
    return lambda state, value: Ok(value, shapes.noted(state, tag))


def step(tag: str) -> Callable[[Any], AgentMonad[St, Any, Any]]:
    return lift_step(note(tag), name=tag, errors=())


async def _forever(state: St, value: Any) -> Ok[St, Any]:
    await asyncio.sleep(60)
    raise AssertionError("a deadline should have cancelled this")


hang = lift_step(_forever, name="hang", errors=(), is_async=True)


# ------------------------------------------------------------------ the built-in errors


def test_loop_exhausted_and_timeout_are_value_errors() -> None:
    assert LoopExhausted(3, [1]) == LoopExhausted(3, [1]) and LoopExhausted(3, [1]) != LoopExhausted(3, [2])
    assert LoopExhausted(3, 1) != LoopExhausted(4, 1)
    assert Timeout(0.5) == Timeout(0.5) and Timeout(0.5) != Timeout(1)
    assert hash(Timeout(2)) == hash(Timeout(2.0)) and Timeout(2) == Timeout(2.0)
    assert hash(LoopExhausted(3, [1])) == hash(LoopExhausted(3, [2]))  # hashable with an unhashable value
    assert Timeout(1) != LoopExhausted(1, None) and Timeout(1) != 1
    for err in (LoopExhausted(8, {"turn": [1, 2]}), Timeout(10.5)):
        assert pickle.loads(pickle.dumps(err)) == err
        assert isinstance(err, Exception)
    assert (LoopExhausted(8, "x").iterations, LoopExhausted(8, "x").last, Timeout(3).seconds) == (8, "x", 3)
    # a Timeout value is never mistaken for the TimeoutError a deadline raises
    assert not isinstance(Timeout(1), TimeoutError)
    assert repr(Timeout(1)) == "Timeout(seconds=1)"
    assert str(LoopExhausted(1, 0)) == "loop gave up after 1 iteration; the last value would have continued: 0"


def test_error_messages_are_safe_and_bounded() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no eq")

        __hash__ = object.__hash__

    assert "<unprintable Hostile object>" in str(LoopExhausted(2, Hostile()))
    assert "<unprintable Hostile object>" in repr(LoopExhausted(2, Hostile()))
    assert str(LoopExhausted(Hostile(), 1)).startswith("loop gave up after <unprintable Hostile object> iterations")  # type: ignore[arg-type]
    assert str(Timeout(Hostile())) == "timed out after <unprintable Hostile object> s"  # type: ignore[arg-type]
    huge = LoopExhausted(3, "x" * 1_000_000)
    assert len(str(huge)) < 400 and len(repr(huge)) < 400


# ------------------------------------------------------------------ retry pauses


def test_retry_delay_doubles_caps_and_jitters() -> None:
    assert [retry_delay(k, 0.5, jitter=1.0) for k in range(1, 9)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert [retry_delay(k, 0.5, jitter=0.0) for k in (1, 2, 3)] == [0.25, 0.5, 1.0]  # equal jitter: half kept
    assert retry_delay(3, 0.5, jitter=0.5) == pytest.approx(1.5)
    assert retry_delay(10**9, 1e-300, jitter=1.0) == 30.0  # no overflow: the cap holds
    assert retry_delay(2000, 1e-300, jitter=1.0) == 30.0
    assert retry_delay(1, 100.0, jitter=1.0) == 30.0
    with use_retry_clock(RetryClock(random=lambda: 0.0)):
        assert retry_delay(2, 1.0) == 1.0  # the draw comes from the clock


def test_retry_delay_with_no_backoff_draws_nothing() -> None:
    def no_draw() -> float:
        raise AssertionError("backoff=0 must not draw")

    with use_retry_clock(RetryClock(random=no_draw)):
        assert retry_delay(1, 0) == 0.0 and retry_delay(50, 0.0) == 0.0


@pytest.mark.parametrize(
    "attempt, backoff, jitter",
    [(0, 0.5, 0.5), (-1, 0.5, 0.5), (1, -0.1, 0.5), (1, float("nan"), 0.5), (1, float("inf"), 0.5),
     (1, 0.5, 1.5), (1, 0.5, -0.1), (1, 0.5, float("nan"))],
)
def test_retry_delay_refuses_bad_arguments(attempt: int, backoff: float, jitter: float) -> None:
    with pytest.raises(ValueError):
        retry_delay(attempt, backoff, jitter=jitter)


def test_retry_pause_sleeps_on_the_installed_clock_only() -> None:
    asked: list[float] = []

    async def sleep(seconds: float) -> None:
        asked.append(seconds)

    default = retry_clock()

    async def main() -> None:
        await retry_pause(1, 0.5)
        await retry_pause(2, 0.5)
        await retry_pause(3, 0)  # no backoff: no sleep at all

    with use_retry_clock(RetryClock(sleep=sleep, random=lambda: 1.0)) as clock:
        assert retry_clock() is clock
        asyncio.run(main())
    assert asked == [0.5, 1.0]
    assert retry_clock() is default  # restored on exit
    assert default.sleep is asyncio.sleep


def test_fake_clock_records_and_does_not_leak_into_other_contexts() -> None:
    seen_elsewhere: list[RetryClock] = []
    with fake_retry_clock(jitter=lambda: 0.0) as pauses:
        asyncio.run(retry_pause(4, 1.0))
        # a context copied before the block (another task, another thread) keeps the real clock
        contextvars.Context().run(lambda: seen_elsewhere.append(retry_clock()))
    assert pauses == [4.0]
    assert seen_elsewhere[0].sleep is asyncio.sleep


def test_no_backoff_pause_never_suspends() -> None:
    async def main() -> bool:
        other = asyncio.create_task(asyncio.sleep(0))
        await retry_pause(1, 0)
        return other.done()  # it would have run if retry_pause had yielded

    assert asyncio.run(main()) is False


# ------------------------------------------------------------------ Deadline


def test_deadline_on_time_and_expired() -> None:
    async def main() -> tuple[bool, bool, int]:
        on_time = Deadline(30)
        async with on_time:
            await asyncio.sleep(0)
        late = Deadline(0.01)
        with pytest.raises(TimeoutError):
            async with late:
                await asyncio.sleep(30)
        return on_time.expired(), late.expired(), asyncio.current_task().cancelling()  # type: ignore[union-attr]

    assert asyncio.run(main()) == (False, True, 0)


def test_deadline_passes_exceptions_that_are_not_its_own() -> None:
    async def main() -> list[bool]:
        foreign = Deadline(30)
        with pytest.raises(TimeoutError, match="user"):
            async with foreign:
                raise TimeoutError("user")
        # the inner deadline fires; the outer one is not expired and passes it on
        outer, inner = Deadline(30), Deadline(0.01)
        with pytest.raises(TimeoutError):
            async with outer:
                async with inner:
                    await asyncio.sleep(30)
        # the outer deadline fires while the inner one is active: only the outer converts
        outer2, inner2 = Deadline(0.01), Deadline(30)
        with pytest.raises(TimeoutError):
            async with outer2:
                try:
                    async with inner2:
                        await asyncio.sleep(30)
                except TimeoutError:
                    raise AssertionError("the inner deadline must not claim the outer one's cancellation")
        return [foreign.expired(), outer.expired(), inner.expired(), outer2.expired(), inner2.expired()]

    assert asyncio.run(main()) == [False, False, True, True, False]


def test_deadline_does_not_swallow_an_outer_cancellation() -> None:
    inside = Deadline(30)

    async def body() -> None:
        async with inside:
            await asyncio.sleep(30)

    async def main() -> None:
        task = asyncio.create_task(body())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert not inside.expired()


def test_deadline_arguments_and_single_use() -> None:
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            Deadline(bad)

    async def main() -> None:
        d = Deadline(1)
        async with d:
            pass
        with pytest.raises(RuntimeError):
            async with d:
                pass

    asyncio.run(main())
    assert "1 s" in repr(Deadline(1))
    with pytest.raises(ValueError):
        AgentMonad.pure(1).timeout(0)


# ------------------------------------------------------------------ retry


def counted_flaky(errors: list[Any]) -> tuple[Callable[[Any], AgentMonad[St, Any, Any]], list[Any]]:
    """A step that fails with ``errors[i]`` on its i-th run (``None``: succeeds),
    recording (value, state) of every run. An exception class that is not an
    error of the step is raised: a Defect."""
    runs: list[Any] = []

    def impl(state: St, value: int) -> Outcome[St, Flaky | Fatal, int]:
        runs.append((value, state.log))
        state = shapes.noted(state, f"run {len(runs)}")
        error = errors[len(runs) - 1] if len(runs) <= len(errors) else None
        if error is None:
            return Ok(value * 10, state)
        if isinstance(error, type):
            raise error("bug")
        return Err(error, state)

    return lift_step(impl, name="flaky", errors=(Flaky, Fatal), site=SITE), runs


def test_retry_reruns_on_the_original_input_with_the_state_at_failure() -> None:
    flaky, runs = counted_flaky([Flaky("1"), Flaky("2")])
    with fake_retry_clock() as pauses:
        out = flaky(7).retry(5, on=Flaky, backoff=0.5).run_sync(St())
    assert out == Ok(70, St(("run 1", "run 2", "run 3")))
    assert runs == [(7, ()), (7, ("run 1",)), (7, ("run 1", "run 2"))]
    assert pauses == [0.5, 1.0]  # before attempts 2 and 3


def test_retry_gives_up_after_n_attempts_with_the_last_error() -> None:
    errors = [Flaky("1"), Flaky("2"), Flaky("3"), Flaky("4")]
    flaky, runs = counted_flaky(errors)
    with fake_retry_clock() as pauses:
        out = flaky(1).retry(3).run_sync(St())
    assert out == Err(errors[2], St(("run 1", "run 2", "run 3"))) and out.site == SITE
    assert len(runs) == 3 and pauses == [0.5, 1.0]


def test_retry_does_not_rerun_errors_outside_on_nor_defects() -> None:
    flaky, runs = counted_flaky([Flaky("1"), Fatal("stop")])
    with fake_retry_clock() as pauses:
        out = flaky(1).retry(5, on=Flaky).run_sync(St())
    assert isinstance(out, Err) and isinstance(out.error, Fatal) and len(runs) == 2 and pauses == [0.5]

    flaky, runs = counted_flaky([Flaky("1"), KeyError])
    with fake_retry_clock() as pauses, pytest.raises(Defect) as info:
        flaky(1).retry(5).run_sync(St())
    assert isinstance(info.value.cause, KeyError) and len(runs) == 2 and pauses == [0.5]


def test_retry_local_starts_every_attempt_from_the_same_state() -> None:
    flaky, runs = counted_flaky([Flaky("1"), Flaky("2")])
    with fake_retry_clock():
        out = flaky(2).local().retry(3, backoff=0).run_sync(St(("start",)))
    assert out == Ok(20, St(("start",)))
    assert [log for _, log in runs] == [("start",)] * 3


def test_retry_one_is_a_single_run_and_arguments_are_checked() -> None:
    flaky, runs = counted_flaky([Flaky("1")])
    with fake_retry_clock() as pauses:
        out = flaky(1).retry(1).run_sync(St())
    assert isinstance(out, Err) and len(runs) == 1 and pauses == []
    for bad in ({"n": 0}, {"n": 2, "backoff": -1.0}, {"n": 2, "backoff": float("inf")}):
        with pytest.raises(ValueError):
            AgentMonad.pure(1).retry(**bad)  # type: ignore[arg-type]


def test_a_retry_pause_is_cancelled_by_a_timeout() -> None:
    """With the real clock: the 10 s pause is where the deadline lands."""
    flaky, runs = counted_flaky([Flaky("1")] * 5)
    prog = flaky(1).retry(5, on=Flaky, backoff=10).timeout(0.05, T_SITE)
    out = prog.run_sync(St())
    # the deadline landed in the pause: one run, and its Timeout (after the pause, a second run)
    assert out == Err(Timeout(0.05), St(("run 1",))) and out.site == T_SITE and len(runs) == 1


# ------------------------------------------------------------------ timeout


def test_timeout_in_time_is_the_body() -> None:
    body = step("a")(1).then(step("b"))
    assert body.timeout(30).run_sync(St()) == body.run_sync(St()) == Ok(1, St(("a", "b")))
    failing = step("a")(1).then(lambda v: AgentMonad.fail("no"))
    assert failing.timeout(30).run_sync(St()) == Err("no", St(("a",)))


def test_timeout_reports_the_state_after_the_last_completed_step() -> None:
    prog = step("a")(1).then(step("b")).then(hang).then(step("never")).timeout(0.05, T_SITE)
    out = prog.run_sync(St())
    assert out == Err(Timeout(0.05), St(("a", "b"))) and out.site == T_SITE
    # nothing completed: the input state
    assert hang(1).timeout(0.05).run_sync(St(("in",))) == Err(Timeout(0.05), St(("in",)))


def test_timeout_state_through_local_catch_and_a_running_par() -> None:
    # a `local` in progress gives back the state it started from
    local = step("a")(1).then(lambda v: step("b")(v).then(hang).local()).timeout(0.05)
    assert local.run_sync(St()) == Err(Timeout(0.05), St(("a",)))
    # inside a catch (which does not catch the timeout: it is outside it) the state threads on
    inner = step("a")(1).then(lambda v: step("b")(v).then(hang).catch(Exception, AgentMonad.pure)).timeout(0.05)
    assert inner.run_sync(St()) == Err(Timeout(0.05), St(("a", "b")))
    # a par in progress has not completed: its input state (the branches' states are dropped)
    par = step("a")(1).then(lambda v: AgentMonad.par([step("b")(v).then(hang), hang(v)])).timeout(0.05)
    assert par.run_sync(St()) == Err(Timeout(0.05), St(("a",)))


def test_timeout_can_be_caught_and_nested() -> None:
    caught = hang(1).timeout(0.05).catch(Timeout, lambda e: AgentMonad.pure(f"gave up after {e.seconds}"))
    assert caught.run_sync(St()) == Ok("gave up after 0.05", St())
    # the inner deadline is the earlier one
    out = hang(1).timeout(0.05, T_SITE).timeout(30).run_sync(St())
    assert out == Err(Timeout(0.05), St()) and out.site == T_SITE
    # the outer deadline is the earlier one: a catch inside it does not see its timeout
    inner = hang(1).timeout(30).catch(Timeout, lambda e: AgentMonad.pure("inner"))
    out = step("a")(1).then(lambda _: inner).timeout(0.05, L_SITE).run_sync(St())
    assert out == Err(Timeout(0.05), St(("a",))) and out.site == L_SITE


def test_timeout_around_par_and_each_cancels_every_task() -> None:
    started: list[int] = []
    cancelled: list[int] = []

    async def slow(state: St, i: int) -> Ok[St, int]:
        started.append(i)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return Ok(i, state)

    k = lift_step(slow, name="slow", errors=(), is_async=True)
    # a par whose branches hold an each and a par of their own
    nested = AgentMonad.par([
        AgentMonad.each(list(range(0, 5)), k, limit=2),
        AgentMonad.par([k(10), k(11), k(12)]).map(list),
        k(20).map(lambda v: [v]),
    ])
    prog = step("a")(0).then(lambda _: nested).timeout(0.1, T_SITE)

    async def main() -> tuple[Any, set[asyncio.Task[Any]]]:
        out = await prog.run(St())
        return out, others_running()

    out, leftover = asyncio.run(main())
    assert out == Err(Timeout(0.1), St(("a",)))
    assert not leftover
    assert sorted(started) == sorted(cancelled) == [0, 1, 10, 11, 12, 20]  # each's limit: 2 of 5 started


def test_a_timeout_inside_a_branch_fails_the_group() -> None:
    """A deadline inside a ``par`` branch or an ``each`` body is that branch's own
    (it cancels only its task); its ``Timeout`` is the group's first failure,
    which then cancels the siblings."""

    async def main(prog: AgentMonad[St, Any, Any]) -> tuple[Any, set[asyncio.Task[Any]]]:
        return await prog.run(St()), others_running()

    timed_branch = step("b")(1).then(hang).timeout(0.05, T_SITE)
    out, leftover = asyncio.run(main(AgentMonad.par([hang(0), timed_branch, hang(2)])))
    assert out == Err(Timeout(0.05), St(("b",))) and out.site == T_SITE and not leftover
    body = lambda v: (step("x")(v) if v != 2 else step("y")(v).then(hang)).timeout(0.05, T_SITE)
    out, leftover = asyncio.run(main(AgentMonad.each([1, 2, 3], body, limit=2)))
    assert out == Err(Timeout(0.05), St(("y",))) and not leftover


def test_a_defect_raised_while_cancelling_wins_over_the_timeout() -> None:
    async def bad_cleanup(state: St, value: int) -> Ok[St, int]:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise ValueError("cleanup failed")
        return Ok(value, state)

    bad = lift_step(bad_cleanup, name="cleanup", errors=(), is_async=True, site=SITE)

    async def main(prog: AgentMonad[St, Any, Any]) -> set[asyncio.Task[Any]]:
        with pytest.raises(Defect) as info:
            await prog.run(St())
        assert isinstance(info.value.cause, ValueError) and info.value.site == SITE
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]
        return others_running()

    # alone, and as one branch of a par being cancelled
    assert not asyncio.run(main(bad(1).timeout(0.05)))
    assert not asyncio.run(main(AgentMonad.par([hang(1), bad(1), hang(2)]).timeout(0.05)))


def test_a_running_sync_step_is_not_interrupted() -> None:
    def slow_sync(state: St, value: int) -> Ok[St, int]:
        time.sleep(0.2)  # blocks the loop past the deadline: nothing can interrupt it
        return Ok(value, shapes.noted(state, "sync"))

    sync = lift_step(slow_sync, name="sync", errors=())
    # the deadline lands at the next await
    out = sync(1).then(hang).timeout(0.02).run_sync(St())
    assert out == Err(Timeout(0.02), St(("sync",)))
    # no await after it: the body finishes and the deadline never took effect
    assert sync(1).then(step("after")).timeout(0.02).run_sync(St()) == Ok(1, St(("sync", "after")))


def test_an_outer_cancellation_passes_a_timeout_unchanged() -> None:
    async def main() -> set[asyncio.Task[Any]]:
        task = asyncio.create_task(AgentMonad.par([hang(1), hang(2)]).timeout(30).run(St()))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return others_running()

    assert not asyncio.run(main())


def test_a_deadline_ends_with_its_body() -> None:
    """Once the timed body is done, its deadline no longer applies: later steps
    may take longer, and an inner deadline left early does not fire later."""

    async def nap(state: St, value: int) -> Ok[St, int]:
        await asyncio.sleep(0.1)
        return Ok(value, shapes.noted(state, "nap"))

    napping = lift_step(nap, name="nap", errors=(), is_async=True)
    after = step("a")(1).timeout(0.02).then(napping)
    assert after.run_sync(St()) == Ok(1, St(("a", "nap")))
    # an inner deadline that ended (on time, or by an outer one's cancellation) stays quiet
    inner_done = step("a")(1).timeout(0.02).then(napping).then(hang).timeout(0.3, T_SITE)
    out = inner_done.run_sync(St())
    assert out == Err(Timeout(0.3), St(("a", "nap"))) and out.site == T_SITE

    async def main() -> int:
        first = hang(1).timeout(0.5).timeout(0.02)
        assert await first.run(St()) == Err(Timeout(0.02), St())
        await asyncio.sleep(0.6)  # past the inner deadline: it must not cancel us now
        return asyncio.current_task().cancelling()  # type: ignore[union-attr]

    assert asyncio.run(main()) == 0


def test_a_timeout_error_from_a_step_is_not_the_timeout() -> None:
    def raises(state: St, value: int) -> Ok[St, int]:
        raise TimeoutError("the step's own")

    k = lift_step(raises, name="raises", errors=(), site=SITE)
    with pytest.raises(Defect) as info:
        k(1).timeout(30).run_sync(St())
    assert isinstance(info.value.cause, TimeoutError)


def test_nested_timeouts_and_retries_run_in_constant_stack() -> None:
    deep: AgentMonad[St, Any, Any] = hang(1)
    for _ in range(5_000):
        deep = deep.retry(2, backoff=0).timeout(60)
    out = step("a")(0).then(lambda _: deep).timeout(0.05, T_SITE).run_sync(St())
    assert out == Err(Timeout(0.05), St(("a",))) and out.site == T_SITE
    ok: AgentMonad[St, Any, Any] = step("a")(0)
    for _ in range(10_000):
        ok = ok.timeout(60).retry(3)
    assert ok.run_sync(St()) == Ok(0, St(("a",)))


# ------------------------------------------------------------------ loop


def test_loop_ends_on_the_first_value_that_does_not_continue() -> None:
    runs: list[int] = []

    def hop(state: St, value: int) -> Ok[St, int | str]:
        runs.append(value)
        return Ok(value + 1 if value < 3 else f"done at {value}", shapes.noted(state, f"hop {value}"))

    looped = AgentMonad.loop(lift_step(hop, name="hop", errors=()), 10, int, L_SITE)
    assert looped(0).run_sync(St()) == Ok("done at 3", St(("hop 0", "hop 1", "hop 2", "hop 3")))
    assert runs == [0, 1, 2, 3]


def test_loop_exhausted_after_n_runs_with_the_last_value_and_state() -> None:
    runs: list[int] = []

    def forever(state: St, value: int) -> Ok[St, int]:
        runs.append(value)
        return Ok(value + 1, shapes.noted(state, str(value)))

    looped = AgentMonad.loop(lift_step(forever, name="forever", errors=()), 3, (int,), L_SITE)
    out = looped(0).run_sync(St())
    assert out == Err(LoopExhausted(iterations=3, last=3), St(("0", "1", "2"))) and out.site == L_SITE
    assert runs == [0, 1, 2]
    runs.clear()
    assert AgentMonad.loop(lift_step(forever, name="f", errors=()), 1, int)(5).run_sync(St()) == Err(
        LoopExhausted(1, 6), St(("5",))
    )
    assert runs == [5]


def test_a_failure_ends_the_loop_at_once() -> None:
    runs: list[int] = []

    def until_two(state: St, value: int) -> Outcome[St, str, int]:
        runs.append(value)
        if value == 2:
            return Err("stop", shapes.noted(state, "failed"))
        return Ok(value + 1, state)

    looped = AgentMonad.loop(lift_step(until_two, name="u", errors=(str,), site=SITE), 10, int)
    out = looped(0).run_sync(St())
    assert out == Err("stop", St(("failed",))) and out.site == SITE and runs == [0, 1, 2]


def test_loop_with_a_predicate_and_a_predicate_that_raises() -> None:
    # the loop input type is None: None continues, anything else ends
    countdown = iter([None, None, "answer"])
    body = lift_fn(lambda _: next(countdown), name="next")
    assert AgentMonad.loop(body, 5, lambda v: v is None)(None).run_sync(0) == Ok("answer", 0)
    # a class is an isinstance test, not a predicate
    assert AgentMonad.loop(lift_fn(str, name="str"), 5, int)(3).run_sync(0) == Ok("3", 0)

    def broken(value: object) -> bool:
        raise RuntimeError("bad test")

    with pytest.raises(Defect) as info:
        AgentMonad.loop(lift_fn(lambda v: v, name="id"), 5, broken, L_SITE)(1).run_sync(0)
    assert info.value.site == L_SITE and isinstance(info.value.cause, RuntimeError)
    with pytest.raises(ValueError):
        AgentMonad.loop(lift_fn(lambda v: v, name="id"), 0, int)


def test_loop_100_000_iterations_in_constant_stack() -> None:
    inc = lift_step(lambda s, v: Ok(v + 1 if v < 100_000 else "end", s + 1), name="inc", errors=())
    assert AgentMonad.loop(inc, 200_000, int)(1).run_sync(0) == Ok("end", 100_000)
    # a body that is itself a chain, and a loop nested in a loop body
    chain = lambda v: AgentMonad.pure(v).map(lambda x: x + 1).then(lambda x: AgentMonad.pure(x if x < 5_000 else "x"))
    inner = AgentMonad.loop(chain, 10_000, int)
    outer = AgentMonad.loop(lambda v: inner(0).map(lambda _: v + 1 if v < 3 else "done"), 10, int)
    assert outer(0).run_sync(None) == Ok("done", None)


# ------------------------------------------------------------------ if (branch)


def test_branch_runs_the_chosen_arm_on_the_original_input_with_the_tests_state() -> None:
    seen: list[Any] = []

    def test_impl(state: St, value: int) -> Ok[St, bool]:
        return Ok(value > 0, shapes.noted(state, "tested"))

    def arm(tag: str) -> Callable[[int], AgentMonad[St, Any, str]]:
        def impl(state: St, value: int) -> Ok[St, str]:
            seen.append((tag, value, state.log))
            return Ok(tag, shapes.noted(state, tag))

        return lift_step(impl, name=tag, errors=())

    chooser = AgentMonad.branch(lift_step(test_impl, name="p", errors=()), arm("then"), arm("else"))
    assert chooser(5).run_sync(St()) == Ok("then", St(("tested", "then")))
    assert chooser(-5).run_sync(St()) == Ok("else", St(("tested", "else")))
    assert seen == [("then", 5, ("tested",)), ("else", -5, ("tested",))]
    failing = AgentMonad.branch(lambda v: AgentMonad.fail("p failed"), arm("then"), arm("else"))
    assert failing(1).run_sync(St()) == Err("p failed", St())
    assert len(seen) == 2


# ------------------------------------------------------------------ compiled shapes ≡ interpreter


def settle(coro: Coroutine[Any, Any, Outcome[St, Any, Any]]) -> Any:
    """Run a pipeline to (outcome, site), or a Defect to ("defect", cause type, cause text, site)."""
    try:
        out = asyncio.run(coro)
    except Defect as d:
        return ("defect", type(d.cause).__name__, str(d.cause), d.site)
    return (out, getattr(out, "site", None))


def run_both(
    compiled_fn: Callable[[St, int], Coroutine[Any, Any, Outcome[St, Any, Any]]],
    program: AgentMonad[St, Any, Any],
    state: St,
    value: int,
) -> tuple[Any, Any]:
    """The generated shape's and the interpreter's result, each as ``settle`` gives it."""
    return settle(compiled_fn(state, value)), settle(program.run(state))


@pytest.mark.parametrize(
    "errors, runs",
    [([], 1), ([Flaky("a")], 2), ([Flaky("a"), Flaky("b")], 3), ([Flaky("a"), Flaky("b"), Flaky("c")], 3),
     ([Fatal("f")], 1), ([Flaky("a"), Fatal("f")], 2), ([Flaky("a"), KeyError], 2), ([Err("undeclared", None)], 1)],
    ids=["ok", "one", "two", "exhausted", "fatal", "then-fatal", "defect", "undeclared"],
)
def test_compiled_retry_shape_matches_the_interpreter(
    monkeypatch: pytest.MonkeyPatch, errors: list[Any], runs: int
) -> None:
    """``retry(3, on=Flaky, backoff=0.5) first``: the same outcome, site, runs
    (value and state each attempt saw) and pauses. Both sides fail with the
    very same error objects, so their ``Err`` values compare equal."""

    def make() -> tuple[Callable[[St, int], Coroutine[Any, Any, Outcome[St, Any, int]]], list[Any]]:
        seen: list[Any] = []

        async def impl(state: St, value: int) -> Outcome[St, Any, int]:
            seen.append((value, state.log))
            state = shapes.noted(state, f"run {len(seen)}")
            error = errors[len(seen) - 1] if len(seen) <= len(errors) else None
            await asyncio.sleep(0)
            if error is None:
                return Ok(value + 100, state)
            if isinstance(error, type):
                raise error("bug")
            if isinstance(error, Err):  # an Err of a type the step does not declare
                return Err(error.error, state)
            return Err(error, state)

        return impl, seen

    impl_c, seen_c = make()
    impl_i, seen_i = make()
    monkeypatch.setattr(shapes, "first", impl_c)
    program = lift_step(impl_i, name="first", errors=(Flaky, Fatal), site=shapes.SITE_FIRST, is_async=True)(4)
    with fake_retry_clock() as pauses_c:
        compiled_out = settle(shapes.retried(St(), 4))
    with fake_retry_clock() as pauses_i:
        interpreted_out = settle(program.retry(3, on=Flaky, backoff=0.5).run(St()))
    assert compiled_out == interpreted_out
    assert seen_c == seen_i and len(seen_c) == runs
    assert pauses_c == pauses_i == [0.5, 1.0][: runs - 1]
    if runs > 1:
        assert seen_c[1] == (4, ("run 1",))  # the original input, the state at the failure


def test_compiled_timeout_shape_matches_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    async def first_ok(state: St, value: int) -> Ok[St, int]:
        return Ok(value + 1, shapes.noted(state, "first"))

    async def second_hangs(state: St, value: int) -> Ok[St, int]:
        await asyncio.sleep(60)
        return Ok(value, state)

    async def first_blocks(state: St, value: int) -> Ok[St, int]:
        time.sleep(0.3)  # no await inside: the deadline cannot land here
        return Ok(value + 1, shapes.noted(state, "first"))

    async def second_quick(state: St, value: int) -> Ok[St, int]:
        return Ok(value * 2, shapes.noted(state, "second"))

    def interpreted(f: Any, s: Any) -> AgentMonad[St, Any, Any]:
        k1 = lift_step(f, name="first", errors=(Flaky, Fatal), site=shapes.SITE_FIRST, is_async=True)
        k2 = lift_step(s, name="second", errors=(Flaky, Fatal), site=shapes.SITE_SECOND, is_async=True)
        return k1(3).then(k2).timeout(0.2, shapes.SITE_TIMEOUT)

    expected = {
        (first_ok, second_hangs): (Err(Timeout(0.2), St(("first",))), shapes.SITE_TIMEOUT),
        (first_blocks, second_hangs): (Err(Timeout(0.2), St(("first",))), shapes.SITE_TIMEOUT),
        (first_blocks, second_quick): (Ok(8, St(("first", "second"))), None),
        (first_ok, second_quick): (Ok(8, St(("first", "second"))), None),
    }
    for (f, s), want in expected.items():
        monkeypatch.setattr(shapes, "first", f)
        monkeypatch.setattr(shapes, "second", s)
        compiled_out, interpreted_out = run_both(shapes.timed, interpreted(f, s), St(), 3)
        assert compiled_out == interpreted_out == want, (f.__name__, s.__name__)


def test_compiled_timeout_around_par_cancels_like_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    cancelled: list[str] = []

    def hanging(tag: str) -> Callable[[St, int], Coroutine[Any, Any, Ok[St, int]]]:
        async def impl(state: St, value: int) -> Ok[St, int]:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.append(tag)
                raise
            return Ok(value, state)

        return impl

    monkeypatch.setattr(shapes, "first", hanging("first"))
    monkeypatch.setattr(shapes, "second", hanging("second"))

    async def compiled_run() -> tuple[Any, set[asyncio.Task[Any]]]:
        return await shapes.timed_par(St(("in",)), 1), others_running()

    out, leftover = asyncio.run(compiled_run())
    assert out == Err(Timeout(0.2), St(("in",))) and out.site == shapes.SITE_TIMEOUT and not leftover
    assert sorted(cancelled) == ["first", "second"]

    # a branch whose clean-up raises: the Defect wins, in the generated shape too
    async def bad_cleanup(state: St, value: int) -> Ok[St, int]:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise ValueError("cleanup failed")
        return Ok(value, state)

    monkeypatch.setattr(shapes, "second", bad_cleanup)

    async def compiled_defect() -> set[asyncio.Task[Any]]:
        with pytest.raises(Defect) as info:
            await shapes.timed_par(St(), 1)
        assert isinstance(info.value.cause, ValueError) and info.value.site == shapes.SITE_SECOND
        return others_running()

    assert not asyncio.run(compiled_defect())


@pytest.mark.parametrize("start, want", [
    (0, (Ok("done at 3", St(("hop 0", "hop 1", "hop 2", "hop 3"))), None)),
    (2, (Ok("done at 3", St(("hop 2", "hop 3"))), None)),
    (-10, (Err(LoopExhausted(4, -6), St(("hop -10", "hop -9", "hop -8", "hop -7"))), shapes.SITE_LOOP)),
])
def test_compiled_loop_shape_matches_the_interpreter(start: int, want: Any) -> None:
    body = lift_step(shapes.hop, name="hop", errors=(Fatal,), site=shapes.SITE_HOP)
    program = AgentMonad.loop(body, 4, int, shapes.SITE_LOOP)(start)
    compiled_out, interpreted_out = run_both(shapes.looped, program, St(), start)
    assert compiled_out == interpreted_out == want


def test_shapes_pass_mypy_strict(project_mypy_cache: Path) -> None:
    """The generated shapes type-check with no cast: ``Deadline``, ``retry_pause``,
    ``Timeout`` and ``LoopExhausted`` are typed for straight-line code. (mypy runs
    in a subprocess: in-process it retunes the garbage collector for the rest of
    the session.)"""
    pytest.importorskip("mypy")
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(project_mypy_cache),
         "--config-file", str(ROOT / "pyproject.toml"), str(Path(shapes.__file__))],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cast(" not in Path(shapes.__file__).read_text()


# ------------------------------------------------------------------ MCP: an in-flight tool call


def test_a_timeout_cancels_an_in_flight_tool_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real toolbox server: the deadline cancels the ``slow`` call in the
    generated shape and in the interpreter; the server sees both cancellations,
    no call ends, and nothing of the run is left running. A deadline around the
    first call does not time the server's start."""
    import json

    server = StdioServer("box", shlex.join([sys.executable, str(TOOLBOX), str(tmp_path)]))
    slow = tool(server, "slow", str)
    monkeypatch.setattr(shapes, "call", slow)
    interpreted = lift_step(slow, name="call", errors=(ToolFailed, ToolUnavailable), site=shapes.SITE_CALL, is_async=True)

    async def main() -> tuple[Any, Any, set[asyncio.Task[Any]]]:
        async with tool_scope():
            # the deadline is held while the server starts (about a second): it times the call
            first = await interpreted({"tag": "early", "seconds": 0}).timeout(0.05).run(None)
            assert first == Ok("early", None)
            assert await slow(None, {"tag": "warm", "seconds": 0}) == Ok("warm", None)
            compiled_out = await shapes.timed_tool(None, {"tag": "compiled", "seconds": 60})
            interpreted_out = await interpreted({"tag": "interpreted", "seconds": 60}).timeout(
                0.5, shapes.SITE_TIMEOUT_TOOL
            ).run(None)
            await asyncio.sleep(0.5)  # give the server a moment to record the cancellations
        return compiled_out, interpreted_out, others_running()

    compiled_out, interpreted_out, leftover = asyncio.run(main())
    assert compiled_out == interpreted_out == Err(Timeout(0.5), None)
    assert compiled_out.site == interpreted_out.site == shapes.SITE_TIMEOUT_TOOL
    assert not leftover
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines if line.strip()]
    by_tag = {(e["tag"], e["event"]) for e in events}
    assert {("compiled", "start"), ("compiled", "cancelled"), ("interpreted", "start"), ("interpreted", "cancelled")} <= by_tag
    assert ("compiled", "end") not in by_tag and ("interpreted", "end") not in by_tag
    # every server process started (the cancelled start's too) is gone with the scope
    pids = [int(p.name.removeprefix("pid-")) for p in tmp_path.glob("pid-*")]
    assert pids
    give_up = time.monotonic() + 5
    while any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in pids) and time.monotonic() < give_up:
        time.sleep(0.02)
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists() and not _zombie(pid)]


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, IndexError):
        return True


# ------------------------------------------------------------------ documentation


def test_control_doctests_and_exports() -> None:
    for name in ("control", "errors", "monad"):
        failures, _ = doctest.testmod(importlib.import_module(f"agentmonad.{name}"), optionflags=doctest.ELLIPSIS)
        assert failures == 0, name
    for name in control.__all__:
        obj = getattr(control, name)
        assert name == "MAX_DELAY" or obj.__doc__, name
    assert compiled.Deadline is Deadline and compiled.retry_pause is retry_pause
    import agentmonad

    assert agentmonad.Timeout is Timeout and agentmonad.LoopExhausted is LoopExhausted
    assert {"Timeout", "LoopExhausted"} <= set(agentmonad.__all__)
