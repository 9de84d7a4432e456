"""The deadlines' shared, lazily armed timer (issue 30, issue 36 item 6): a ``timeout`` entered
over and over in one task arms no timer per entry and leaves nothing behind for the garbage
collector, with ``asyncio.timeout``'s semantics (nested deadlines, outer cancellations, holds)."""

from __future__ import annotations

import asyncio
import gc

import pytest

from agentmonad.control import Deadline, deadlines_held


def test_entering_a_deadline_again_and_again_arms_one_timer() -> None:
    async def go() -> int:
        loop = asyncio.get_running_loop()
        most = 0
        for _ in range(1_000):
            async with Deadline(30):
                pass
            most = max(most, len(loop._scheduled))  # type: ignore[attr-defined]
        return most

    assert asyncio.run(go()) <= 1


def test_entering_a_deadline_leaves_nothing_for_the_cycle_collector() -> None:
    """What drives a collection is the count of tracked objects allocated and not yet freed:
    a timer handle left cancelled in the loop's heap per entry grew it by one per ``timeout``."""

    async def go() -> int:
        async with Deadline(30):  # the task's clock is made once
            pass
        gc.collect()
        gc.disable()
        try:
            start = gc.get_count()[0]
            most = 0
            for _ in range(1_000):
                async with Deadline(30):
                    pass
                most = max(most, gc.get_count()[0] - start)
            return most
        finally:
            gc.enable()

    assert asyncio.run(go()) < 20


def test_an_inner_deadline_that_fired_leaves_the_outer_one_armed() -> None:
    async def go() -> tuple[bool, bool]:
        outer, inner = Deadline(0.2), Deadline(0.01)
        with pytest.raises(TimeoutError):
            async with outer:
                try:
                    async with inner:
                        await asyncio.sleep(1)
                except TimeoutError:
                    assert inner.expired()
                await asyncio.sleep(1)  # the outer deadline must still fire
        return inner.expired(), outer.expired()

    assert asyncio.run(go()) == (True, True)


def test_a_later_inner_deadline_waits_for_the_earlier_outer_one() -> None:
    async def go() -> tuple[bool, bool]:
        outer, inner = Deadline(0.02), Deadline(5)
        with pytest.raises(TimeoutError):
            async with outer:
                async with inner:
                    await asyncio.sleep(1)
        return inner.expired(), outer.expired()

    assert asyncio.run(go()) == (False, True)


def test_an_outer_cancellation_is_not_a_timeout() -> None:
    async def body(deadline: Deadline) -> None:
        async with deadline:
            await asyncio.sleep(1)

    async def go() -> bool:
        deadline = Deadline(5)
        task = asyncio.ensure_future(body(deadline))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return deadline.expired()

    assert asyncio.run(go()) is False


def test_a_held_deadline_resumes_with_the_time_it_had_left() -> None:
    async def go() -> bool:
        loop = asyncio.get_running_loop()
        deadline = Deadline(0.05)
        start = loop.time()
        with pytest.raises(TimeoutError):
            async with deadline:
                with deadlines_held():
                    await asyncio.sleep(0.1)  # held: does not count
                await asyncio.sleep(1)
        return loop.time() - start >= 0.14

    assert asyncio.run(go())
