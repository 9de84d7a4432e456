"""The research example end to end, on its real MCP server (examples/research/search_server.py).

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
from agentmonad.tools import tool_scope
from examples.research.impl import AddArgs, AgentState, SearchArgs
from examples.research import impl
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
    result = compile_source(SourceFile("research.mce", SPEC.read_text(encoding="utf-8")))
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
    result = compile_source(SourceFile("research.mce", SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def test_react_loops_over_the_tools_until_the_model_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tool calls on the real server (a search, an add), then the answer: the loop went
    round twice and ended on the Answer arm; compiled and interpreted agree on value and state."""
    program, module = _compiled(monkeypatch)
    question = "what is a monad and 2 plus 40"

    async def both() -> tuple[Any, Any]:
        async with tool_scope():
            return (
                await module.react(AgentState(), question),
                await interpret(program, "react", AgentState(), question),
            )

    compiled, interpreted = asyncio.run(both())
    assert compiled == Ok(f"Answer: {question} -> {MONAD} | 42", compiled.state)
    assert compiled.state.observations == (MONAD, "42")
    assert compiled.state.decisions == 3  # search, add, answer
    assert interpreted == compiled
    assert search_servers() == []


def test_react_retries_a_busy_model_and_keeps_the_failed_attempts_state(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmonad.control import fake_retry_clock

    program, module = _compiled(monkeypatch)
    with fake_retry_clock(jitter=1.0) as pauses:
        outcome = asyncio.run(module.react(AgentState(), "busy what is mcp"))
    assert isinstance(outcome, Ok) and "Model Context Protocol" in outcome.value
    assert outcome.state.decisions == 3  # the busy attempt, its retry (a search), the answer
    assert pauses == [0.1]  # one pause, of `backoff=0.1` before the second attempt


def test_react_gives_up_after_its_bound_with_loop_exhausted(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmonad import LoopExhausted

    program, module = _compiled(monkeypatch)
    question = " and ".join(f"{n} plus 1" for n in range(7))  # seven tool calls: more than loop(6) allows
    outcome = asyncio.run(module.react(AgentState(), question))
    assert isinstance(outcome, Err) and isinstance(outcome.error, LoopExhausted)
    assert outcome.error.iterations == 6
    assert outcome.state.observations == tuple(str(n + 1) for n in range(6))
    assert outcome.site is not None and outcome.site.step == "loop"
    interpreted = asyncio.run(interpret(program, "react", AgentState(), question))
    assert isinstance(interpreted, Err) and isinstance(interpreted.error, LoopExhausted)
    assert (interpreted.state, interpreted.site) == (outcome.state, outcome.site)
