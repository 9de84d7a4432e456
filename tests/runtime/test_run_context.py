"""The run context (``agentmonad.context``): one object per run in one ``ContextVar``, what the
scopes, meters, deadlines and a retry's failure are kept in, and where hooks attach."""

from __future__ import annotations

import asyncio
from typing import Any

from agentmonad import Ok
from agentmonad.context import EMPTY, Scope, current_run_context
from agentmonad.control import Deadline, deadlines_around, previous_failure, remember_failure, forget_failure, use_retry_clock, RetryClock
from agentmonad.llm import LLMConfig, ModelSettings, budget, current_usage, llm_config, llm_scope, usage
from agentmonad.mcp import tool_scope
from journals import PassThroughJournal


def test_outside_a_run_nothing_is_open_and_no_hook_is_attached() -> None:
    context = current_run_context()
    assert context is EMPTY
    assert (context.journal, context.events, context.human) == (None, None, None)
    assert context.meters == () and context.guards == () and context.failure is None


def test_every_construct_keeps_its_state_in_the_one_run_context() -> None:
    """Scopes, config, meters, deadlines, a retry's failure and the clock all land in the one
    context, and each is gone again once its block is left."""
    seen: dict[str, Any] = {}

    async def go() -> None:
        async with tool_scope(), llm_scope(LLMConfig(models={"*": ModelSettings(temperature=0.5)})) as run:
            with usage() as meter:
                async with Deadline(5.0) as deadline, budget(100) as spending:
                    with use_retry_clock(RetryClock()):
                        token = remember_failure("nope", 1, None)
                        context = current_run_context()
                        seen["parts"] = sorted(k.__name__ for k in context.parts)
                        seen["meters"] = context.meters
                        seen["guards"] = context.guards
                        seen["deadlines"] = deadlines_around(context)
                        seen["failure"] = previous_failure()
                        seen["clock"] = context.clock
                        forget_failure(token)
                        assert previous_failure() is None
                    spending.ending(Ok(None, None))
                seen["deadlines after"] = deadlines_around(current_run_context())
            seen["usage"] = run.usage
            seen["meter"], seen["deadline"], seen["budget"] = meter, deadline, spending
        assert current_run_context() is EMPTY

    asyncio.run(go())
    assert seen["parts"] == ["LLMConfig", "_Scope", "_Scope"]  # the config, the model scope, the tool scope
    assert seen["meters"] == (seen["usage"], seen["meter"], seen["budget"])
    # the deadline through its task's clock, the one guard of all the task's deadlines
    assert seen["deadlines"] == [seen["deadline"]] and seen["guards"][1:] == (seen["budget"],)
    assert seen["deadlines after"] == []
    assert seen["failure"].error == "nope" and seen["failure"].attempt == 1
    assert seen["clock"] is not None


def test_a_par_branch_sees_what_was_open_where_it_started_not_what_a_sibling_opens() -> None:
    async def sibling(ready: asyncio.Event) -> int:
        with usage():
            ready.set()
            await asyncio.sleep(0.01)
        return 0

    async def other(ready: asyncio.Event) -> int:
        await ready.wait()
        return len(current_run_context().meters)

    async def go() -> tuple[int, int]:
        with usage():
            ready = asyncio.Event()
            a, b = await asyncio.gather(sibling(ready), other(ready))
            return a, b

    assert asyncio.run(go()) == (0, 1)


def test_the_shared_scope_close_waits_for_everything_even_when_cancelled_again() -> None:
    closed: list[int] = []

    class Owned(Scope):
        def closing(self) -> list[asyncio.Future[None] | Any]:
            async def one(i: int) -> None:
                await asyncio.sleep(0.02)
                closed.append(i)

            return [one(1), one(2)]

    async def go() -> None:
        task = asyncio.ensure_future(Owned().close())
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0.005)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert sorted(closed) == [1, 2]  # both closed before the cancellation came out

    asyncio.run(go())


def test_the_llm_config_is_laid_over_the_one_in_force() -> None:
    with llm_config(LLMConfig(models={"a": ModelSettings(temperature=0.1)})):
        with llm_config(LLMConfig(models={"b": ModelSettings(temperature=0.2)})) as both:
            assert set(both.models) == {"a", "b"}
            assert current_usage() is None
    assert current_run_context() is EMPTY


