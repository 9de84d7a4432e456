"""What an endpoint may send back, and what a user may see of it (issue 29).

The real ``AsyncOpenAI`` client against ``tests/llm_server.py`` again, now
answering what no well-behaved endpoint sends: malformed completions, bodies
that are not JSON or not UTF-8, non-string content, negative or absurd token
counts, a response trickled a byte at a time, and errors that quote the
caller's key back. Every one of them must come out of the step as a value of
its failure track — ``LLMUnavailable(kind=INVALID_RESPONSE)`` or ``LLMFailed``
— never as a raw exception (a ``Defect``), never as a value of the wrong type,
and never with the key or the endpoint's credentials in its text.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import pickle
import socket
import subprocess
import sys
import traceback
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentmonad import Err, Ok
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
    record_usage,
    usage,
)
from agentmonad.testing import FunctionModel, Reply, hangup, refusal, status, text, tool_call
from llm_server import Echo, LLMServer, Raw, Recorded, completion, llm_server  # noqa: F401  (the fixture)

T = TypeVar("T")
TESTS = Path(__file__).resolve().parent.parent
INVALID = LLMUnavailableKind.INVALID_RESPONSE
FAST = Model("fast", "gpt-test")


class Answer(BaseModel):
    text: str


class SearchArgs(BaseModel):
    query: str


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


async def call(server: LLMServer, step: Any, value: Any = "x", **settings_: Any) -> Any:
    async with llm_scope(server.config(**settings_)):
        return await step(None, value)


def invalid_response(out: Any) -> bool:
    return isinstance(out, Err) and isinstance(out.error, LLMUnavailable) and out.error.kind is INVALID


# ---------------------------------------------------------------- item 2: content that is not text


@pytest.mark.parametrize("content", [12345, [1, 2], {"text": "hi"}, True, 1.5])
@pytest.mark.parametrize("output", [str, SearchArgs | str], ids=["str", "choice-or-str"])
def test_non_string_content_is_an_invalid_response(llm_server: LLMServer, content: Any, output: Any) -> None:
    step = llm_step(FAST, "{{ value }}", output, name="say")
    llm_server.script(Raw(completion(content)))
    out = run(call(llm_server, step))
    assert invalid_response(out), out
    assert "content" in out.error.reason


def test_a_backend_answering_non_string_content_is_an_invalid_response() -> None:
    """Scripted backends are held to the same wire: a reply's content is text or nothing."""
    step = llm_step(FAST, "{{ value }}", str, name="say")
    config = LLMConfig(models={"fast": FunctionModel(lambda request: Reply(content=12345))})  # type: ignore[arg-type]

    async def go() -> Any:
        async with llm_scope(config):
            return await step(None, "x")

    out = run(go())
    assert invalid_response(out), out


# ---------------------------------------------------------------- item 5: malformed replies


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


MALFORMED: dict[str, Raw] = {
    "message null": Raw(completion(choices=[{"index": 0, "message": None, "finish_reason": "stop"}])),
    "choices a string": Raw(completion(choices="nope")),
    "choices empty": Raw(completion(choices=[])),
    "choice without a message": Raw(completion(choices=[{"index": 0, "finish_reason": "stop"}])),
    "choice a number": Raw(completion(choices=[7])),
    "usage a word": Raw(completion(usage={"prompt_tokens": "lots", "completion_tokens": 1})),
    "usage infinite": Raw(json.dumps(completion()).replace('"prompt_tokens": 5', '"prompt_tokens": 1e999')),
    "usage a float": Raw(completion(usage={"prompt_tokens": 5.5, "completion_tokens": 1})),
    "usage a list": Raw(completion(usage=[1, 2])),
    "tool call without a function": Raw(
        completion(choices=[{"index": 0, "message": {"content": None, "tool_calls": [{"id": "c", "type": "function"}]}}])
    ),
    "tool call name a number": Raw(
        completion(choices=[{"index": 0, "message": {"content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": 5, "arguments": "{}"}}]}}])
    ),
    "refusal a number": Raw(completion(choices=[{"index": 0, "message": {"content": "ok", "refusal": 3}}])),
    "finish reason a list": Raw(completion(choices=[{"index": 0, "message": {"content": "ok"}, "finish_reason": []}])),
    "not utf-8": Raw(b'{"choices": [{"message": {"content": "\xff\xfe"}}]}'),
    "truncated": Raw(json.dumps(completion())[:60]),
    "not json": Raw("<html>bad gateway</html>", headers={"content-type": "text/html"}),
    "empty body": Raw(b""),
    "a json list": Raw([1, 2, 3]),
    "deeply nested body": Raw(_deep(100_000)),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_is_an_invalid_response(llm_server: LLMServer, case: str) -> None:
    step = llm_step(FAST, "{{ value }}", str, name="say")
    llm_server.script(MALFORMED[case])
    out = run(call(llm_server, step))
    assert invalid_response(out), out
    assert out.error.status == 200


