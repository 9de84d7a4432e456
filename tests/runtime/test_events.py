"""A run's events (agentmonad.events, docs/language.md §14): what each place of the runtime
emits, the tree the span numbers give, the outcome kinds, ``observe()``, and that a run with
no sink attached makes no event.

The ReAct example runs for real: its ``decide`` llm step over HTTP against the local model
server (tests/llm_server.py, answering with the example's planner), its tools on the example's
MCP server; it runs through the reference interpreter, which sends every effect through the
seam (compiled code does too once it calls the seam, see tests/cli/test_cli_trace.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentmonad import AgentMonad, Defect, Err, Ok, Site, lift_fn, lift_step
from agentmonad.context import current_run_context, hooks
from agentmonad.events import (
    EachProgress,
    EffectEnded,
    EffectStarted,
    Event,
    GroupEnded,
    GroupStarted,
    ModelRequest,
    RunEnded,
    RunStarted,
    ToolCalled,
)
from agentmonad.llm import llm_config, usage
from agentmonad.observe import current_effect, observe
from examples.research.impl import AgentState
from examples.research.planner import plan
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.span import SourceFile
from journals import PassThroughJournal

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "research" / "research.mce"
QUESTION = "what is a monad and 2 plus 40"


class Events:
    """An event sink keeping what it is told."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def _react_program(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(ROOT)  # the MCP server's command is relative to the repository root
    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None, result.diagnostics
    return result.program


