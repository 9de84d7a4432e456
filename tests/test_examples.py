"""The shipped examples, compiled and run (research has its own tests with its MCP server);
briefing's llm step over real HTTP (tests/llm_server.py)."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest

from agentmonad import Err, MergeConflict, Ok
from mcec.compiler import compile_source
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parent.parent


def load(spec: str) -> tuple[Any, Any]:
    path = ROOT / spec
    source = SourceFile(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))
    result = compile_source(source)
    assert result.ok and result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated)


@pytest.fixture(scope="module")
def briefing() -> tuple[Any, Any]:
    return load("examples/briefing/briefing.mce")


@pytest.fixture(scope="module")
def meta() -> tuple[Any, Any]:
    return load("examples/meta/meta.mce")


class Naps:
    """Stands in for ``asyncio`` in examples/briefing/impl.py, whose sources only ``sleep``: counts
    the naps under way at once and those cancelled, then naps for real."""

    def __init__(self) -> None:
        self.under_way = self.most = 0
        self.cancelled: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.under_way += 1
        self.most = max(self.most, self.under_way)
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            self.cancelled.append(seconds)
            raise
        finally:
            self.under_way -= 1


@pytest.fixture
def naps(monkeypatch: pytest.MonkeyPatch) -> Naps:
    import examples.briefing.impl as impl

    watched = Naps()
    monkeypatch.setattr(impl, "asyncio", watched)
    return watched


def test_briefing_runs_sources_in_parallel_and_merges_logs_in_source_order(briefing: tuple[Any, Any], naps: Naps) -> None:
    from examples.briefing.impl import BriefingState, Request

    _, module = briefing
    outcome = asyncio.run(module.briefing(BriefingState(), Request("Oslo")))
    assert isinstance(outcome, Ok)
    assert outcome.value.degraded == ()
    assert "Sunny in Oslo" in outcome.value.text
    # Append merges each branch's additions in branch order, whatever finished first
    assert outcome.state == BriefingState(log=("fetched news", "fetched weather", "fetched stocks"), fetches=3)
    assert naps.most == 3  # the three sources' naps were under way at once, not one after another


def test_briefing_degrades_when_a_source_is_down(briefing: tuple[Any, Any]) -> None:
    from examples.briefing.impl import BriefingState, Request

    _, module = briefing
    outcome = asyncio.run(module.briefing(BriefingState(), Request("Oslo", down=("news", "stocks"))))
    assert isinstance(outcome, Ok)
    assert outcome.value.degraded == ("news", "stocks")
    assert outcome.state == BriefingState(log=("fetched weather",), fetches=1)


def test_strict_briefing_fails_fast_with_the_state_at_failure(briefing: tuple[Any, Any]) -> None:
    from examples.briefing.impl import BriefingState, Request, SourceDown

    program, module = briefing
    outcome = asyncio.run(module.strict_briefing(BriefingState(), Request("Oslo", down=("weather",))))
    assert isinstance(outcome, Err) and isinstance(outcome.error, SourceDown)
    assert outcome.error.source == "weather"
    assert outcome.site is not None and outcome.site.step == "weather"
    assert outcome.state == BriefingState()
    interpreted = asyncio.run(Interpreter(program).run("strict_briefing", BriefingState(), Request("Oslo", down=("weather",))))
    assert isinstance(interpreted, Err) and isinstance(interpreted.error, SourceDown)
    assert (interpreted.error.source, interpreted.state, interpreted.site) == ("weather", outcome.state, outcome.site)


def _meta_models() -> Any:
    """The example's scripted planner and writer, in the models' place (no network)."""
    from agentmonad.llm import LLMConfig
    from agentmonad.testing import FunctionModel
    from examples.meta.planner import plan
    from examples.meta.writer import synthesize

    return LLMConfig(models={"planner": FunctionModel(plan), "writer": FunctionModel(synthesize)})


def _meta_responder(request: Any) -> Any:
    """One HTTP server for both of meta.mce's models: the planner's prompt is the one about plans."""
    from examples.meta.planner import plan
    from examples.meta.writer import synthesize

    return plan(request) if "You write plans for a meta-agent" in request.rendered else synthesize(request)


def test_meta_agent_repairs_a_rejected_plan_and_runs_it(meta: tuple[Any, Any], llm_server: LLMServer) -> None:
    """End to end over HTTP: the planner's first plan is rejected by the checker (MCE012), it is
    shown the diagnostics in its next prompt, its second plan is accepted and runs the
    specialists of specialists.mce (each with its own state) three at a time, and the writer
    synthesizes the report; compiled and interpreted agree."""
    from agentmonad.llm import llm_config
    from examples.meta.models import MetaState, Report, Section, Task

    program, module = meta
    llm_server.respond_with(_meta_responder)
    task = Task(goal="monads and agents and tools")
    with llm_config(llm_server.config()):
        compiled = asyncio.run(module.solve(MetaState(), task))
        interpreted = asyncio.run(Interpreter(program).run("solve", MetaState(), task))
    sections = [
        Section(title=t.title(), body=f"{t} is a topic worth a section.") for t in ("monads", "agents", "tools")
    ]
    assert compiled == Ok(
        Report(headline="Report on Monads, Agents, Tools", sections=sections),
        MetaState(notes=("wrote Monads", "wrote Agents", "wrote Tools"), specialists_run=3),
    )
    assert interpreted == compiled
    prompts = [r.body["messages"][-1]["content"] for r in llm_server.requests]
    assert len(prompts) == 6  # planner, planner, writer — twice
    first, second, writer = prompts[:3]
    assert "rejected" not in first and "Task: {\"goal\":\"monads and agents and tools\"}" in first
    assert "research : str -> Section ! SpecialistError" in first
    assert "The plan must have the type: Task -> list[Section] ! MergeConflict | SpecialistError" in first
    # the rejection, as the planner received it: the plan, then the checker's diagnostics
    assert "Your previous plan was rejected by the checker:\neach(limit=3) research\nerror[MCE012]" in second
    assert "a plan over toolbox `specialists` takes Task, but this plan begins with the `each`" in second
    assert "1 | each(limit=3) research" in second
    assert "Section: Monads: monads is a topic worth a section." in writer


def test_meta_agent_runs_at_most_three_specialists_at_once(meta: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmonad.llm import llm_config
    from examples.meta import impl
    from examples.meta.models import MetaState, Task

    _, module = meta
    running, peak = 0, 0
    original = impl.look_up

    async def observed(state: Any, topic: Any) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            return await original(state, topic)
        finally:
            running -= 1

    monkeypatch.setattr(impl, "look_up", observed)  # the specialists' spec binds it at import: reload
    specialists = importlib.import_module("examples.meta.specialists_mce")
    monkeypatch.setattr(specialists, "look_up", observed)
    goal = " and ".join(f"topic{i}" for i in range(10))
    with llm_config(_meta_models()):
        outcome = asyncio.run(module.solve(MetaState(), Task(goal=goal)))
    assert isinstance(outcome, Ok) and len(outcome.value.sections) == 10
    assert peak == 3


def test_meta_agent_failure_names_the_specialist(meta: tuple[Any, Any]) -> None:
    from agentmonad.llm import llm_config
    from examples.meta.models import MetaState, SpecialistError, Task

    _, module = meta
    with llm_config(_meta_models()):
        outcome = asyncio.run(module.solve(MetaState(), Task(goal="monads and impossible things")))
    assert isinstance(outcome, Err) and isinstance(outcome.error, SpecialistError)
    assert outcome.site is not None and outcome.site.step == "look_up" and outcome.site.file == "specialists.mce"
    # a sub-agent's failure carries the caller's state: what the other specialist noted so far
    assert outcome.state.specialists_run <= 1


def test_meta_agent_counting_goals_go_to_the_statistician(meta: tuple[Any, Any]) -> None:
    from agentmonad.llm import llm_config
    from examples.meta.models import MetaState, Task

    _, module = meta
    with llm_config(_meta_models()):
        outcome = asyncio.run(module.solve(MetaState(), Task(goal="count monads and count agents")))
    assert isinstance(outcome, Ok)
    assert [s.body for s in outcome.value.sections] == [
        "count monads has 12 letters in 2 words.",
        "count agents has 12 letters in 2 words.",
    ]


def test_meta_agent_command_line_offline() -> None:
    """``mcec run examples/meta/meta.mce solve`` with both models scripted: no network."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", "examples/meta/meta.mce", "solve",
         "--input", '{"goal": "monads and agents"}',
         "--model", "planner=py:examples.meta.planner:plan", "--model", "writer=py:examples.meta.writer:synthesize"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={k: v for k, v in __import__("os").environ.items() if not k.startswith("OPENAI")},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["value"]["headline"] == "Report on Monads, Agents"
    assert report["usage"]["requests"] == 3  # a rejected plan, the repaired one, the report


