"""The research example end to end, on its real MCP server (examples/research/search_server.py)
and, for the ReAct agent's ``llm decide``, over real HTTP (tests/llm_server.py answering with
the example's scripted planner, examples/research/planner.py).

In-process runs share one server through an explicit ``tool_scope()`` (and the
test checks that exactly one server process served them all, then none is
left); the command line is run as ``mcec run`` subprocesses from the repo root.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmonad import Err, Ok, ToolUnavailable, ToolUnavailableKind
from agentmonad.llm import BudgetExceeded, LLMConfig, LLMFailed, llm_config, usage
from agentmonad.testing import estimate_tokens, status, tool_call
from agentmonad.tools import tool_scope
from examples.research.impl import AddArgs, AgentState, SearchArgs
from examples.research import impl
from examples.research.planner import plan
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "research" / "research.mce"
MONAD = "A monad sequences computations that carry context: state, errors, effects."


def search_servers() -> list[int]:
    """Our child processes running the research example's server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if b"examples.research.search_server" in cmdline and int(stat[1]) == os.getpid() and stat[0] != "Z":
            found.append(int(entry.name))
    return found


def test_research_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the server's command is relative to the repo root
    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    program, module = result.program, load_module(result.program, result.generated)
    # the planner's calls and the typed tools must reach the same server
    assert module.search == impl.SEARCH_SERVER

    synthesized: list[object] = []
    real_synthesize = module.synthesize

    def spy(state: AgentState, value: Any) -> Any:
        synthesized.append(value)
        return real_synthesize(state, value)

    monkeypatch.setattr(module, "synthesize", spy)
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with tool_scope():
            seen["ok"] = await module.answer(AgentState(), "what is a monad")
            seen["ok_interpreted"] = await interpret(program, "answer", AgentState(), "what is a monad")
            synthesized.clear()
            seen["guess"] = await module.answer(AgentState(), "please guess")
            seen["guess_synthesized"] = list(synthesized)
            seen["guess_interpreted"] = await interpret(
                program, "answer", AgentState(), "please guess", overrides={"synthesize": spy}
            )
            seen["guess_synthesized"] += synthesized
            seen["all"] = await module.answer_all(AgentState(), ["what is mcp", "2 plus 40", "tell me about cats"])
            seen["all_guess"] = await module.answer_all(AgentState(), ["what is mcp", "guess again"])
            seen["lookup"] = await module.lookup(AgentState(), SearchArgs(query="monad"))
            seen["sum"] = await module.sum(AgentState(), AddArgs(a=2, b=40))
            seen["servers"] = search_servers()

    asyncio.run(main())
    assert len(seen["servers"]) == 1  # every call of the scope, concurrent ones too, shared it
    assert search_servers() == []

    ok = seen["ok"]
    assert ok == Ok(
        f"Answer: what is a monad -> {MONAD}",
        AgentState(question="what is a monad", history=("plan: search", "tool: search", "synthesize"), tool_calls=1),
    )
    assert seen["ok_interpreted"] == ok

    guess = seen["guess"]
    assert isinstance(guess, Err) and guess.error == ToolUnavailable(
        "search", "guess", "the server has no tool 'guess' (it lists: add, search)", ToolUnavailableKind.UNKNOWN_TOOL
    )
    # the state at the failure: planned, no tool ran; synthesize never ran
    assert guess.state == AgentState(question="please guess", history=("plan: guess",), tool_calls=0)
    assert guess.site is not None and guess.site.step == "execute_tool"
    assert seen["guess_synthesized"] == []  # neither compiled nor interpreted
    assert seen["guess_interpreted"] == guess

    assert seen["all"] == Ok(
        [
            "Answer: what is mcp -> The Model Context Protocol connects agents to tools over JSON-RPC.",
            "Answer: 2 plus 40 -> 42",
            "Answer: tell me about cats -> No results for 'tell me about cats'.",
        ],
        AgentState(),  # `local`: each sub-run's state changes stay inside it
    )
    assert isinstance(seen["all_guess"], Err) and seen["all_guess"].error.tool == "guess"
    assert seen["lookup"] == Ok(MONAD, AgentState())
    assert seen["sum"] == Ok(42, AgentState())


