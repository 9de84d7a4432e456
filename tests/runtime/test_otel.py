"""A run as OpenTelemetry spans (agentmonad.otel, docs/language.md §14).

The SDK's in-memory exporter receives the ReAct example's spans (run for real: its model over
HTTP from the local model server, its tools on the example's MCP server); and an OTLP/HTTP
export reaches a receiver the test starts — a real HTTP server on 127.0.0.1 decoding the
protobuf request with opentelemetry-proto.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentmonad import AgentMonad, Err, Ok, Site, lift_fn, lift_step
from agentmonad.context import hooks
from agentmonad.llm import llm_config
from agentmonad.otel import SCHEMA_URL, SpanSink
from examples.research.impl import AgentState
from examples.research.planner import plan
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
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


@pytest.mark.parametrize("how", ["compiled", "interpreted"])
def test_the_react_example_as_genai_spans_each_with_its_mce_line(
    how: str, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiled (``mcec run``'s way: the generated module through ``run_observed``) and
    interpreted, the same spans."""
    monkeypatch.chdir(ROOT)  # the MCP server's command is relative to the repository root
    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    program = result.program
    if how == "compiled":
        module = load_module(program, result.generated)
        site = pipeline_site(program, "react")

        def react() -> Any:
            return run_observed("react", site, lambda: module.react(AgentState(), QUESTION))
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
    spans = exporter.get_finished_spans()
    [run] = [s for s in spans if s.name == "invoke_agent react"]
    # the run is a child of the application's span active where it started
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id
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


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: decodes each POST /v1/traces as ExportTraceServiceRequest."""

    received: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:  # noqa: N802  (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        if self.path == "/v1/traces":
            self.server.received.append(request)  # type: ignore[attr-defined]
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_an_otlp_http_export_reaches_a_receiver(receiver: ThreadingHTTPServer) -> None:
    provider = TracerProvider()
    port = receiver.server_address[1]
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
    with hooks(events=SpanSink(provider)):
        assert asyncio.run(_grouped().run(0)) == Ok((2, (100, 200)), 0)
    provider.shutdown()
    spans = [
        span
        for request in receiver.received  # type: ignore[attr-defined]
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
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