@pytest.mark.parametrize("depth", [50, 5000, 100_000])
@pytest.mark.parametrize("wrapped", [True, False], ids=["value-object", "bare"])
def test_a_deeply_nested_answer_is_llm_failed(llm_server: LLMServer, depth: int, wrapped: bool) -> None:
    step = llm_step(FAST, "{{ value }}", list[int], name="numbers")
    answer = '{"value": ' + _deep(depth) + "}" if wrapped else _deep(depth)
    llm_server.script(answer, answer, answer)
    out = run(call(llm_server, step))
    assert isinstance(out, Err) and isinstance(out.error, LLMFailed), out
    assert out.error.kind is LLMFailedKind.INVALID_OUTPUT
    assert len(llm_server.requests) == 3  # repaired like any answer that does not validate


def test_a_deeply_nested_object_answer_is_llm_failed(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ value }}", SearchArgs, name="plan")
    answer = '{"query": ' + _deep(100_000) + "}"
    llm_server.script(answer, answer, answer)
    out = run(call(llm_server, step))
    assert isinstance(out, Err) and isinstance(out.error, LLMFailed), out


# A valid completion, and what a test may break in it: every part of the wire format.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
_PATHS: list[tuple[Any, ...]] = [
    (),
    ("choices",),
    ("choices", 0),
    ("choices", 0, "message"),
    ("choices", 0, "message", "content"),
    ("choices", 0, "message", "refusal"),
    ("choices", 0, "message", "tool_calls"),
    ("choices", 0, "message", "tool_calls", 0),
    ("choices", 0, "message", "tool_calls", 0, "id"),
    ("choices", 0, "message", "tool_calls", 0, "function"),
    ("choices", 0, "message", "tool_calls", 0, "function", "name"),
    ("choices", 0, "message", "tool_calls", 0, "function", "arguments"),
    ("choices", 0, "finish_reason"),
    ("usage",),
    ("usage", "prompt_tokens"),
    ("usage", "completion_tokens"),
]


def _base(answer: str) -> dict[str, Any]:
    body = completion(answer)
    message = body["choices"][0]["message"]
    message["refusal"] = None
    message["tool_calls"] = [{"id": "call_0", "type": "function", "function": {"name": "SearchArgs", "arguments": answer}}]
    return body


def _broken(body: Any, path: tuple[Any, ...], junk: Any, delete: bool) -> Any:
    if not path:
        return junk
    node = body
    for part in path[:-1]:
        node = node[part]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = junk
    return body


@st.composite
def malformed_replies(draw: st.DrawFn) -> Raw:
    answer = draw(st.sampled_from(['{"query": "q"}', '{"value": [1, 2]}', "[1, 2]", "plain text", "{"]))
    match draw(st.sampled_from(["structure", "bytes"])):
        case "structure":
            path = draw(st.sampled_from(_PATHS))
            junk = draw(_JSON | st.sampled_from([-1, -(10**6), 10**40, float("inf"), float("nan"), "1e999"]))
            return Raw(_broken(_base(answer), path, junk, bool(path) and draw(st.booleans())))
        case "bytes":
            whole = json.dumps(_base(answer)).encode()
            cut = draw(st.integers(0, len(whole)))
            noise = draw(st.binary(max_size=8))
            return Raw(draw(st.sampled_from([whole[:cut], whole[:cut] + noise, noise + whole, b"[" * 50_000 + whole])))
    raise AssertionError("unreachable")