def test_resilient_briefing_retries_a_flaky_source_and_gives_up_on_a_slow_one(briefing: tuple[Any, Any],
                                                                             naps: Naps) -> None:
    """news fails once and is retried (the failed attempt's log line is kept: the retry ran on
    that state); weather takes 5 s and its timeout(0.5) turns it into a placeholder at once."""
    from examples.briefing.impl import BriefingState, Request

    program, module = briefing
    request = Request("Oslo", flaky=("news",), slow=("weather",))
    outcome = asyncio.run(module.resilient_briefing(BriefingState(), request))
    assert isinstance(outcome, Ok)
    assert outcome.value.degraded == ("weather",)
    assert outcome.state == BriefingState(log=("news failed once", "fetched news", "fetched stocks"), fetches=2)
    assert naps.cancelled == [5]  # the 5 s source was cut off, not waited for
    interpreted = asyncio.run(Interpreter(program).run("resilient_briefing", BriefingState(), request))
    assert interpreted == outcome


def _words(body: dict[str, Any]) -> int:
    """What the test server reports as a request's prompt tokens: the words of its messages."""
    from agentmonad.testing import estimate_tokens

    return sum(estimate_tokens(m["content"]) for m in body["messages"] if isinstance(m.get("content"), str))


def test_summarized_briefing_over_http(briefing: tuple[Any, Any], llm_server: LLMServer) -> None:
    """``briefing >>= summarize`` with the model on real HTTP (tests/llm_server.py answering
    with the example's writer): the reply is JSON of Summary's schema, validated into a
    Summary; the template saw the briefing and the state; compiled and interpreted agree."""
    from agentmonad.llm import llm_config, usage
    from examples.briefing.impl import BriefingState, Request, Summary
    from examples.briefing.writer import summarize

    program, module = briefing
    llm_server.respond_with(summarize)
    request = Request("Oslo", down=("stocks",))
    with llm_config(llm_server.config()), usage() as used:
        compiled = asyncio.run(module.summarized_briefing(BriefingState(), request))
        interpreted = asyncio.run(Interpreter(program).run("summarized_briefing", BriefingState(), request))
    assert compiled == Ok(
        Summary(
            headline="Oslo opens a new library",
            points=[
                "News: Oslo opens a new library; Local team wins",
                "Weather: Sunny in Oslo, 21°C",
                "Markets: (stocks unavailable)",
            ],
            missing=["stocks"],
        ),
        BriefingState(log=("fetched news", "fetched weather"), fetches=2),
    )
    assert interpreted == compiled
    assert len(llm_server.requests) == 2
    body = llm_server.requests[0].body
    assert body["model"] == "gpt-4o-mini" and "tools" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["required"] == ["headline", "points"]
    prompt = body["messages"][-1]["content"]
    assert "These sources were unavailable: stocks.\nSources fetched: 2." in prompt
    assert "Weather: Sunny in Oslo, 21°C" in prompt
    assert used.requests == 2 and used.prompt_tokens == 2 * _words(body)


