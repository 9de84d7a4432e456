"""LLM steps over real HTTP: the real ``AsyncOpenAI`` client against ``tests/llm_server.py``.

Nothing of the client is mocked: each test starts the OpenAI-compatible test
server on 127.0.0.1, scripts its replies (and statuses, delays, hang-ups),
and checks both what the step returned and what the server received.
"""

from __future__ import annotations

import asyncio
import pickle
import socket
import traceback
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentmonad import Defect, Err, Ok, Site, compiled
from agentmonad.llm import (
    BudgetExceeded,
    LLMConfig,
    LLMFailed,
    LLMFailedKind,
    LLMUnavailable,
    LLMUnavailableKind,
    Model,
    ModelSettings,
    budget,
    llm_scope,
    llm_step,
    usage,
)
from agentmonad.llm import openai_backend
from agentmonad.testing import hangup, refusal, status, text, tool_call
from llm_server import TEST_KEY, LLMServer, llm_server  # noqa: F401  (the fixture)

T = TypeVar("T")


class Answer(BaseModel):
    text: str


class SearchArgs(BaseModel):
    """Search the knowledge base."""

    query: str
    limit: int = 5


@dataclass
class CalcArgs:
    expression: str


class Ticket(BaseModel):
    subject: str
    body: str


@dataclass(frozen=True)
class Chat:
    turns: int = 0


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def leftover_tasks() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]


async def call(server: LLMServer, step: Any, value: Any, state: Any = None, **settings: Any) -> Any:
    async with llm_scope(server.config(**settings)):
        return await step(state, value)


FAST = Model("fast", "gpt-test")
TICKET = Ticket(subject="printer", body="it is on fire")


# ---------------------------------------------------------------- every output kind


def test_text_output_sends_the_rendered_prompt(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "Subject: {{ subject }}\n{{ body }}\nturn {{ state.turns }}", str, name="summarise")
    llm_server.script(text("a fire"))
    out = run(call(llm_server, step, TICKET, Chat(3)))
    assert out == Ok("a fire", Chat(3))
    body = llm_server.requests[0].body
    assert body["model"] == "gpt-test"
    assert body["messages"] == [{"role": "user", "content": "Subject: printer\nit is on fire\nturn 3"}]
    assert "tools" not in body and "response_format" not in body
    assert llm_server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"