OUTPUTS: list[Any] = [str, SearchArgs, SearchArgs | str, Answer | SearchArgs, list[int]]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(reply=malformed_replies(), output=st.sampled_from(OUTPUTS))
def test_no_reply_escapes_the_failure_track(llm_server: LLMServer, reply: Raw, output: Any) -> None:
    """Whatever the endpoint answers with status 200, the step returns a value of its output type,
    ``LLMFailed``, or ``LLMUnavailable(INVALID_RESPONSE)`` — no exception escapes it (a Defect)."""
    from pydantic import TypeAdapter

    step = llm_step(FAST, "{{ value }}", output, name="s")
    llm_server.respond_with(lambda request: reply)
    out = run(call(llm_server, step, max_repairs=0))
    event(type(out).__name__ if isinstance(out, Ok) else type(out.error).__name__)
    match out:
        case Ok(value=value):
            TypeAdapter(output).validate_python(value, strict=True)
        case Err(error=LLMFailed()):
            pass
        case Err(error=LLMUnavailable(kind=kind)):
            assert kind is INVALID, out
        case _:
            raise AssertionError(out)


# ---------------------------------------------------------------- item 6: token counts


@pytest.mark.parametrize("counts", [(-1_000_000, 0), (0, -1), (True, 3)])
def test_token_counts_that_are_not_natural_numbers_are_an_invalid_response(
    llm_server: LLMServer, counts: tuple[Any, Any]
) -> None:
    step = llm_step(FAST, "{{ value }}", str, name="say")
    prompt, completion_ = counts
    llm_server.script(Raw(completion(usage={"prompt_tokens": prompt, "completion_tokens": completion_})))

    async def go() -> tuple[Any, Any]:
        async with llm_scope(llm_server.config()) as run_:
            return await step(None, "x"), run_.usage

    out, used = run(go())
    assert invalid_response(out), out
    assert "token" in out.error.reason
    assert used.as_dict() == {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def test_a_negative_count_cannot_cancel_other_models_spending(llm_server: LLMServer) -> None:
    liar = llm_step(Model("liar", "m"), "{{ value }}", str, name="liar")
    honest = llm_step(FAST, "{{ value }}", str, name="honest")
    llm_server.script(Raw(completion(usage={"prompt_tokens": -1_000_000, "completion_tokens": 0})), text("fine", usage=(70, 5)))

    async def go() -> tuple[Any, Any]:
        async with llm_scope(llm_server.config()):
            lied: Any = None
            try:
                async with budget(40):
                    lied = await liar(None, "x")
                    await honest(None, "y")
                return lied, "within budget"
            except BudgetExceeded as exc:
                return lied, exc

    lied, result = run(go())
    assert invalid_response(lied), lied
    assert result == BudgetExceeded(40, 75)


def test_record_usage_takes_natural_numbers_only() -> None:
    with usage() as used:
        record_usage("m", 3, 4)
        for bad in [(-1, 0), (0, -5), (1.5, 0), (True, 0), ("3", 0)]:
            with pytest.raises(ValueError, match="token"):
                record_usage("m", *bad)  # type: ignore[arg-type]
    assert used.as_dict()["total_tokens"] == 7


# ---------------------------------------------------------------- item 7: one deadline per request


def _trickled(seconds_per_byte: float) -> Raw:
    return Raw(completion("a" * 200), trickle=seconds_per_byte)


@pytest.mark.parametrize("retries", [0, 1])
def test_a_trickling_endpoint_is_cut_off_at_the_timeout(llm_server: LLMServer, retries: int) -> None:
    """A byte every 0.1 s keeps each read of the client under its time-out; the whole answer would
    take about 40 s. The model's timeout (1 s) bounds each request as a whole."""
    timeout = 1.0
    step = llm_step(FAST, "{{ value }}", str, name="say")
    llm_server.respond_with(lambda request: _trickled(0.1))

    async def go() -> Any:
        # the guard makes a missing deadline fail in seconds, not hang the test for 40 s
        return await asyncio.wait_for(call(llm_server, step, timeout=timeout, max_retries=retries), 15)

    out = run(go())
    # each attempt ended at its deadline (a TIMEOUT, not the guard's TimeoutError), and was retried
    assert isinstance(out, Err) and isinstance(out.error, LLMUnavailable), out
    assert out.error.kind is LLMUnavailableKind.TIMEOUT
    assert len(llm_server.requests) == 1 + retries
    llm_server.wait_until(lambda: llm_server.open_connections == 0)


def test_a_slow_but_timely_answer_still_arrives(llm_server: LLMServer) -> None:
    step = llm_step(FAST, "{{ value }}", str, name="say")
    llm_server.script(Raw(completion("ok"), trickle=0.001))
    assert run(call(llm_server, step, timeout=10.0)) == Ok("ok", None)


# ---------------------------------------------------------------- item 4: secrets in what a user sees

KEY = "sk-live-9Qx7Wm2Rt5Yb8Nc4Kd6Hf3Jg"
USER, PASSWORD = "alice", "pw-Zr4Tq8Lm2Vx6"


def leaks(secret: str, shown: str) -> list[str]:
    """The prefixes of ``secret`` (4 characters or more) that ``shown`` contains."""
    return [secret[:n] for n in range(4, len(secret) + 1) if secret[:n] in shown]


def texts(*things: object) -> str:
    """Everything a user may see of these: str, repr, a traceback, repr after pickling, every field."""
    parts = []
    for thing in things:
        parts += [str(thing), repr(thing)]
        if isinstance(thing, BaseException):
            parts.append("".join(traceback.format_exception(thing)))
            parts += [repr(v) for v in vars(thing).values()]
        try:
            parts.append(repr(pickle.loads(pickle.dumps(thing))))
        except Exception:
            pass
    return "\n".join(parts)


def authorization(record: Recorded) -> str:
    return record.headers.get("authorization", "")


# Each error shape, with the caller's Authorization header quoted back where an endpoint or a
# model may put it; and whether the error quotes it (masked) or only says what was wrong.
ECHOES: dict[str, tuple[Any, Any, bool]] = {
    "401 body": (str, Echo(lambda r: status(401, f"invalid key {authorization(r)}")), True),
    "400 body, key across the quote's cut": (str, Echo(lambda r: status(400, "x" * 385 + authorization(r))), True),
    "500 body, not json": (str, Echo(lambda r: Raw(f"upstream said: {authorization(r)}", status=500)), True),
    "refusal": (str, Echo(lambda r: refusal(f"I will not use {authorization(r)}")), True),
    "unknown function": (Answer | SearchArgs, Echo(lambda r: tool_call(authorization(r), {})), True),
    "invalid output": (SearchArgs, Echo(lambda r: text(json.dumps({"query": 5, "note": authorization(r)}))), True),
    "invalid output, key across the input's cut": (
        SearchArgs, Echo(lambda r: text(json.dumps({"pad": "y" * 43, "note": authorization(r)}))), True,
    ),
    "not a completion": (str, Echo(lambda r: Raw(f"{{ \"error\": \"{authorization(r)}\"", status=200)), True),
    "an error with status 200": (str, Echo(lambda r: Raw({"error": {"message": f"bad key {authorization(r)}"}})), True),
    "content not text": (str, Echo(lambda r: Raw(completion([authorization(r)]))), False),
}


@pytest.mark.parametrize("case", list(ECHOES))
def test_the_key_is_in_no_error_even_when_the_endpoint_echoes_it(llm_server: LLMServer, case: str) -> None:
    output, reply, quoted = ECHOES[case]
    step = llm_step(FAST, "{{ value }}", output, name="s")
    llm_server.script(reply, reply, reply)
    out = run(call(llm_server, step, api_key=KEY))
    assert isinstance(out, Err), out
    assert KEY in authorization(llm_server.requests[0])  # the key went where it belongs, and came back
    shown = texts(out, out.error)
    assert not leaks(KEY, shown), (leaks(KEY, shown), shown)
    assert ("***" in shown) is quoted, shown


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _with_credentials(url: str) -> str:
    return url.replace("://", f"://{USER}:{PASSWORD}@")


# Every kind of LLMUnavailable with the endpoint's credentials in its URL: what the server does, the
# URL (None: the server's), and the kind expected.
TRANSPORT: dict[str, tuple[Any, Any, LLMUnavailableKind]] = {
    "unreachable": (None, lambda: f"http://127.0.0.1:{_closed_port()}/v1", LLMUnavailableKind.CONNECTION_FAILED),
    "hangup": (hangup(), None, LLMUnavailableKind.CONNECTION_FAILED),
    "timeout": (text("late", delay=3), None, LLMUnavailableKind.TIMEOUT),
    "rejected, echoing the credentials": (Echo(lambda r: status(403, f"who is {authorization(r)}?")), None, LLMUnavailableKind.REJECTED),
    "rate limited, echoing": (Echo(lambda r: status(429, f"slow down {authorization(r)}")), None, LLMUnavailableKind.RATE_LIMITED),
    "server error, echoing": (Echo(lambda r: status(502, f"upstream refused {authorization(r)}")), None, LLMUnavailableKind.SERVER_ERROR),
    "a URL the client cannot parse": (None, lambda: "http://127.0.0.1:80:80/v1", LLMUnavailableKind.MISCONFIGURED),
}


@pytest.mark.parametrize("case", list(TRANSPORT))
def test_url_credentials_are_in_no_error(llm_server: LLMServer, case: str) -> None:
    reply, url, kind = TRANSPORT[case]
    if reply is not None:
        llm_server.script(reply)
    base = _with_credentials(url() if url is not None else llm_server.url)
    step = llm_step(FAST, "{{ value }}", str, name="s")
    config = LLMConfig(models={"*": ModelSettings(base_url=base, api_key=KEY, max_retries=0, timeout=0.5)})

    async def go() -> Any:
        async with llm_scope(config):
            return await step(None, "x")

    out = run(go())
    assert isinstance(out, Err) and isinstance(out.error, LLMUnavailable) and out.error.kind is kind, out
    shown = texts(out, out.error)
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()  # what the client sends for them
    assert not leaks(PASSWORD, shown) and not leaks(KEY, shown) and not leaks(basic, shown), shown
    assert f"{USER}:" not in shown
    if kind in (LLMUnavailableKind.CONNECTION_FAILED, LLMUnavailableKind.MISCONFIGURED) and url is not None:
        assert "http://***@127.0.0.1:" in out.error.reason  # the endpoint is still named


SPEC = '''\
from llm_wire_impl import Found, Hint

model fast = openai "test-model" (api_key_env="WIRE_TEST_KEY", max_repairs=0, max_retries=0)

llm say  : str -> str = fast "Say {{ value }}"
llm pick : str -> Found | Hint = fast "Pick for {{ value }}"

pipeline talk : str -> str ! LLMFailed | LLMUnavailable = say;
pipeline choose : str -> Found | Hint ! LLMFailed | LLMUnavailable = pick;
'''


def mcec_run(tmp_path: Path, server: LLMServer, pipeline: str, base_url: str | None = None) -> str:
    spec = tmp_path / "wire.mce"
    spec.write_text(SPEC, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(TESTS), "WIRE_TEST_KEY": KEY}
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", str(spec), pipeline, "--input", '"x"',
         "--model", f"fast=test-model@{base_url or server.url}"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["ok"] is False
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    ("case", "pipeline"),
    [("refusal", "talk"), ("unknown function", "choose"), ("400 body, key across the quote's cut", "talk"),
     ("content not text", "talk")],
)
def test_mcec_run_prints_no_key(llm_server: LLMServer, tmp_path: Path, case: str, pipeline: str) -> None:
    llm_server.script(ECHOES[case][1])
    shown = mcec_run(tmp_path, llm_server, pipeline)
    assert KEY in authorization(llm_server.requests[0])
    assert not leaks(KEY, shown), shown


def test_mcec_run_prints_no_url_credentials_and_no_wrong_value(llm_server: LLMServer, tmp_path: Path) -> None:
    llm_server.script(Raw(completion(12345)))
    shown = mcec_run(tmp_path, llm_server, "talk", _with_credentials(llm_server.url))
    assert '"value": 12345' not in shown and "invalid_response" in shown.lower()
    assert not leaks(PASSWORD, shown) and not leaks(KEY, shown), shown
