"""End to end over real HTTP (docs/language.md §10): a spec with a `model` and an `llm` whose output
is a union, dispatched with `match` inside a `loop` under a `budget` — the ReAct shape —
compiled and interpreted against tests/llm_server.py with the real AsyncOpenAI client."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmonad import BudgetExceeded, Err, Ok
from agentmonad.llm import llm_config, usage
from agentmonad.testing import text, tool_call
from llm_react_impl import Chat
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile

TESTS = Path(__file__).resolve().parent

SPEC = '''\
from llm_react_impl import Chat, Turn, Answer, SearchArgs, CalcArgs
import llm_react_impl as impl

state Chat

model fast = openai "test-model"

llm decide : Turn -> Answer | SearchArgs | CalcArgs = fast """
Question: {{ question }}
{% for n in notes %}- {{ n }}
{% endfor %}"""

step ask     : str -> Turn = impl.ask
step observe : str -> Turn = impl.observe
fn search    : SearchArgs -> str = impl.search
fn calc      : CalcArgs -> str = impl.calc
fn final     : Answer -> str = impl.final

pipeline react : str -> str ! LLMFailed | LLMUnavailable | LoopExhausted | BudgetExceeded =
    ask >>= budget(BUDGET) loop(4) (decide >>= match {
        Answer     => final,
        SearchArgs => search >>= observe,
        CalcArgs   => calc >>= observe,
    });
'''


def react_replies() -> list[Any]:
    return [
        tool_call("SearchArgs", {"query": "monads"}, usage=(20, 5)),
        tool_call("CalcArgs", {"expression": "2+40"}, usage=(30, 5)),
        tool_call("Answer", {"text": "monads, and 42"}, usage=(40, 5)),
    ]


def compiled(tmp_path: Path, budget: int = 100_000) -> tuple[Any, Any]:
    spec = tmp_path / "react.mce"
    spec.write_text(SPEC.replace("BUDGET", str(budget)), encoding="utf-8")
    result = compile_source(SourceFile(str(spec), spec.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def test_react_compiled_and_interpreted_agree_over_http(llm_server: LLMServer, tmp_path: Path) -> None:
    program, module = compiled(tmp_path)
    outcomes, usages = [], []
    for run in (lambda: module.react(Chat(), "what is a monad"), lambda: interpret(program, "react", Chat(), "what is a monad")):
        llm_server.script(*react_replies())
        with llm_config(llm_server.config()), usage() as used:
            outcomes.append(asyncio.run(run()))
        usages.append(used.as_dict())
    compiled_out, interpreted_out = outcomes
    assert compiled_out == Ok(
        "Answer: monads, and 42",
        Chat("what is a monad", ("A monad sequences computations that carry context.", "42")),
    )
    assert interpreted_out == compiled_out
    assert usages[0] == usages[1]
    assert usages[0]["requests"] == 3 and usages[0]["prompt_tokens"] == 90 and usages[0]["completion_tokens"] == 15
    # the union was offered as a choice of functions, the template rendered with the turn's fields
    first, last = llm_server.requests[0].body, llm_server.requests[2].body
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["Answer", "CalcArgs", "SearchArgs"]
    assert first["messages"][-1]["content"] == "\nQuestion: what is a monad\n"
    assert "- 42" in last["messages"][-1]["content"]


def test_budget_stops_the_loop_over_http(llm_server: LLMServer, tmp_path: Path) -> None:
    program, module = compiled(tmp_path, budget=40)
    for run in (lambda: module.react(Chat(), "what is a monad"), lambda: interpret(program, "react", Chat(), "what is a monad")):
        llm_server.script(*react_replies())
        with llm_config(llm_server.config()):
            out = asyncio.run(run())
        assert isinstance(out, Err) and isinstance(out.error, BudgetExceeded), out
        assert out.error.limit == 40 and out.error.used > 40
        assert out.site is not None and out.site.step == "budget"


def test_endpoint_from_the_environment(llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No configuration object: the endpoint and key come from OPENAI_BASE_URL / OPENAI_API_KEY."""
    program, module = compiled(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    llm_server.script(tool_call("Answer", {"text": "hi"}))
    assert asyncio.run(module.react(Chat(), "q")) == Ok("Answer: hi", Chat("q"))
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-from-env"


def mcec_run(tmp_path: Path, *options: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    spec = tmp_path / "react.mce"
    spec.write_text(SPEC.replace("BUDGET", "100000"), encoding="utf-8")
    environment = {**os.environ, "PYTHONPATH": str(TESTS), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "mcec", "run", str(spec), "react", "--input", '"what is a monad"', *options],
        capture_output=True, text=True, timeout=120, env=environment, check=False,
    )


def test_mcec_run_with_a_scripted_model_prints_usage(tmp_path: Path) -> None:
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([
        {"tool": "SearchArgs", "arguments": {"query": "monads"}, "usage": [20, 5]},
        {"tool": "Answer", "arguments": {"text": "done"}, "usage": [30, 5]},
    ]), encoding="utf-8")
    done = mcec_run(tmp_path, "--model", f"fast=script:{replies}")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["value"] == "Answer: done"
    assert report["usage"]["requests"] == 2
    assert report["usage"]["prompt_tokens"] == 50 and report["usage"]["completion_tokens"] == 10


def test_mcec_run_model_option_over_http(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.script(tool_call("Answer", {"text": "over http"}))
    done = mcec_run(tmp_path, "--model", f"fast=served-model@{llm_server.url}", env={"OPENAI_API_KEY": "sk-x"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == "Answer: over http"
    assert llm_server.requests[0].body["model"] == "served-model"


def test_mcec_run_rejects_an_undeclared_model(tmp_path: Path) -> None:
    done = mcec_run(tmp_path, "--model", "fats=test")
    assert done.returncode == 2
    assert "declares no model `fats`; did you mean `fast`?" in done.stderr
    malformed = mcec_run(tmp_path, "--model", "fast")
    assert malformed.returncode == 2 and "NAME=VALUE" in malformed.stderr