def test_a_deadline_learns_the_state_reached_through_the_run_context_not_the_exception() -> None:
    """``note_reached(state)`` takes no exception: the deadline whose cancellation is unwinding
    keeps the last note, and a note made while no guard's own cancellation unwinds is dropped
    (a stale one must not outlive the cancellation that made it)."""
    from agentmonad.control import note_reached

    async def go() -> tuple[object, object]:
        deadline = Deadline(0.01)
        try:
            async with deadline:
                note_reached("too early")  # not this deadline's cancellation: dropped
                try:
                    await asyncio.sleep(1)
                except asyncio.CancelledError:
                    note_reached("inner")
                    note_reached("outer")  # innermost first, each replacing the last
                    raise
        except TimeoutError:
            assert deadline.expired()
        calm = Deadline(5.0)
        async with calm:
            note_reached("nothing is being cancelled")
        return deadline.reached("fallback"), calm.reached("fallback")

    assert asyncio.run(go()) == ("outer", "fallback")


def test_a_budget_learns_the_state_reached_through_the_run_context() -> None:
    from agentmonad import BudgetExceeded
    from agentmonad.control import note_reached
    from agentmonad.llm import record_usage

    async def go() -> object:
        spending = budget(1)
        try:
            async with spending:
                record_usage("m", 5, 0)
                try:
                    await asyncio.sleep(1)
                except asyncio.CancelledError:
                    note_reached("reached")
                    raise
        except BudgetExceeded:
            return spending.state_after("fallback")
        raise AssertionError("the budget did not fail")

    assert asyncio.run(go()) == "reached"


# ---------------------------------------------------------------- the effect seam


class Recorder(PassThroughJournal):
    """A journal and an event sink at once: what a durable or traced run would attach."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, int, tuple[int, ...], object]] = []
        self.journal: list[tuple[str, str, tuple[int, ...], object]] = []

    def emit(self, event: Any) -> None:
        from agentmonad.events import EffectEnded, EffectStarted

        match event:
            case EffectStarted(effect=effect):
                self.events.append(("started", effect.kind, effect.site.step, effect.site.line, effect.index, None))
            case EffectEnded(effect=effect, outcome=outcome):
                self.events.append(("ended", effect.kind, effect.site.step, effect.site.line, effect.index, outcome))
            case _:
                pass

    def record(self, effect: Any, result: object) -> None:
        self.journal.append((effect.kind, effect.site.step, effect.index, result))


def _interpreted_program() -> Any:
    """``add >>= par(double, each(tool_like))``, built as the interpreter builds a spec."""
    from agentmonad import AgentMonad, Ok, Site, lift_fn, lift_step

    def add(state: int, value: int) -> Any:
        return Ok(value + 1, state + 1)

    async def tool_like(state: int, value: int) -> Any:
        await asyncio.sleep(0)
        return Ok(value * 100, state)

    add_k = lift_step(add, name="add", errors=(), site=Site("add", "s.mce", 3, 1))
    tool_k = lift_step(tool_like, name="look", errors=(), site=Site("look", "s.mce", 4, 9), is_async=True, kind="tool")
    double_k = lift_fn(lambda v: v * 2, name="double", site=Site("double", "s.mce", 4, 1))
    return add_k(1).then(
        lambda v: AgentMonad.par(
            [double_k(v), AgentMonad.each([v, v + 1], tool_k, merge=None).map(tuple)], merge=None
        )
    )


def test_with_a_hook_attached_every_effect_of_an_interpreted_run_goes_through_the_seam() -> None:
    from agentmonad.context import hooks

    recorder = Recorder()
    with hooks(journal=recorder, events=recorder):
        outcome = asyncio.run(_interpreted_program().run(0))
    assert outcome.value == (4, (200, 300))
    kinds = sorted((kind, step, index) for kind, step, index, _ in recorder.journal)
    # the fn `double` is no effect (docs/language.md §14): the journal is not told of it
    assert kinds == [("step", "add", ()), ("tool", "look", (1, 0)), ("tool", "look", (1, 1))]
    assert ("tool", "look", (1, 1), Ok(300, 1)) in recorder.journal  # each effect's result is recorded
    started = [e for e in recorder.events if e[0] == "started"]
    ended = [e for e in recorder.events if e[0] == "ended"]
    assert len(started) == len(ended) == 3
    assert ("started", "tool", "look", 4, (1, 1), None) in recorder.events  # its site and element index


def test_with_no_hook_nothing_goes_through_the_seam() -> None:
    recorder = Recorder()
    outcome = asyncio.run(_interpreted_program().run(0))
    assert outcome.value == (4, (200, 300))
    assert current_run_context().hooked is False and recorder.events == []


def test_a_context_given_no_hook_is_not_hooked() -> None:
    """``with_hooks()`` with nothing to attach leaves the context plain. (That a hooked context
    outliving its ``with hooks()`` block still reports every effect, and an unhooked run beside
    a hooked one reports none, is tests/codegen/test_differential.py's: behaviour, not when the
    collector frees what keeps ``agentmonad.context.HOOKS_ALIVE`` non-empty.)"""
    unhooked = EMPTY.with_index(1).with_hooks()
    assert not unhooked.hooked
