"""Streaming LLM steps over real HTTP (docs/language.md §14): the real ``AsyncOpenAI`` client with
``stream=True`` against ``tests/llm_server.py``, which answers as the OpenAI API streams (server-sent
events of chunks). Events are read the way a user reads them, with ``agentmonad.observe.observe``.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agentmonad import Err, Ok
from agentmonad.context import hooks
from agentmonad.events import Event, PartialOutput, TextDelta
from agentmonad.llm import LLMFailed, LLMUnavailable, LLMUnavailableKind, llm_scope, llm_step, usage
from agentmonad.llm.partial import Partial, PartialReader, partial_model
from agentmonad.observe import observe
from agentmonad.testing import ScriptedModel, status, text, tool_call, use_models
from llm_server import LLMServer, Raw, Streamed, completion, llm_server  # noqa: F401  (the fixture)


class Source(BaseModel):
    url: str
    title: str


class Answer(BaseModel):
    text: str
    sources: list[Source]


class SearchArgs(BaseModel):
    query: str
    limit: int = 5


@dataclass
class Verdict:
    label: Literal["yes", "no"]
    why: str


ANSWER = Answer(text="Paris is the capital of France.", sources=[Source(url="https://a.example", title="A")])


def observed(server: LLMServer, step: Any, value: Any = "q") -> tuple[list[Event], Any]:
    """Run ``step`` in a run scope pointed at ``server``, its events observed: (events, outcome)."""

    async def run() -> Any:
        async with llm_scope(server.config()):
            return await step(None, value)

    async def main() -> tuple[list[Event], Any]:
        run_events = observe(run)
        seen = [event async for event in run_events]
        return seen, run_events.outcome

    return asyncio.run(main())


def deltas(events: list[Event]) -> list[str]:
    return [e.text for e in events if isinstance(e, TextDelta)]


def partials(events: list[Event]) -> list[Any]:
    return [e.value for e in events if isinstance(e, PartialOutput)]


# ---------------------------------------------------------------- text


def test_a_text_answer_streams_its_pieces_as_text_deltas(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Say {{ value }}", str, name="say", stream=True)
    llm_server.script(Streamed("hello there, world", pieces=("hel", "lo there", ", world")))
    events, outcome = observed(llm_server, step)
    assert deltas(events) == ["hel", "lo there", ", world"]
    assert outcome == Ok("hello there, world", None)
    body = llm_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_deltas_reach_the_consumer_while_the_answer_is_still_arriving(llm_server: LLMServer) -> None:
    # the server holds the rest of the answer until the consumer has seen the first delta
    gate = threading.Event()
    step = llm_step(llm_server.model(), "Say {{ value }}", str, name="say", stream=True)
    llm_server.script(Streamed("first, then the rest", pieces=("first", ", then the rest"), gate=gate))

    async def run() -> Any:
        async with llm_scope(llm_server.config()):
            return await step(None, "q")

    async def main() -> list[str]:
        seen: list[str] = []
        run_events = observe(run)
        async for event in run_events:
            if isinstance(event, TextDelta):
                seen.append(event.text)
                gate.set()  # only now does the server send the rest
        assert run_events.outcome == Ok("first, then the rest", None)
        return seen

    assert asyncio.run(main()) == ["first", ", then the rest"]


def test_without_an_event_sink_the_step_makes_the_plain_call(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Say {{ value }}", str, name="say", stream=True)
    llm_server.script("hello")

    async def run() -> Any:
        async with llm_scope(llm_server.config()):
            return await step(None, "q")

    assert asyncio.run(run()) == Ok("hello", None)
    assert "stream" not in llm_server.requests[0].body


def test_a_step_not_declared_streaming_does_not_stream_to_a_sink(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Say {{ value }}", str, name="say")
    llm_server.script("hello")
    events, outcome = observed(llm_server, step)
    assert outcome == Ok("hello", None) and deltas(events) == []
    assert "stream" not in llm_server.requests[0].body


def test_usage_of_a_streamed_answer_is_counted_from_its_last_chunk(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Say {{ value }}", str, name="say", stream=True)
    llm_server.script(text("a streamed answer", usage=(11, 7)))

    async def run() -> Any:
        with usage() as counted, hooks(events=_Collect()):
            async with llm_scope(llm_server.config()):
                outcome = await step(None, "q")
        return outcome, counted

    outcome, counted = asyncio.run(run())
    assert outcome == Ok("a streamed answer", None)
    assert (counted.requests, counted.prompt_tokens, counted.completion_tokens) == (1, 11, 7)


class _Collect:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


# ---------------------------------------------------------------- structured answers


def test_an_object_answer_streams_typed_partials(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Answer {{ value }}", Answer, name="answer", stream=True)
    llm_server.script(ANSWER.model_dump_json())
    events, outcome = observed(llm_server, step)
    assert outcome == Ok(ANSWER, None)
    seen = partials(events)
    assert len(seen) > 3
    assert all(type(p) is partial_model(Answer) for p in seen)
    assert seen[-1].model_dump() == ANSWER.model_dump()
    # the text grows piece by piece: each partial's text is a prefix of the next one's
    texts = [p.text or "" for p in seen]
    assert all(b.startswith(a) for a, b in zip(texts, texts[1:]))
    assert any(p.sources is None for p in seen) and isinstance(seen[-1].sources[0], partial_model(Source))


def test_a_given_partial_type_is_used(llm_server: LLMServer) -> None:
    class AnswerPartial(Partial):
        text: str | None = None
        sources: list[Any] | None = None

    step = llm_step(llm_server.model(), "Q", Answer, name="answer", stream=True, partials={Answer: AnswerPartial})
    llm_server.script(ANSWER.model_dump_json())
    events, _ = observed(llm_server, step)
    assert {type(p) for p in partials(events)} == {AnswerPartial}


def test_a_union_answer_streams_partials_of_the_class_the_call_names(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", Answer | SearchArgs, name="decide", stream=True)
    llm_server.script(tool_call("SearchArgs", {"query": "capital of France", "limit": 3}))
    events, outcome = observed(llm_server, step)
    assert outcome == Ok(SearchArgs(query="capital of France", limit=3), None)
    seen = partials(events)
    assert seen and all(type(p) is partial_model(SearchArgs) for p in seen)
    assert seen[-1].model_dump() == {"query": "capital of France", "limit": 3}


def test_a_dataclass_answer_with_a_literal_streams(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", Verdict, name="judge", stream=True)
    llm_server.script('{"label": "yes", "why": "it is"}')
    events, outcome = observed(llm_server, step)
    assert outcome == Ok(Verdict("yes", "it is"), None)
    # a half-written literal ("ye") is no valid partial: the partial waits for the whole word
    assert [p.label for p in partials(events)] [-1] == "yes"
    assert all(p.label in (None, "yes") for p in partials(events))


def test_an_invalid_streamed_answer_is_repaired_and_streams_again(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", Answer, name="answer", stream=True)
    llm_server.script('{"text": "no sources"}', ANSWER.model_dump_json())
    events, outcome = observed(llm_server, step)
    assert outcome == Ok(ANSWER, None)
    assert [r.body.get("stream") for r in llm_server.requests] == [True, True]
    texts = [p.text for p in partials(events)]
    assert "no sources" in texts and texts[-1] == ANSWER.text  # the second attempt starts over


def test_repairs_exhausted_is_llm_failed_as_without_streaming(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(max_repairs=0), "Q", Answer, name="answer", stream=True)
    llm_server.script('{"text": "no sources"}')
    _, outcome = observed(llm_server, step)
    assert isinstance(outcome, Err) and isinstance(outcome.error, LLMFailed)
    assert "sources" in outcome.error.reason


# ---------------------------------------------------------------- what can go wrong


def _unavailable(outcome: Any) -> LLMUnavailable:
    assert isinstance(outcome, Err) and isinstance(outcome.error, LLMUnavailable), outcome
    return outcome.error


def test_a_chunk_that_is_not_json_is_an_invalid_response(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    body = 'data: {"choices": [{"delta": {"content": "hi"}}]}\n\ndata: {not json\n\n'
    llm_server.script(Raw(body, headers={"content-type": "text/event-stream"}))
    events, outcome = observed(llm_server, step)
    error = _unavailable(outcome)
    assert error.kind is LLMUnavailableKind.INVALID_RESPONSE and "not JSON" in error.reason
    assert deltas(events) == ["hi"]


@pytest.mark.parametrize(
    ("chunk", "said"),
    [
        ('{"choices": [{"delta": {"content": 12345}}]}', "choices[0].delta.content is the number 12345"),
        ('{"choices": [{"delta": "hi"}]}', "choices[0].delta is text, not an object"),
        ('{"choices": [], "usage": {"prompt_tokens": -3}}', "usage.prompt_tokens is the number -3"),
        ('{"error": {"message": "overloaded"}}', "answered with an error: overloaded"),
        ('[1, 2]', "a chunk is a list, not an object"),
    ],
)
def test_a_malformed_chunk_is_an_invalid_response(llm_server: LLMServer, chunk: str, said: str) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    llm_server.script(Raw(f"data: {chunk}\n\ndata: [DONE]\n\n", headers={"content-type": "text/event-stream"}))
    _, outcome = observed(llm_server, step)
    error = _unavailable(outcome)
    assert error.kind is LLMUnavailableKind.INVALID_RESPONSE and said in error.reason, error.reason


def test_a_stream_without_choices_is_an_invalid_response(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    llm_server.script(Raw("data: [DONE]\n\n", headers={"content-type": "text/event-stream"}))
    _, outcome = observed(llm_server, step)
    assert "the stream has no choices" in _unavailable(outcome).reason


def test_a_stream_that_breaks_is_a_failed_connection(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    llm_server.script(Streamed("a long answer that never ends", hangup_after=2))
    events, outcome = observed(llm_server, step)
    error = _unavailable(outcome)
    assert error.kind is LLMUnavailableKind.CONNECTION_FAILED and "broke" in error.reason
    assert deltas(events) == ["a lo", "ng a"]


def test_a_stream_that_stalls_times_out(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    gate = threading.Event()  # never set: the server holds the rest of the answer
    llm_server.script(Streamed("first, then nothing", pieces=("first", " more"), gate=gate))

    async def run() -> Any:
        async with llm_scope(llm_server.config(timeout=0.3)):
            return await step(None, "q")

    async def main() -> Any:
        run_events = observe(run)
        _ = [e async for e in run_events]
        return run_events.outcome

    try:
        error = _unavailable(asyncio.run(main()))
    finally:
        gate.set()
    assert error.kind is LLMUnavailableKind.TIMEOUT


def test_an_error_status_on_a_stream_request_is_as_without_streaming(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    llm_server.script(status(429))
    _, outcome = observed(llm_server, step)
    error = _unavailable(outcome)
    assert error.kind is LLMUnavailableKind.RATE_LIMITED and error.status == 429


def test_an_endpoint_that_does_not_stream_answers_whole(llm_server: LLMServer) -> None:
    step = llm_step(llm_server.model(), "Q", str, name="say", stream=True)
    llm_server.script(Raw(completion("the whole answer")))
    events, outcome = observed(llm_server, step)
    assert outcome == Ok("the whole answer", None) and deltas(events) == ["the whole answer"]


def test_a_scripted_model_that_cannot_stream_gives_one_piece() -> None:
    step = llm_step(_model(), "Q", Answer, name="answer", stream=True)

    async def run() -> Any:
        with use_models(fast=ScriptedModel([ANSWER.model_dump_json()])):
            return await step(None, "q")

    async def main() -> tuple[list[Event], Any]:
        run_events = observe(run)
        return [e async for e in run_events], run_events.outcome

    events, outcome = asyncio.run(main())
    assert outcome == Ok(ANSWER, None)
    assert [p.model_dump() for p in partials(events)] == [ANSWER.model_dump()]


def _model() -> Any:
    from agentmonad.llm import Model

    return Model("fast", "test-model")


# ---------------------------------------------------------------- the partial reader


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=30),
    urls=st.lists(st.text(max_size=12), max_size=3),
    cut=st.integers(min_value=1, max_value=7),
)
def test_every_partial_read_is_a_prefix_of_the_answer(text: str, urls: list[str], cut: int) -> None:
    """Fed the JSON of an answer in pieces, the reader gives partials whose text only grows (a
    prefix of the final text each time) and whose last one is the answer itself."""
    answer = Answer(text=text, sources=[Source(url=u, title="t") for u in urls])
    data = answer.model_dump_json()
    reader = PartialReader(partial_model(Answer))
    seen = [v for i in range(0, len(data), cut) if (v := reader.feed(data[i : i + cut])) is not None]
    assert seen and seen[-1].model_dump() == answer.model_dump()
    for value in seen:
        assert answer.text.startswith(value.text or "")


def test_streamed_calls_reuse_one_connection(llm_server: LLMServer) -> None:
    """The body is read to its end, past `[DONE]`: a response left half read would close its
    connection, and every streamed call would pay for a new one (what the TTFT benchmark saw)."""
    step = llm_step(llm_server.model(), "Say {{ value }}", str, name="say", stream=True)
    llm_server.script("one", "two", "three")

    async def run() -> list[Any]:
        async with llm_scope(llm_server.config()):
            return [await step(None, "q") for _ in range(3)]

    async def main() -> list[Any]:
        run_events = observe(run)
        _ = [e async for e in run_events]
        return run_events.outcome  # type: ignore[return-value]

    assert asyncio.run(main()) == [Ok("one", None), Ok("two", None), Ok("three", None)]
    assert llm_server.connections == 1