def test_summarized_briefing_streams_typed_partials_over_http(briefing: tuple[Any, Any], llm_server: LLMServer) -> None:
    """``stream llm summarize`` (docs/language.md §14): observed, the run's events carry the
    summary as it arrives, each an instance of the generated ``SummaryPartial``, the last one
    the summary the run returns."""
    from agentmonad.events import PartialOutput
    from agentmonad.llm import llm_config
    from agentmonad.observe import observe
    from examples.briefing.impl import BriefingState, Request
    from examples.briefing.writer import summarize

    _, module = briefing
    llm_server.respond_with(summarize)

    async def main() -> tuple[list[Any], Any]:
        with llm_config(llm_server.config()):
            run = observe(lambda: module.summarized_briefing(BriefingState(), Request("Oslo")))
            partials = [e.value async for e in run if isinstance(e, PartialOutput)]
        return partials, run.outcome

    partials, outcome = asyncio.run(main())
    assert isinstance(outcome, Ok)
    assert len(partials) > 3 and all(type(p) is module.SummaryPartial for p in partials)
    assert partials[0].headline is None and partials[-1].model_dump() == outcome.value.model_dump()
    assert llm_server.requests[0].body["stream"] is True


def test_summarized_briefing_repairs_a_summary_that_does_not_validate(
    briefing: tuple[Any, Any], llm_server: LLMServer
) -> None:
    """A reply missing ``points`` is sent back with pydantic's errors; the second is valid."""
    import json

    from agentmonad.llm import llm_config
    from agentmonad.testing import text
    from examples.briefing.impl import BriefingState, Request
    from examples.briefing.writer import summarize

    _, module = briefing
    llm_server.script(text(json.dumps({"headline": "Oslo"}))).respond_with(summarize)
    with llm_config(llm_server.config()):
        outcome = asyncio.run(module.summarized_briefing(BriefingState(), Request("Oslo")))
    assert isinstance(outcome, Ok) and outcome.value.headline == "Oslo opens a new library"
    assert outcome.value.missing == []
    repair = llm_server.requests[1].body["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "points" in repair[-1]["content"] and "not valid" in repair[-1]["content"]


def test_summarized_briefing_fails_with_llm_failed_on_a_model_that_never_complies(
    briefing: tuple[Any, Any], llm_server: LLMServer
) -> None:
    from agentmonad.llm import LLMFailed, llm_config
    from examples.briefing.impl import BriefingState, Request

    _, module = briefing
    llm_server.script(*["Here is your summary: sunny."] * 3)
    with llm_config(llm_server.config()):
        outcome = asyncio.run(module.summarized_briefing(BriefingState(), Request("Oslo")))
    assert isinstance(outcome, Err) and isinstance(outcome.error, LLMFailed)
    assert (outcome.error.model, outcome.error.step) == ("writer", "summarize")
    assert outcome.error.raw == "Here is your summary: sunny."
    assert outcome.state.fetches == 3  # the briefing's state: the failure keeps it
    assert outcome.site is not None and outcome.site.step == "summarize"
    assert len(llm_server.requests) == 3


def test_summarized_briefing_command_line_offline() -> None:
    """``mcec run … --model writer=py:examples.briefing.writer:summarize``: no network, usage reported."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", "examples/briefing/briefing.mce", "summarized_briefing",
         "--input", '{"city": "Oslo"}', "--model", "writer=py:examples.briefing.writer:summarize"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["value"]["headline"] == "Oslo opens a new library" and report["value"]["missing"] == []
    assert report["state"]["fetches"] == 3
    assert report["usage"]["requests"] == 1 and report["usage"]["completion_tokens"] > 0
