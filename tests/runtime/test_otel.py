"""A run as OpenTelemetry spans (agentmonad.otel, docs/language.md §14).

The SDK's in-memory exporter receives the ReAct example's spans (run for real: its model over
HTTP from the local model server, its tools on the example's MCP server); and an OTLP/HTTP
export reaches a receiver the test starts — a real HTTP server on 127.0.0.1 decoding the
protobuf request with opentelemetry-proto.
"""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry import trace
from opentelemetry.trace import ProxyTracerProvider, SpanKind, StatusCode

from agentmonad import AgentMonad, Err, Ok, Site, lift_fn, lift_step
from agentmonad.context import HOOKS_ALIVE, current_run_context, hooks
from agentmonad.llm import llm_config
from agentmonad.otel import SCHEMA_URL, SpanSink, instrument, uninstrument
from examples.research.impl import AgentState
from examples.research.planner import plan
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from otlp_receiver import receiver  # noqa: F401  (the fixture)
from otlp_receiver import spans as received_spans
from mcec.compiler import compile_source
from agentmonad.observe import run_observed
from mcec.run.interpret import interpret
from mcec.run.runner import load_module, pipeline_site
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "research" / "research.mce"
QUESTION = "what is a monad and 2 plus 40"


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _by_id(spans: tuple[ReadableSpan, ...]) -> dict[int, ReadableSpan]:
    return {span.context.span_id: span for span in spans}


@pytest.mark.parametrize("how", ["compiled", "plain", "interpreted"])
def test_the_react_example_as_genai_spans_each_with_its_mce_line(
    how: str, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiled (``mcec run``'s way: the generated module through ``run_observed``), the compiled
    pipeline called plainly (it tells its own run), and interpreted: the same spans."""
    monkeypatch.chdir(ROOT)  # the MCP server's command is relative to the repository root
    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    program = result.program
    if how == "compiled":
        module = load_module(program, result.generated)
        site = pipeline_site(program, "react")

        def react() -> Any:
            return run_observed("react", site, lambda: module.react(AgentState(), QUESTION))
    elif how == "plain":
        module = load_module(program, result.generated)

        def react() -> Any:
            return module.react(AgentState(), QUESTION)
    else:
        def react() -> Any:
            return interpret(program, "react", AgentState(), QUESTION)

    llm_server.respond_with(plan)
    provider, exporter = _provider()
    app = provider.get_tracer("the application")
    with llm_config(llm_server.config()), app.start_as_current_span("request") as outer:
        with hooks(events=SpanSink(provider)):
            outcome = asyncio.run(react())
    assert isinstance(outcome, Ok), outcome
    run = _assert_react_spans(exporter.get_finished_spans(), llm_server)
    # the run is a child of the application's span active where it started
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id


def _research() -> Any:
    """The ReAct example compiled and loaded."""
    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return load_module(result.program, result.generated)


def _assert_react_spans(spans: tuple[ReadableSpan, ...], llm_server: LLMServer) -> ReadableSpan:
    """The ReAct run's spans, each with its ``.mce`` line: the run's, which this returns."""
    [run] = [s for s in spans if s.name == "invoke_agent react"]
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "react"
    assert (run.attributes["code.file.path"], run.attributes["code.line.number"]) == ("research.mce", 52)
    assert run.instrumentation_scope is not None and run.instrumentation_scope.schema_url == SCHEMA_URL
    inside = [s for s in spans if s.parent is not None and s.parent.span_id == run.context.span_id]
    assert [(s.name, s.attributes["code.line.number"]) for s in inside] == [  # type: ignore[index]
        ("ask", 55),
        ("chat gpt-4o-mini", 56),
        ("execute_tool search_facts", 58), ("observe", 58),
        ("chat gpt-4o-mini", 56),
        ("execute_tool add_numbers", 59), ("observe", 59),
        ("chat gpt-4o-mini", 56),
        # hits_text, sum_text and final are fns: no effects, no spans (docs/language.md §14)
    ]
    assert all(s.attributes["code.file.path"] == "research.mce" for s in inside)  # type: ignore[index]
    chats = [s for s in inside if s.name.startswith("chat ")]
    requests = [r.body for r in llm_server.requests]
    assert len(requests) == 3
    for chat in chats:
        assert chat.kind == SpanKind.CLIENT and chat.attributes is not None
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "gpt-4o-mini" == requests[0]["model"]
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0  # type: ignore[operator]
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0  # type: ignore[operator]
        assert chat.attributes["code.function.name"] == "decide"
    tools = [s for s in inside if s.name.startswith("execute_tool ")]
    assert [(t.attributes["gen_ai.tool.name"], t.attributes["mcec.tool.remote_name"]) for t in tools] == [  # type: ignore[index]
        ("search_facts", "search"),
        ("add_numbers", "add"),
    ]
    assert all(t.attributes["gen_ai.operation.name"] == "execute_tool" for t in tools)  # type: ignore[index]
    for span in inside:  # each within its parent, in order, and successful
        assert run.start_time <= span.start_time <= span.end_time <= run.end_time  # type: ignore[operator]
        assert span.status.status_code == StatusCode.UNSET and span.attributes["mcec.outcome"] == "ok"  # type: ignore[index]
    return run


def test_instrument_once_then_plain_calls_emit_every_span(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``instrument(provider)`` once at start-up: a compiled pipeline called plainly, no ``with``
    block, emits the run, step, tool and chat spans with their ``.mce`` lines; after
    ``uninstrument()`` it emits none."""
    monkeypatch.chdir(ROOT)
    module = _research()
    provider, exporter = _provider()
    instrument(provider)
    try:
        with llm_config(llm_server.config()):
            llm_server.respond_with(plan)
            outcome = asyncio.run(module.react(AgentState(), QUESTION))
            assert isinstance(outcome, Ok), outcome
            run = _assert_react_spans(exporter.get_finished_spans(), llm_server)
            assert run.parent is None  # no application span around it: a trace of its own
            gc.collect()
            assert not HOOKS_ALIVE  # nothing stays attached once the run is over
            exporter.clear()
            uninstrument()
            llm_server.requests.clear()
            assert isinstance(asyncio.run(module.react(AgentState(), QUESTION)), Ok)
    finally:
        uninstrument()
    assert exporter.get_finished_spans() == ()


def test_instrument_without_a_configured_sdk_attaches_nothing() -> None:
    """``instrument()`` with no provider and the SDK not configured (the API's proxy provider):
    a run attaches no hook, its steps make plain calls, until the SDK is configured."""
    assert isinstance(trace.get_tracer_provider(), ProxyTracerProvider)  # no test sets the global provider
    hooked: list[bool] = []

    def look(state: int, value: int) -> Ok[int, int]:
        hooked.append(current_run_context().hooked)
        return Ok(value + 1, state)

    look_k = lift_step(look, name="look", errors=(), site=Site("look", "g.mce", 2, 5))
    instrument()
    try:
        outcome = asyncio.run(look_k(1).then(look_k).run(0))
    finally:
        uninstrument()
    assert outcome == Ok(3, 0) and hooked == [False, False]
    with hooks(events=SpanSink(_provider()[0])):  # the same step, hooked: what the list tells apart
        asyncio.run(look_k(1).run(0))
    assert hooked == [False, False, True]


_CONFIGURED_LATER = """
import asyncio
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from agentmonad import Ok, Site, lift_step
from agentmonad.otel import instrument

look = lift_step(lambda s, v: Ok(v + 1, s), name="look", errors=(), site=Site("look", "g.mce", 2, 5))
instrument()                                   # before the SDK is configured
asyncio.run(look(1).run(0))                    # not configured yet: no span anywhere
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)            # configured now: the next run's spans go to it
asyncio.run(look(1).run(0))
print(sorted(span.name for span in exporter.get_finished_spans()))
"""


def test_instrument_before_the_sdk_is_configured_takes_the_global_provider_once_set() -> None:
    """In a process of its own (the global provider is set once per process)."""
    done = subprocess.run([sys.executable, "-c", _CONFIGURED_LATER], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "runtime")])})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "['invoke_agent program', 'look']\n"