def test_pydantic_output_is_structured_output(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", SearchArgs, name="plan")
    llm_server.script(text('{"query": "printers", "limit": 2}'))
    out = run(call(llm_server, step, TICKET))
    assert out == Ok(SearchArgs(query="printers", limit=2), None)
    fmt = llm_server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "SearchArgs"
    assert fmt["json_schema"]["schema"] == SearchArgs.model_json_schema()


def test_dataclass_output_and_fenced_json(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", CalcArgs, name="calc")
    llm_server.script(text('```json\n{"expression": "1+2"}\n```'))
    assert run(call(llm_server, step, TICKET)) == Ok(CalcArgs("1+2"), None)
    assert llm_server.requests[0].body["response_format"]["json_schema"]["name"] == "CalcArgs"


def test_union_output_is_a_choice_of_functions(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", Answer | SearchArgs | CalcArgs, name="decide")
    llm_server.script(
        tool_call("SearchArgs", {"query": "fire"}),
        tool_call("CalcArgs", {"expression": "6*7"}),
        tool_call("Answer", Answer(text="call the fire brigade")),
    )

    async def three() -> list[Any]:
        async with llm_scope(llm_server.config()):
            return [(await step(None, TICKET)) for _ in range(3)]

    outs = run(three())
    assert [o.value for o in outs] == [SearchArgs(query="fire"), CalcArgs("6*7"), Answer(text="call the fire brigade")]
    body = llm_server.requests[0].body
    assert body["tool_choice"] == "required"
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["Answer", "SearchArgs", "CalcArgs"]
    search = body["tools"][1]["function"]
    assert search["description"] == "Search the knowledge base."
    assert search["parameters"] == SearchArgs.model_json_schema()
    assert "response_format" not in body


def test_union_with_str_lets_the_model_answer_in_text(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", SearchArgs | str, name="route")
    llm_server.script(text("just answer"), tool_call("SearchArgs", {"query": "q"}))

    async def two() -> list[Any]:
        async with llm_scope(llm_server.config()):
            return [(await step(None, TICKET)).value for _ in range(2)]

    assert run(two()) == ["just answer", SearchArgs(query="q")]
    assert llm_server.requests[0].body["tool_choice"] == "auto"


def test_literal_output_is_one_of_its_values(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", Literal["billing", "hardware", 3], name="classify")
    llm_server.script(text('{"value": "hardware"}'), text("billing"), text("3"))

    async def three() -> list[Any]:
        async with llm_scope(llm_server.config()):
            return [(await step(None, TICKET)).value for _ in range(3)]

    assert run(three()) == ["hardware", "billing", 3]
    schema = llm_server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["value"]["enum"] == ["billing", "hardware", 3]
    assert schema["required"] == ["value"]


def test_other_value_types(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ value }}", list[int], name="numbers")
    llm_server.script(text('{"value": [1, 2, 3]}'))
    assert run(call(llm_server, step, "count")) == Ok([1, 2, 3], None)


# ---------------------------------------------------------------- repairs and refusals


def test_an_invalid_reply_is_repaired(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", SearchArgs, name="plan")
    llm_server.script(text('{"limit": "many"}'), text('{"query": "fire"}'))
    assert run(call(llm_server, step, TICKET)) == Ok(SearchArgs(query="fire"), None)
    assert len(llm_server.requests) == 2
    second = llm_server.requests[1].body["messages"]
    assert second[0] == {"role": "user", "content": "printer"}
    assert second[1] == {"role": "assistant", "content": '{"limit": "many"}'}
    assert second[2]["role"] == "user"
    feedback = second[2]["content"]
    assert "query: Field required" in feedback and "limit: Input should be a valid integer" in feedback
    assert llm_server.requests[1].request.attempt == 2


def test_an_invalid_function_call_is_repaired_with_a_tool_message(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", Answer | SearchArgs, name="decide")
    llm_server.script(tool_call("SearchArgs", {"limit": 3}, id="call_a"), tool_call("Nope", {}), tool_call("Answer", {"text": "ok"}))
    assert run(call(llm_server, step, TICKET)) == Ok(Answer(text="ok"), None)
    second = llm_server.requests[1].body["messages"]
    assert second[1]["role"] == "assistant"
    assert second[1]["tool_calls"][0]["id"] == "call_a"
    assert second[2]["role"] == "tool" and second[2]["tool_call_id"] == "call_a"
    assert "query: Field required" in second[2]["content"]
    third = llm_server.requests[2].body["messages"]
    assert "there is no function 'Nope'" in third[-1]["content"]


def test_repairs_exhausted_is_llm_failed_with_the_raw_reply_and_errors(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", SearchArgs, name="plan")
    llm_server.script(text("no idea"), text("{}"), text('{"query": 5}'))
    out = run(call(llm_server, step, TICKET))
    assert isinstance(out, Err) and isinstance(out.error, LLMFailed)
    error = out.error
    assert (error.model, error.step, error.kind) == ("fast", "plan", LLMFailedKind.INVALID_OUTPUT)
    assert error.raw == '{"query": 5}'
    assert error.errors == ("query: Input should be a valid string [type=string_type, input=5]",)
    assert "after 3 attempts" in error.reason
    assert len(llm_server.requests) == 3  # one request and the default two repairs


def test_max_repairs_is_the_models_setting(llm_server: LLMServer) -> None:
    step = llm_step(Model("fast", "m", max_repairs=0), "{{ subject }}", SearchArgs, name="plan")
    llm_server.script(text("{}"))
    out = run(call(llm_server, step, TICKET))
    assert isinstance(out.error, LLMFailed) and "after 1 attempt" in out.error.reason
    llm_server.script(text("{}"), text("{}"), text("{}"), text("{}"), text('{"query": "x"}'))
    assert run(call(llm_server, step, TICKET, max_repairs=4)) == Ok(SearchArgs(query="x"), None)


def test_a_refusal_is_llm_failed_without_repairs(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", SearchArgs, name="plan")
    llm_server.script(refusal("I won't"))
    out = run(call(llm_server, step, TICKET))
    assert out == Err(LLMFailed("fast", "plan", "the model refused: I won't", "I won't", (), LLMFailedKind.REFUSED), None)
    assert len(llm_server.requests) == 1


# ---------------------------------------------------------------- unavailable


@pytest.mark.parametrize(
    ("code", "kind"),
    [(429, LLMUnavailableKind.RATE_LIMITED), (500, LLMUnavailableKind.SERVER_ERROR), (503, LLMUnavailableKind.SERVER_ERROR)],
)
def test_429_and_5xx_after_the_clients_retries(llm_server: LLMServer, code: int, kind: LLMUnavailableKind) -> None:
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(status(code, "busy"), status(code, "busy"), status(code, "still busy"))
    out = run(call(llm_server, step, TICKET, max_retries=2))
    assert out == Err(LLMUnavailable("fast", "summarise", f"HTTP {code}: still busy", kind, code), None)
    assert len(llm_server.requests) == 3  # the first try and the client's two retries
    assert [r.headers["x-stainless-retry-count"] for r in llm_server.requests] == ["0", "1", "2"]


def test_the_clients_retry_recovers(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(status(503), status(429), text("fine"))
    assert run(call(llm_server, step, TICKET, max_retries=2)) == Ok("fine", None)


def test_other_statuses_are_rejected_without_retries(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(status(404, "no such model"))
    out = run(call(llm_server, step, TICKET, max_retries=2))
    assert isinstance(out.error, LLMUnavailable)
    assert (out.error.kind, out.error.status, out.error.reason) == (LLMUnavailableKind.REJECTED, 404, "HTTP 404: no such model")
    assert len(llm_server.requests) == 1


def test_a_timeout_is_llm_unavailable(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(text("late", delay=5))
    out = run(call(llm_server, step, TICKET, timeout=0.3))
    assert isinstance(out.error, LLMUnavailable) and out.error.kind is LLMUnavailableKind.TIMEOUT
    assert "no answer within 0.3s" in out.error.reason
    llm_server.wait_until(lambda: llm_server.disconnects == 1)


def test_the_model_timeout_comes_from_the_environment(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCEC_LLM_TIMEOUT", "0.3")
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(text("late", delay=5))
    config = LLMConfig(models={"fast": ModelSettings(base_url=llm_server.url, api_key=TEST_KEY, max_retries=0)})

    async def go() -> Any:
        async with llm_scope(config):
            return await step(None, TICKET)

    out = run(go())
    assert isinstance(out.error, LLMUnavailable) and out.error.kind is LLMUnavailableKind.TIMEOUT


def test_a_broken_connection_and_a_closed_port(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(hangup())
    out = run(call(llm_server, step, TICKET))
    assert isinstance(out.error, LLMUnavailable) and out.error.kind is LLMUnavailableKind.CONNECTION_FAILED

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = LLMConfig(models={"*": ModelSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key=TEST_KEY, max_retries=0)})

    async def go() -> Any:
        async with llm_scope(config):
            return await step(None, TICKET)

    out = run(go())
    assert isinstance(out.error, LLMUnavailable) and out.error.kind is LLMUnavailableKind.CONNECTION_FAILED
    assert f"127.0.0.1:{port}" in out.error.reason


# ---------------------------------------------------------------- cancellation and clients


class Clients:
    """Every backend (client) made while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[openai_backend.OpenAIBackend] = []
        original = openai_backend.OpenAIBackend.__init__

        def spy(backend: openai_backend.OpenAIBackend, settings: Any) -> None:
            original(backend, settings)
            self.made.append(backend)

        monkeypatch.setattr(openai_backend.OpenAIBackend, "__init__", spy)

    def all_closed(self) -> bool:
        return bool(self.made) and all(b.client.is_closed() for b in self.made)


def test_cancelling_an_in_flight_call(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clients = Clients(monkeypatch)
    step = llm_step(FAST, "{{ subject }}", str, name="summarise")
    llm_server.script(text("late", delay=30))

    async def main() -> tuple[bool, set[asyncio.Task[Any]]]:
        task = asyncio.create_task(call(llm_server, step, TICKET))
        await llm_server.until(lambda: len(llm_server.requests) == 1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            cancelled = True
        else:
            cancelled = False
        return cancelled, leftover_tasks()

    cancelled, leftover = run(main())
    assert cancelled and not leftover
    llm_server.wait_until(lambda: llm_server.disconnects == 1 and llm_server.open_connections == 0)
    assert clients.all_closed()


def test_one_client_per_model_closed_on_success_and_failure(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clients = Clients(monkeypatch)
    fast, slow = Model("fast", "a"), Model("slow", "b")
    a = llm_step(fast, "{{ value }}", str, name="a")
    b = llm_step(slow, "{{ value }}", str, name="b")

    async def several() -> list[Any]:
        async with llm_scope(llm_server.config()):
            outs = [await a(None, "x"), await b(None, "y")]
            async with llm_scope():  # nested: a no-op, the same clients
                outs += [await a(None, "z"), await b(None, "w")]
            assert not any(c.client.is_closed() for c in clients.made)
            return outs

    outs = run(several())
    assert all(isinstance(o, Ok) for o in outs)
    assert len(clients.made) == 2 and clients.all_closed()
    assert {c.settings.name for c in clients.made} == {"fast", "slow"}
    llm_server.wait_until(lambda: llm_server.open_connections == 0)

    clients.made.clear()

    class Boom(Exception):
        pass

    async def failing() -> None:
        async with llm_scope(llm_server.config()):
            await a(None, "x")
            raise Boom

    with pytest.raises(Boom):
        run(failing())
    assert len(clients.made) == 1 and clients.all_closed()


def test_outside_a_scope_a_call_gets_a_scope_of_its_own(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clients = Clients(monkeypatch)
    step = llm_step(llm_server.model(), "{{ value }}", str, name="a")
    assert run(step(None, "x")) == Ok("test answer", None)
    assert clients.all_closed()
    # a model declared on the server sends a placeholder key, not the environment's
    assert llm_server.requests[0].headers["authorization"] == "Bearer not-needed"


# ---------------------------------------------------------------- configuration and secrets


def test_endpoint_and_key_come_from_the_environment(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    step = llm_step(FAST, "{{ value }}", str, name="a")
    assert run(step(None, "x")) == Ok("test answer", None)
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-from-the-environment"
    monkeypatch.setenv("TEAM_KEY", "sk-team")
    step2 = llm_step(Model("fast", "gpt-test", api_key_env="TEAM_KEY"), "{{ value }}", str, name="b")
    assert run(step2(None, "x")) == Ok("test answer", None)
    assert llm_server.requests[1].headers["authorization"] == "Bearer sk-team"


def test_no_key_for_openai_itself_is_misconfigured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    step = llm_step(FAST, "{{ value }}", str, name="a")
    out = run(step(None, "x"))
    assert isinstance(out.error, LLMUnavailable) and out.error.kind is LLMUnavailableKind.MISCONFIGURED
    assert "OPENAI_API_KEY" in out.error.reason


def test_run_configuration_overrides_the_declaration(llm_server: LLMServer) -> None:
    declared = Model("fast", "gpt-declared", base_url="http://127.0.0.1:9/v1", temperature=0.7, params={"seed": 1})
    step = llm_step(declared, "{{ value }}", str, name="a")
    config = LLMConfig(
        defaults=ModelSettings(temperature=0.1),
        models={"fast": ModelSettings(model_id="gpt-override", base_url=llm_server.url, api_key=TEST_KEY, params={"top_p": 0.5})},
    )

    async def go() -> Any:
        async with llm_scope(config):
            return await step(None, "x")

    assert run(go()) == Ok("test answer", None)
    body = llm_server.requests[0].body
    assert (body["model"], body["temperature"], body["seed"], body["top_p"]) == ("gpt-override", 0.1, 1, 0.5)


def test_the_system_message_and_unknown_params_reach_the_endpoint(llm_server: LLMServer) -> None:
    step = llm_step(Model("fast", "m", system="Be terse.", params={"custom_flag": True}), "{{ value }}", str, name="a")
    assert run(call(llm_server, step, "x")) == Ok("test answer", None)
    body = llm_server.requests[0].body
    assert body["messages"][0] == {"role": "system", "content": "Be terse."}
    assert body["custom_flag"] is True


def _texts(*things: object) -> str:
    parts = []
    for thing in things:
        parts += [str(thing), repr(thing)]
        if isinstance(thing, BaseException):
            parts.append("".join(traceback.format_exception(thing)))
        try:
            parts.append(repr(pickle.loads(pickle.dumps(thing))))
        except Exception:
            pass
    return "\n".join(parts)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=8, max_size=40))
def test_secrets_appear_in_no_message(llm_server: LLMServer, key: str) -> None:
    key = "sk-" + key
    settings_ = ModelSettings(base_url=llm_server.url, api_key=key, max_retries=0)
    config = LLMConfig(models={"fast": settings_})
    plain = llm_step(FAST, "{{ value }}", str, name="a")
    typed = llm_step(FAST, "{{ value }}", SearchArgs, name="b")
    # an endpoint that echoes the key in its error, and a model that repeats it
    llm_server.script(status(401, f"invalid api key {key}"), text(f"my key is {key}"), text(f"{{\"x\": \"{key}\"}}"), text(key))

    async def go() -> list[Any]:
        async with llm_scope(config) as run_:
            outs = [await plain(None, "x"), await typed(None, "y")]
            return [*outs, run_]

    first, second, run_ = run(go())
    assert isinstance(first.error, LLMUnavailable) and isinstance(second.error, LLMFailed)
    defect = Defect(Site("a", "t.mce", 1, 1), None, first.error)
    shown = _texts(first, second, first.error, second.error, defect, config, settings_, FAST, run_, plain)
    assert key not in shown
    assert "***" in first.error.reason and "***" in second.error.raw
    assert llm_server.requests[-1].headers["authorization"] == f"Bearer {key}"  # the key did go where it belongs


# ---------------------------------------------------------------- usage and budgets


def test_usage_adds_up_across_calls_and_concurrent_branches(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ value }}", str, name="a")
    llm_server.respond_with(lambda request: text("ok", usage=(10, 2), delay=0.05))

    async def branch(state: None, value: str) -> Any:
        return await step(state, value)

    async def go() -> Any:
        async with llm_scope(llm_server.config()) as run_:
            assert await step(None, "one") == Ok("ok", None)
            out = await compiled.each(None, [f"q{i}" for i in range(20)], branch, None, Site("each", "t.mce", 1, 1))
            assert isinstance(out, Ok) and out.value == ["ok"] * 20
            group = compiled.group(branch).also(branch).also(branch)
            assert isinstance(await group.run(None, "p", Site("par", "t.mce", 2, 1)), Ok)
            return run_.usage

    with usage() as outer:
        used = run(go())
    assert (used.requests, used.prompt_tokens, used.completion_tokens, used.total_tokens) == (24, 240, 48, 288)
    assert used.by_model()["fast"].total_tokens == 288
    assert outer.as_dict() == used.as_dict()
    assert llm_server.connections > 1  # concurrent calls did overlap


def test_a_budget_cancels_the_calls_in_flight(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ value }}", str, name="a")

    async def respond(request: Any) -> Any:
        if request.prompt == "slow":
            return text("slow", delay=30)
        if request.prompt == "trigger":  # answers once the three slow calls are in flight
            await llm_server.until(lambda: sum(r.request.prompt == "slow" for r in llm_server.requests) == 3)
        return text("ok", usage=(300, 0))

    llm_server.respond_with(respond)

    async def branch(state: None, value: str) -> Any:
        return await step(state, value)

    async def trigger(state: None, value: str) -> Any:
        return await step(state, "trigger")

    async def go() -> tuple[Any, Any, set[asyncio.Task[Any]]]:
        async with llm_scope(llm_server.config()) as run_:
            assert await step(None, "quick") == Ok("ok", None)  # 300 tokens, outside the budget
            try:
                async with budget(500) as b:
                    await step(None, "quick")  # 300 inside: still within
                    group = compiled.group(branch).also(branch).also(branch).also(trigger)
                    await group.run(None, "slow", Site("par", "t.mce", 2, 1))
                result: Any = "not exceeded"
            except BudgetExceeded as exc:
                result = exc
            return result, (b.used, run_.usage.total_tokens), leftover_tasks()

    result, (used, total), leftover = run(go())
    assert result == BudgetExceeded(500, 600)
    assert (used, total) == (600, 900)
    assert not leftover
    llm_server.wait_until(lambda: llm_server.disconnects == 3 and llm_server.open_connections == 0)


def test_a_budget_not_exceeded_changes_nothing(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ value }}", str, name="a")
    llm_server.respond_with(lambda request: text("ok", usage=(100, 50)))

    async def go() -> Any:
        async with llm_scope(llm_server.config()):
            async with budget(300):
                return [await step(None, "x"), await step(None, "y")]

    assert run(go()) == [Ok("ok", None), Ok("ok", None)]


def test_another_process_scripts_the_server_over_http(llm_server: LLMServer) -> None:
    """``POST /v1/_script`` (what benchmarks/react_bench.py uses): queue replies, clear the queue, bad scripts."""
    import json
    import urllib.request

    def post(body: object) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode()
        req = urllib.request.Request(f"{llm_server.url}/_script", data=data, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    assert post({"replies": ["one", {"tool": "SearchArgs", "arguments": {"query": "q"}, "delay": 0.01}]}) == (200, {"pending": 2})
    assert post({"replies": ["dropped"]})[1] == {"pending": 3}
    assert post({"clear": True, "replies": [{"text": "first", "usage": [3, 2]}]}) == (200, {"pending": 1})
    code, body = post({"replies": [{"nothing": 1}]})
    assert code == 400 and "bad script" in body["error"]["message"]
    assert llm_server.pending == 1 and llm_server.requests == []  # control requests are not recorded

    step = llm_step(FAST, "hi", str, name="s")
    assert run(call(llm_server, step, TICKET, None)) == Ok("first", None)
