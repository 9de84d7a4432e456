"""par/each: fail-fast with real cancellation, limits, outer cancellation,
defects never lost, source order, and the ``compiled`` par/each helpers that
share the same core."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentmonad import AgentMonad, Defect, Err, Ok, Site, lift_step, merge_states
from agentmonad import compiled

SITE = Site("group", "t.mce", 4, 2)


class Boom(Exception):
    pass


def test_fail_fast_cancels_every_sibling() -> None:
    cancelled: list[int] = []

    async def slow(state: int, i: int) -> Ok[int, int]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return Ok(i, state)

    async def failing(state: int, i: int) -> Err[int, Boom]:
        await asyncio.sleep(0.01)
        return Err(Boom(i), state + 100)

    slow_k = lift_step(slow, name="slow", errors=(), is_async=True)
    fail_k = lift_step(failing, name="failing", errors=(Boom,), is_async=True, site=SITE)
    branches = [slow_k(i) for i in range(49)]
    branches.insert(17, fail_k(-1))

    async def main() -> tuple[Any, set[asyncio.Task[Any]]]:
        out = await AgentMonad.par(branches).run(1)
        others = asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]
        return out, others

    out, leftover = asyncio.run(main())
    assert isinstance(out, Err) and isinstance(out.error, Boom)
    assert out.state == 101  # the failing branch's state at its failure
    assert out.site == SITE
    assert sorted(cancelled) == list(range(49))  # the par did not wait for the 5 s branches: it cancelled them
    assert not leftover


def test_first_failure_observed_wins() -> None:
    async def fail_after(state: int, delay: float) -> Err[int, str]:
        await asyncio.sleep(delay)
        return Err(f"after {delay}", state)

    k = lift_step(fail_after, name="f", errors=(str,), is_async=True)
    out = AgentMonad.par([k(0.05), k(0.01), k(0.03)]).run_sync(0)
    assert isinstance(out, Err) and out.error == "after 0.01"


def test_results_in_source_order_whatever_finishes_first() -> None:
    async def nap(state: int, delay: float) -> Ok[int, float]:
        await asyncio.sleep(delay)
        return Ok(delay, state)

    k = lift_step(nap, name="nap", errors=(), is_async=True)
    delays = [0.03, 0.0, 0.02, 0.01]
    assert AgentMonad.par([k(d) for d in delays]).run_sync(0) == Ok(tuple(delays), 0)
    assert AgentMonad.each(delays, k, limit=2).run_sync(0) == Ok(delays, 0)


def test_every_branch_gets_the_same_input_state() -> None:
    seen: list[int] = []

    def look(state: int, value: None) -> Ok[int, None]:
        seen.append(state)
        return Ok(None, state)

    k = lift_step(look, name="look", errors=())
    AgentMonad.put(7).then(lambda _: AgentMonad.par([k(None)] * 3)).run_sync(0)
    assert seen == [7, 7, 7]


def test_each_limit_is_respected_and_memory_bounded() -> None:
    running = 0
    peak = 0
    created = 0

    async def body(state: int, x: int) -> Ok[int, int]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.001 * (x % 3))
        running -= 1
        return Ok(x * 2, state)

    async def main() -> Any:
        out = await compiled.each_values(0, list(range(40)), body, 3, None, SITE)
        return out

    out = asyncio.run(main())
    assert out == Ok([x * 2 for x in range(40)], 0)
    assert peak == 3

    # 10,000 elements with a limit: never more than `limit` tasks exist at once
    max_tasks = 0

    async def counting(state: int, x: int) -> Ok[int, int]:
        nonlocal max_tasks, created
        created += 1
        max_tasks = max(max_tasks, len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return Ok(x, state)

    async def big() -> Any:
        return await compiled.each_values(0, range(10_000), counting, 4, None, SITE)  # type: ignore[arg-type]

    out = asyncio.run(big())
    assert isinstance(out, Ok) and out.value == list(range(10_000))
    assert created == 10_000
    assert max_tasks <= 4 + 1  # the branches plus the main task


def test_each_empty_list() -> None:
    async def body(state: int, x: int) -> Ok[int, int]:
        raise AssertionError("never called")

    assert asyncio.run(compiled.each_values(3, [], body, None, merge_states, SITE)) == Ok([], 3)
    assert AgentMonad.each([], lambda x: AgentMonad.pure(x)).run_sync(3) == Ok([], 3)


def test_outer_cancellation_cancels_every_branch() -> None:
    started = 0
    cancelled = 0

    async def slow(state: int, value: None) -> Ok[int, None]:
        nonlocal started, cancelled
        started += 1
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled += 1
            raise
        return Ok(None, state)

    k = lift_step(slow, name="slow", errors=(), is_async=True)

    async def main() -> set[asyncio.Task[Any]]:
        task = asyncio.create_task(AgentMonad.par([k(None) for _ in range(10)]).run(0))
        await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    leftover = asyncio.run(main())
    assert started == 10 and cancelled == 10
    assert not leftover


def test_defect_cancels_siblings_and_carries_the_others() -> None:
    cancelled = 0

    async def bug(state: int, value: str) -> Ok[int, None]:
        await asyncio.sleep(0.01)
        raise RuntimeError(value)

    async def bug_on_cancel(state: int, value: None) -> Ok[int, None]:
        nonlocal cancelled
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled += 1
            raise ValueError("cleanup failed")  # a defect raised while being cancelled
        return Ok(None, state)

    async def slow(state: int, value: None) -> Ok[int, None]:
        nonlocal cancelled
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled += 1
            raise
        return Ok(None, state)

    b = lift_step(bug, name="bug", errors=(), is_async=True, site=Site("bug", "t.mce", 9, 3))
    c = lift_step(bug_on_cancel, name="cleanup", errors=(), is_async=True)
    s = lift_step(slow, name="slow", errors=(), is_async=True)
    with pytest.raises(Defect) as info:
        AgentMonad.par([s(None), b("first"), c(None), s(None)]).run_sync(5)
    d = info.value
    assert d.step == "bug" and d.state == 5 and isinstance(d.cause, RuntimeError)
    assert str(d.cause) == "first" and d.__cause__ is d.cause
    assert "t.mce:9:3" in str(d)
    assert cancelled == 3
    assert [type(o.cause) for o in d.others] == [ValueError]
    assert d.others[0].step == "cleanup"


def test_keyboard_interrupt_in_a_branch_is_not_converted() -> None:
    def stop_now(state: int, value: None) -> Ok[int, None]:
        raise KeyboardInterrupt

    k = lift_step(stop_now, name="k", errors=(Exception,))
    with pytest.raises(KeyboardInterrupt):
        AgentMonad.par([k(None), AgentMonad.pure(1)]).run_sync(0)


def test_compiled_par() -> None:
    async def double(state: int, value: int) -> Ok[int, int]:
        return Ok(value * 2, state + 1)

    async def negate(state: int, value: int) -> Ok[int, int]:
        return Ok(-value, state)

    async def bump(state: int, value: int) -> Ok[int, int]:
        return Ok(value, state + 2)

    async def fails(state: int, value: int) -> Err[int, str]:
        return Err("no", state + 5)

    def add(base: int, branches: Any) -> int:
        return base + sum(b - base for b in branches)

    out = asyncio.run(compiled.par(10, 3, [double, negate], add, SITE))
    assert out == Ok((6, -3), 11)
    out = asyncio.run(compiled.par(10, 3, [double, negate], None, SITE))
    assert out == Ok((6, -3), 10)
    out = asyncio.run(compiled.par(10, 3, [double, fails], merge_states, SITE))
    assert out == Err("no", 15)
    out = asyncio.run(compiled.par(10, 3, [double, bump], merge_states, SITE))
    assert isinstance(out, Err) and out.state == 10 and out.site == SITE  # merge conflict


def test_compiled_branch_raising_is_a_defect_at_the_group() -> None:
    async def broken(state: int, value: int) -> Ok[int, int]:
        raise OSError("disk")

    async def fine(state: int, value: int) -> Ok[int, int]:
        return Ok(value, state)

    with pytest.raises(Defect) as info:
        asyncio.run(compiled.par(1, 2, [fine, broken], None, SITE))
    assert info.value.site == SITE and isinstance(info.value.cause, OSError)


def test_par_1000_branches_run_at_once() -> None:
    under_way: list[int] = [0, 0]  # now, most at once

    async def nap(state: int, value: None) -> Ok[int, None]:
        under_way[0] += 1
        under_way[1] = max(under_way)
        await asyncio.sleep(0.05)
        under_way[0] -= 1
        return Ok(None, state)

    k = lift_step(nap, name="nap", errors=(), is_async=True)
    prog = AgentMonad.par([k(None) for _ in range(1000)])
    assert isinstance(prog.run_sync(0), Ok)
    assert under_way == [0, 1000]  # every branch was napping at once, not one after another
