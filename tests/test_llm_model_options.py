"""Model options in declarations (docs/language.md §10), end to end over real HTTP: the options of
``model … (…)`` reach the request the real client sends (compiled and interpreted alike), the
endpoint and key variable come from the declaration, and a run's configuration still wins."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentmonad import Err, Ok
from agentmonad.llm import LLMConfig, LLMFailed, ModelSettings, llm_config
from agentmonad.testing import text, tool_call
from llm_react_impl import Chat
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile

SPEC = '''\
from llm_react_impl import Chat, Turn, Answer, SearchArgs
import llm_react_impl as impl

state Chat

model fast = openai "declared-model" (
    base_url="URL",
    api_key_env="MCEC_TEST_LOCAL_KEY",
    temperature=0.25,
    max_tokens=64,
    max_repairs=0,
    timeout=5,
    max_retries=0,
    system="Answer with one function call.",
)

llm decide : Turn -> Answer | SearchArgs = fast "Question: {{ question }}"
step ask   : str -> Turn = impl.ask
fn final   : Answer -> str = impl.final
fn search  : SearchArgs -> str = impl.search

pipeline one : str -> str ! LLMFailed | LLMUnavailable = ask >>= decide >>= match {
    Answer     => final,
    SearchArgs => search,
};
'''


def compiled(tmp_path: Path, server: LLMServer) -> tuple[Any, Any]:
    spec = tmp_path / "options.mce"
    spec.write_text(SPEC.replace("URL", server.url), encoding="utf-8")
    result = compile_source(SourceFile(str(spec), spec.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def test_declared_options_reach_the_request(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No run configuration at all: the endpoint, the key (from the variable the declaration
    names), the body options and the system message all come from the declaration."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MCEC_TEST_LOCAL_KEY", "sk-local-1234")
    program, module = compiled(tmp_path, llm_server)
    llm_server.script(tool_call("Answer", {"text": "compiled"}), tool_call("Answer", {"text": "interpreted"}))
    assert asyncio.run(module.one(Chat(), "q")) == Ok("Answer: compiled", Chat("q"))
    assert asyncio.run(interpret(program, "one", Chat(), "q")) == Ok("Answer: interpreted", Chat("q"))
    for recorded in llm_server.requests:
        body = recorded.body
        assert body["model"] == "declared-model"
        assert (body["temperature"], body["max_tokens"]) == (0.25, 64)
        assert body["messages"][0] == {"role": "system", "content": "Answer with one function call."}
        assert body["messages"][1]["content"] == "Question: q"
        assert recorded.headers["authorization"] == "Bearer sk-local-1234"


def test_max_repairs_zero_fails_at_the_first_invalid_reply(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCEC_TEST_LOCAL_KEY", "sk-local-1234")
    _, module = compiled(tmp_path, llm_server)
    llm_server.script(text("no function call"), tool_call("Answer", {"text": "never asked"}))
    outcome = asyncio.run(module.one(Chat(), "q"))
    assert isinstance(outcome, Err) and isinstance(outcome.error, LLMFailed)
    assert "after 1 attempt" in outcome.error.reason
    assert len(llm_server.requests) == 1 and llm_server.pending == 1


def test_a_run_configuration_overrides_the_declared_options(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCEC_TEST_LOCAL_KEY", raising=False)
    program, module = compiled(tmp_path, llm_server)
    llm_server.script(tool_call("SearchArgs", {"query": "monads"}))
    config = LLMConfig(models={"fast": ModelSettings(temperature=0.9, model_id="run-model", api_key="sk-run")})
    with llm_config(config):
        outcome = asyncio.run(module.one(Chat(), "q"))
    assert outcome == Ok("A monad sequences computations that carry context.", Chat("q"))
    body = llm_server.requests[0].body
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("run-model", 0.9, 64)
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-run"
