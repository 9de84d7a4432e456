"""The deadlines' shared, lazily armed timer (issue 30, issue 36 item 6): a ``timeout`` entered
over and over in one task arms no timer per entry and leaves nothing behind for the garbage
collector, with ``asyncio.timeout``'s semantics (nested deadlines, outer cancellations, holds)."""

from __future__ import annotations

import asyncio
import gc
import weakref

import pytest

from agentmonad.context import current_run_context, hooks
from agentmonad.control import Deadline, deadlines_around, deadlines_held, note_reached
from agentmonad.llm import usage
from journals import PassThroughJournal


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


# ------------------------------------------------ the task's clock as the guard (issue 48)


def test_a_task_sets_its_clock_in_the_run_context_once_not_per_deadline() -> None:
    async def go() -> tuple[int, bool, list[Deadline]]:
        async with Deadline(30):
            first = current_run_context()
        for _ in range(3):
            async with Deadline(30) as deadline:
                inside = deadlines_around(current_run_context())
                assert inside == [deadline]
        return len(first.guards), current_run_context() is first, deadlines_around(first)

    guards, same, left = asyncio.run(go())
    assert (guards, same, left) == (1, True, [])  # one guard; later deadlines left the context alone


def test_a_branch_task_runs_under_its_parents_deadlines_then_its_own() -> None:
    """A ``par``/``each`` branch copies the run context it starts in: it finds its parent's
    clock there, so the parent's deadlines come first, then those the branch enters."""

    async def branch(seen: list[list[Deadline]], own: Deadline) -> None:
        seen.append(deadlines_around(current_run_context()))
        async with own:
            seen.append(deadlines_around(current_run_context()))
            await asyncio.sleep(0)

    async def go() -> tuple[list[list[Deadline]], Deadline, Deadline, Deadline]:
        seen: list[list[Deadline]] = []
        outer, inner, own = Deadline(30), Deadline(20), Deadline(10)
        async with outer, inner:
            await asyncio.gather(branch(seen, own))
        return seen, outer, inner, own

    seen, outer, inner, own = asyncio.run(go())
    assert seen == [[outer, inner], [outer, inner, own]]


def test_a_parents_deadline_keeps_the_state_a_branch_noted_while_it_unwound() -> None:
    async def branch() -> None:
        try:
            await asyncio.sleep(1)
        except asyncio.CancelledError:
            note_reached("where the branch was")
            raise

    async def go() -> tuple[bool, object]:
        deadline = Deadline(0.01)
        with pytest.raises(TimeoutError):
            async with deadline:
                await asyncio.gather(branch())
        return deadline.expired(), deadline.reached("fallback")

    assert asyncio.run(go()) == (True, "where the branch was")


def test_a_branch_holds_its_parents_deadline() -> None:
    async def branch() -> None:
        with deadlines_held():
            await asyncio.sleep(0.1)  # held: does not count against the parent's 0.05 s

    async def go() -> bool:
        deadline = Deadline(0.05)
        async with deadline:
            await asyncio.gather(branch())
        return deadline.expired()

    assert asyncio.run(go()) is False


def test_a_deadline_after_a_construct_reset_the_context_is_found_again() -> None:
    """The first deadline set the clock in a context that a block around it has reset since
    (here a meter's): the next deadline sets it again, and a note still reaches it."""

    async def go() -> tuple[list[Deadline], object]:
        with usage():
            async with Deadline(30):
                pass
        late = Deadline(0.01)
        with pytest.raises(TimeoutError):
            async with late:
                found = deadlines_around(current_run_context())
                try:
                    await asyncio.sleep(1)
                except asyncio.CancelledError:
                    note_reached("noted")
                    raise
        return found == [late] and late.expired(), late.reached("fallback")

    assert asyncio.run(go()) == (True, "noted")


def test_a_tasks_clock_in_its_context_leaves_no_cycle_for_the_collector() -> None:
    """The task's context holds its clock: the clock must not hold the task, or every task that
    entered a deadline would be freed only by the cycle collector."""

    async def timed() -> None:
        async with Deadline(30):
            await asyncio.sleep(0)

    async def go() -> bool:
        task = asyncio.ensure_future(timed())
        await task
        await asyncio.sleep(0)  # the task's done callbacks (its clock is dropped) run
        gone = weakref.ref(task)
        del task
        return gone() is None

    gc.collect()
    gc.disable()
    try:
        assert asyncio.run(go())
    finally:
        gc.enable()


def test_a_deadline_the_journal_refuses_is_not_left_running() -> None:
    """A durable run's journal may refuse a deadline where it is entered (a replay that does
    not match): the block is not entered, and the deadline must not fire on the task later."""

    class Refusing(PassThroughJournal):
        def deadline_entered(self, deadline: object) -> None:
            raise LookupError("the recorded run had no timeout here")

    async def go() -> str:
        with hooks(journal=Refusing()):
            with pytest.raises(LookupError):
                async with Deadline(0.01):
                    pass
        await asyncio.sleep(0.05)  # the refused deadline's time has passed
        return "not cancelled"

    assert asyncio.run(go()) == "not cancelled"


def test_a_loop_with_a_clock_of_its_own_times_the_deadlines() -> None:
    """The task's clock reads ``time.monotonic`` directly only where the loop's clock is
    asyncio's; a loop that keeps its own time is asked for it."""

    class Shifted(asyncio.SelectorEventLoop):
        def time(self) -> float:
            return super().time() - 1_000.0

    async def go() -> tuple[bool, bool]:
        calm, late = Deadline(5), Deadline(0.01)
        async with calm:
            await asyncio.sleep(0.02)
        with pytest.raises(TimeoutError):
            async with late:
                await asyncio.sleep(1)
        return calm.expired(), late.expired()

    loop = Shifted()
    try:
        assert loop.run_until_complete(go()) == (False, True)
    finally:
        loop.close()


def test_a_branchs_deadline_is_its_own_not_its_siblings() -> None:
    """Branches copy their parent's run context, whose innermost guard is the parent's clock:
    a deadline a branch enters goes on the branch's own clock, so a sibling neither sees it
    nor holds it."""

    async def timed(own: Deadline, ready: asyncio.Event) -> bool:
        with pytest.raises(TimeoutError):
            async with own:
                ready.set()
                await asyncio.sleep(1)
        return own.expired()

    async def holding(ready: asyncio.Event) -> list[Deadline]:
        await ready.wait()
        seen = deadlines_around(current_run_context())
        with deadlines_held():
            await asyncio.sleep(0.1)
        return seen

    async def go() -> tuple[bool, list[Deadline], Deadline]:
        outer, own, ready = Deadline(30), Deadline(0.02), asyncio.Event()
        async with outer:
            expired, seen = await asyncio.gather(timed(own, ready), holding(ready))
        return expired, seen, outer

    expired, seen, outer = asyncio.run(go())
    assert expired and seen == [outer]