def mcec_run(question: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcec", "run", "examples/research/research.mce", "answer", "--input", json.dumps(question)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_research_command_line() -> None:
    """``mcec run`` from the repo root: an Ok (exit 0) and the guess path's Err (exit 1)."""
    runs = [mcec_run("what is a monad"), mcec_run("please guess")]  # side by side: each starts a server
    (ok_out, ok_err), (guess_out, guess_err) = (run.communicate(timeout=180) for run in runs)
    assert runs[0].returncode == 0, ok_err
    assert json.loads(ok_out)["value"] == f"Answer: what is a monad -> {MONAD}"
    assert runs[1].returncode == 1, guess_err
    report = json.loads(guess_out)
    assert report["ok"] is False and report["error"]["type"] == "ToolUnavailable"
    assert report["error"]["fields"]["tool"] == "guess"
    assert report["state"]["history"] == ["plan: guess"]
    assert "Traceback" not in ok_err + guess_err


def _compiled(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    monkeypatch.chdir(ROOT)
    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


QUESTION = "what is a monad and 2 plus 40"


def _react(program: Any, module: Any, question: str, config: LLMConfig) -> tuple[Any, Any, dict[str, int]]:
    """``react`` compiled and interpreted in one tool scope, under ``config``: both outcomes and the usage."""

    async def both() -> tuple[Any, Any]:
        async with tool_scope():
            return (
                await module.react(AgentState(), question),
                await interpret(program, "react", AgentState(), question),
            )

    with llm_config(config), usage() as used:
        compiled, interpreted = asyncio.run(both())
    return compiled, interpreted, used.as_dict()


def _words(body: dict[str, Any]) -> int:
    """What the test server reports as a request's prompt tokens: the words of its messages."""
    return sum(estimate_tokens(m["content"]) for m in body["messages"] if isinstance(m.get("content"), str))


def test_react_decides_over_http_with_the_tools_on_the_mcp_server(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ReAct agent of the README: the ``decide`` llm step over real HTTP (the example's
    planner answering from the local server), the tools on the real MCP server. Two tool
    calls (a search, an add), then the answer built from what the tools returned; compiled
    and interpreted agree on value, state and usage."""
    program, module = _compiled(monkeypatch)
    llm_server.respond_with(plan)
    compiled, interpreted, used = _react(program, module, QUESTION, llm_server.config())
    assert compiled == Ok(
        f"Answer: {QUESTION} -> {MONAD} | 42",
        AgentState(
            question=QUESTION,
            history=(f"observe: {MONAD}", "observe: 42"),
            tool_calls=2,
            observations=(MONAD, "42"),
        ),
    )
    assert interpreted == compiled
    assert search_servers() == []
    bodies = [r.body for r in llm_server.requests]
    assert len(bodies) == 6  # three decisions per run: search, add, answer
    assert bodies[:3] == bodies[3:]
    first, second, third = bodies[:3]
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["AddArgs", "Answer", "SearchArgs"]
    assert (first["model"], first["temperature"]) == ("gpt-4o-mini", 0.0)  # the declaration's option
    assert first["messages"][-1]["content"].endswith(f"Question: {QUESTION}\n")
    assert "Observation" not in first["messages"][-1]["content"]
    assert second["messages"][-1]["content"].endswith(f"Observation 1: {MONAD}")
    assert third["messages"][-1]["content"].endswith(f"Observation 1: {MONAD}\nObservation 2: 42")
    prompt = sum(_words(b) for b in bodies[:3])
    assert used["requests"] == 6 and used["prompt_tokens"] == 2 * prompt
    assert used["total_tokens"] == used["prompt_tokens"] + used["completion_tokens"] > used["prompt_tokens"]


def test_react_asks_an_unavailable_model_again(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 503 (the client's own retries off) is ``LLMUnavailable``: ``retry(3, on=LLMUnavailable,
    backoff=0.1)`` asks again after one pause, and the run goes on."""
    from agentmonad.control import fake_retry_clock

    program, module = _compiled(monkeypatch)
    llm_server.script(status(503, "overloaded")).respond_with(plan)
    with fake_retry_clock(jitter=1.0) as pauses, llm_config(llm_server.config()), usage() as used:
        outcome = asyncio.run(module.react(AgentState(), "what is mcp"))
    assert isinstance(outcome, Ok) and "Model Context Protocol" in outcome.value
    assert [r.outcome for r in llm_server.requests] == [503, 200, 200]
    assert pauses == [0.1]
    assert used.requests == 2  # the 503 brought no answer, so no usage


def test_react_gives_up_after_its_bound_with_loop_exhausted(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentmonad import LoopExhausted

    program, module = _compiled(monkeypatch)
    llm_server.respond_with(plan)
    question = " and ".join(f"{n} plus 1" for n in range(7))  # seven tool calls: more than loop(6) allows
    compiled, interpreted, used = _react(program, module, question, llm_server.config())
    assert isinstance(compiled, Err) and isinstance(compiled.error, LoopExhausted)
    assert compiled.error.iterations == 6
    assert compiled.state.observations == tuple(str(n + 1) for n in range(6))
    assert compiled.site is not None and compiled.site.step == "loop"
    assert isinstance(interpreted, Err) and isinstance(interpreted.error, LoopExhausted)
    assert (interpreted.state, interpreted.site) == (compiled.state, compiled.site)
    assert used["requests"] == 12


def test_react_stops_when_the_model_spends_its_budget(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``budget(20000)``: a model reporting 15000 then 6000 tokens passes it at the second
    decision, before its tool runs."""
    program, module = _compiled(monkeypatch)
    llm_server.script(
        tool_call("SearchArgs", {"query": "what is a monad"}, usage=(15000, 0)),
        tool_call("AddArgs", {"a": 2, "b": 40}, usage=(6000, 0)),
    )
    with llm_config(llm_server.config()), usage() as used:
        outcome = asyncio.run(module.react(AgentState(), QUESTION))
    assert isinstance(outcome, Err) and outcome.error == BudgetExceeded(20000, 21000)
    assert outcome.site is not None and outcome.site.step == "budget"
    assert outcome.state.observations == (MONAD,)  # the state after the last completed step
    assert used.total_tokens == 21000
    assert search_servers() == []


def test_react_fails_with_llm_failed_when_the_model_never_chooses(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Text instead of a function call does not validate: sent back twice, then ``LLMFailed``
    with the raw reply; no tool ran."""
    program, module = _compiled(monkeypatch)
    llm_server.script(*["I think it is about monads."] * 3)
    with llm_config(llm_server.config()):
        outcome = asyncio.run(module.react(AgentState(), QUESTION))
    assert isinstance(outcome, Err) and isinstance(outcome.error, LLMFailed)
    assert outcome.error.step == "decide" and outcome.error.raw == "I think it is about monads."
    assert outcome.state == AgentState(question=QUESTION)
    assert len(llm_server.requests) == 3 and llm_server.pending == 0
    assert "not valid" in llm_server.requests[2].body["messages"][-1]["content"]


def test_react_command_line_with_the_model_over_http(llm_server: LLMServer) -> None:
    """``mcec run … react --model planner=MODEL_ID@URL``: the report carries value, state and usage."""
    llm_server.respond_with(plan)
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", str(SPEC), "react", "--input", json.dumps("what is mcp"),
         "--model", f"planner=served-model@{llm_server.url}"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-research"},
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    mcp_fact = "The Model Context Protocol connects agents to tools over JSON-RPC."
    assert report["value"] == f"Answer: what is mcp -> {mcp_fact}"
    assert report["state"]["observations"] == [mcp_fact]
    assert report["usage"]["requests"] == 2
    assert [r.body["model"] for r in llm_server.requests] == ["served-model", "served-model"]
    assert "sk-test-research" not in done.stdout + done.stderr