class Boom(Exception):
    pass


def _grouped(fail: bool = False) -> AgentMonad[int, Any, Any]:
    async def look(state: int, value: int) -> Any:
        await asyncio.sleep(0.001 * value)
        return Err(Boom("no"), state) if fail and value == 2 else Ok(value * 100, state)

    look_k = lift_step(look, name="look", errors=(Boom,), site=Site("look", "g.mce", 4, 9), is_async=True, kind="tool")
    double_k = lift_fn(lambda v: v * 2, name="double", site=Site("double", "g.mce", 3, 5))
    return AgentMonad.par(
        [double_k(1), AgentMonad.each([1, 2], look_k, merge=None, site=Site("each", "g.mce", 4, 5)).map(tuple)],
        merge=None,
        site=Site("par", "g.mce", 3, 1),
    )


def test_group_branches_are_children_of_their_group_and_a_failure_is_an_error_status() -> None:
    provider, exporter = _provider()
    with hooks(events=SpanSink(provider)):
        outcome = asyncio.run(_grouped(fail=True).run(0))
    assert isinstance(outcome, Err)
    spans = exporter.get_finished_spans()
    by_id = _by_id(spans)

    def parent(span: ReadableSpan) -> str:
        assert span.parent is not None
        return by_id[span.parent.span_id].name

    named = {(s.name, tuple(s.attributes.get("mcec.element.index", ()))): s for s in spans}  # type: ignore[union-attr,arg-type]
    assert parent(named[("par", ())]) == "invoke_agent program"
    assert ("double", (0,)) not in named  # a pure fn is no effect: no span (docs/language.md §14)
    assert parent(named[("each", (1,))]) == "par"
    assert parent(named[("execute_tool look", (1, 0))]) == "each"
    failed = named[("execute_tool look", (1, 1))]
    assert parent(failed) == "each"
    assert failed.status.status_code == StatusCode.ERROR and failed.attributes["error.type"] == "Boom"  # type: ignore[index]
    each = named[("each", (1,))]
    assert each.attributes["mcec.group.total"] == 2 and each.attributes["mcec.group.failed"] == 1  # type: ignore[index]
    assert each.status.status_code == StatusCode.ERROR
    assert (each.attributes["code.file.path"], each.attributes["code.line.number"]) == ("g.mce", 4)  # type: ignore[index]


def test_an_otlp_http_export_reaches_a_receiver(receiver: ThreadingHTTPServer) -> None:
    provider = TracerProvider()
    port = receiver.server_address[1]
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
    with hooks(events=SpanSink(provider)):
        assert asyncio.run(_grouped().run(0)) == Ok((2, (100, 200)), 0)
    provider.shutdown()
    spans = received_spans(receiver)
    names = sorted(span.name for span in spans)
    assert names == sorted(["invoke_agent program", "par", "each", "execute_tool look", "execute_tool look"])
    tools = [span for span in spans if span.name == "execute_tool look"]
    for tool in tools:
        attributes = {a.key: a.value for a in tool.attributes}
        assert attributes["gen_ai.tool.name"].string_value == "look"
        assert attributes["code.file.path"].string_value == "g.mce"
        assert attributes["code.line.number"].int_value == 4
    [each] = [span for span in spans if span.name == "each"]
    assert all(tool.parent_span_id == each.span_id for tool in tools)
    assert len({span.trace_id for span in spans}) == 1