def test_the_react_example_reports_every_step_model_call_and_tool_call_with_its_line(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = _react_program(monkeypatch)
    llm_server.respond_with(plan)
    sink = Events()
    with llm_config(llm_server.config()), usage() as used, hooks(events=sink):
        outcome = asyncio.run(interpret(program, "react", AgentState(), QUESTION))
    assert isinstance(outcome, Ok), outcome
    [started] = sink.of(RunStarted)
    assert (started.pipeline, started.site.file, started.site.line, started.parent) == ("react", "research.mce", 52, None)
    [ended] = sink.of(RunEnded)
    assert (ended.span, ended.outcome) == (started.span, "ok")
    effects = [(e.effect.kind, e.effect.site.step, e.effect.site.line) for e in sink.of(EffectStarted)]
    # the fns (hits_text, sum_text, final) are no effects (docs/language.md §14): not told
    assert effects == [
        ("step", "ask", 55),
        ("model", "decide", 56),
        ("tool", "search_facts", 58), ("step", "observe", 58),
        ("model", "decide", 56),
        ("tool", "add_numbers", 59), ("step", "observe", 59),
        ("model", "decide", 56),
    ]
    # every effect ends, ok, inside the run; its tokens are its model requests'
    ends = {e.span: e for e in sink.of(EffectEnded)}
    assert len(ends) == len(effects) and all(e.outcome == "ok" and e.duration >= 0 for e in ends.values())
    assert all(e.parent == started.span for e in sink.of(EffectStarted))
    requests = sink.of(ModelRequest)
    assert len(requests) == 3 and all(r.model == "planner" and r.effect.site.step == "decide" for r in requests)
    decided = [ends[r.span] for r in requests]
    assert [(e.prompt_tokens, e.completion_tokens) for e in decided] == [
        (r.prompt_tokens, r.completion_tokens) for r in requests
    ]
    assert sum(e.prompt_tokens for e in ends.values()) == used.prompt_tokens > 0
    assert sum(e.completion_tokens for e in ends.values()) == used.completion_tokens > 0
    tools = sink.of(ToolCalled)
    assert [(t.server, t.tool, t.ok, t.effect.site.step) for t in tools] == [
        ("search", "search", True, "search_facts"),
        ("search", "add", True, "add_numbers"),
    ]
    assert all(ends[t.span].effect.kind == "tool" and t.duration > 0 for t in tools)
    times = [e.at for e in sink.events]
    assert times == sorted(times)  # one monotonic clock


def _grouped() -> AgentMonad[int, Any, Any]:
    """``add >>= par(double, each(look))`` with sites, as the interpreter builds a spec."""

    def add(state: int, value: int) -> Any:
        return Ok(value + 1, state + 1)

    async def look(state: int, value: int) -> Any:
        await asyncio.sleep(0)
        return Ok(value * 100, state)

    add_k = lift_step(add, name="add", errors=(), site=Site("add", "s.mce", 3, 1))
    look_k = lift_step(look, name="look", errors=(), site=Site("look", "s.mce", 4, 9), is_async=True, kind="tool")
    double_k = lift_fn(lambda v: v * 2, name="double", site=Site("double", "s.mce", 4, 1))
    return add_k(1).then(
        lambda v: AgentMonad.par(
            [double_k(v), AgentMonad.each([v, v + 1, v + 2], look_k, merge=None).map(tuple)], merge=None
        )
    )


def test_a_groups_branches_are_its_children_and_each_finished_branch_is_progress() -> None:
    sink = Events()
    with hooks(events=sink):
        outcome = asyncio.run(_grouped().run(0))
    assert outcome == Ok((4, (200, 300, 400)), 1)
    [run] = sink.of(RunStarted)
    outer, inner = sink.of(GroupStarted)
    assert (outer.parent, outer.index, outer.total) == (run.span, (), 2)
    assert (inner.parent, inner.index, inner.total) == (outer.span, (1,), 3)
    parents = {(e.effect.site.step, e.effect.index): e.parent for e in sink.of(EffectStarted)}
    assert parents == {  # branch 0, the fn `double`, is no effect (docs/language.md §14)
        ("add", ()): run.span,
        ("look", (1, 0)): inner.span,
        ("look", (1, 1)): inner.span,
        ("look", (1, 2)): inner.span,
    }
    inner_progress = [(p.done, p.total, p.failed) for p in sink.of(EachProgress) if p.span == inner.span]
    assert inner_progress == [(1, 3, 0), (2, 3, 0), (3, 3, 0)]
    assert [(g.span, g.outcome) for g in sink.of(GroupEnded)] == [(inner.span, "ok"), (outer.span, "ok")]


class Boom(Exception):
    pass


def _failing(kind: str) -> AgentMonad[int, Any, Any]:
    """One step failing as ``kind`` says, at s.mce:7."""

    async def step(state: int, value: int) -> Any:
        match kind:
            case "err":
                return Err(Boom("no"), state)
            case "raised":
                raise Boom("declared")
            case "defect":
                raise KeyError("bug")
            case "cancelled":
                await asyncio.sleep(10)
        return Ok(value, state)

    stepped = lift_step(step, name="flaky", errors=(Boom,), site=Site("flaky", "s.mce", 7, 1), is_async=True)
    if kind == "cancelled":
        return stepped(1).timeout(0.01)
    return stepped(1)


@pytest.mark.parametrize(
    ("kind", "effect", "run"),
    [("ok", "ok", "ok"), ("err", "err", "err"), ("raised", "err", "err"), ("defect", "err", "defect"),
     ("cancelled", "cancelled", "err")],
)
def test_an_effect_ends_with_its_outcome_kind(kind: str, effect: str, run: str) -> None:
    sink = Events()
    with hooks(events=sink):
        try:
            asyncio.run(_failing(kind).run(0))
        except Defect:
            assert kind == "defect"
    [ended] = sink.of(EffectEnded)
    assert ended.outcome == effect
    assert ended.error == {"ok": None, "err": "Boom", "raised": "Boom", "defect": "KeyError", "cancelled": "CancelledError"}[kind]
    [run_ended] = sink.of(RunEnded)
    # a timeout is the run's Err; an undeclared exception is the step's raised error, which the
    # step contract makes the run's Defect (the seam does not know what a step declares)
    assert run_ended.outcome == run


def test_a_failed_branch_counts_in_the_progress() -> None:
    async def half(state: int, value: int) -> Any:
        await asyncio.sleep(0.01 * value)
        return Err(Boom(str(value)), state) if value == 2 else Ok(value, state)

    each = AgentMonad.each([0, 1, 2], lift_step(half, name="half", errors=(Boom,), is_async=True), merge=None)
    sink = Events()
    with hooks(events=sink):
        outcome = asyncio.run(each.run(0))
    assert isinstance(outcome, Err)
    assert [(p.done, p.failed) for p in sink.of(EachProgress)] == [(1, 0), (2, 0), (3, 1)]
    [group] = sink.of(GroupEnded)
    assert group.outcome == "err"


def test_observe_yields_the_events_as_they_happen_then_the_outcome() -> None:
    seen: list[Any] = []

    async def main() -> Any:
        run = observe(lambda: _grouped().run(0), pipeline="grouped")
        async for event in run:
            seen.append(event)
            if isinstance(event, EffectStarted) and event.effect.site.step == "add":
                # the consumer runs while the run is under way: the step has not ended yet
                assert not any(isinstance(e, EffectEnded) for e in seen)
        return run.outcome

    assert asyncio.run(main()) == Ok((4, (200, 300, 400)), 1)
    assert isinstance(seen[0], RunStarted) and seen[0].pipeline == "grouped"
    assert isinstance(seen[-1], RunEnded) and seen[-1].outcome == "ok"
    assert len([e for e in seen if isinstance(e, RunStarted)]) == 1  # AgentMonad.run inside is not a second run
    assert current_run_context().events is None  # nothing stays attached


def test_observe_raises_the_runs_defect_when_the_iteration_ends() -> None:
    async def main() -> list[Any]:
        seen = []
        with pytest.raises(Defect):
            async for event in observe(lambda: _failing("defect").run(0)):
                seen.append(event)
        return seen

    seen = asyncio.run(main())
    assert isinstance(seen[-1], RunEnded) and seen[-1].outcome == "defect"


def test_stopping_the_iteration_early_cancels_the_run() -> None:
    finished: list[bool] = []

    async def slow(state: int, value: int) -> Any:
        await asyncio.sleep(5)
        finished.append(True)
        return Ok(value, state)

    async def main() -> None:
        program = lift_step(slow, name="slow", errors=(), site=Site("slow", "s.mce", 1, 1), is_async=True)(0)
        async for event in observe(lambda: program.run(0)):
            if isinstance(event, EffectStarted):
                break

    asyncio.run(asyncio.wait_for(main(), 2))
    assert finished == []


def test_the_running_effect_is_known_inside_it() -> None:
    """What a streaming model call attributes its TextDelta to."""
    inside: list[Any] = []

    async def step(state: int, value: int) -> Any:
        inside.append(current_effect())
        return Ok(value, state)

    program = lift_step(step, name="s", errors=(), site=Site("s", "s.mce", 2, 3), is_async=True)(0)
    with hooks(events=Events()):
        asyncio.run(program.run(0))
    asyncio.run(program.run(0))
    assert [e.site.step if e else None for e in inside] == ["s", None]


def test_with_no_sink_attached_no_event_is_made_and_no_span_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    """The no-sink path: not one event object is built, not one span opened (a journal alone,
    another hook, makes effects go through the seam but still builds no event)."""
    import agentmonad.events as events

    made: list[str] = []
    for kind in events.Event.__args__:  # every event class: count what is built
        def counted(self: Any, *args: Any, _init: Any = kind.__init__, _name: str = kind.__name__, **kw: Any) -> None:
            made.append(_name)
            _init(self, *args, **kw)

        monkeypatch.setattr(kind, "__init__", counted)
    with hooks(events=Events()):  # the counting itself works
        asyncio.run(_grouped().run(0))
    assert len(made) > 10
    made.clear()
    spans: list[Any] = []

    class Journal(PassThroughJournal):  # runs every call, notes the span it ran in
        def record(self, effect: Any, result: object) -> None:
            spans.append(current_run_context().span)

    assert asyncio.run(_grouped().run(0)) == Ok((4, (200, 300, 400)), 1)
    with hooks(journal=Journal()):
        assert asyncio.run(_grouped().run(0)) == Ok((4, (200, 300, 400)), 1)
    assert made == [] and len(spans) == 4 and set(spans) == {None}  # add and 3 looks: the fn is no effect


def test_awaiting_an_observed_run_gives_its_outcome() -> None:
    async def main() -> Any:
        return await observe(lambda: _grouped().run(0))

    assert asyncio.run(main()) == Ok((4, (200, 300, 400)), 1)
