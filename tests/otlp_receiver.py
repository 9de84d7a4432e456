"""An OTLP/HTTP trace receiver for the tests: a real HTTP server on 127.0.0.1 that decodes each
``POST /v1/traces`` as an ``ExportTraceServiceRequest`` (opentelemetry-proto), as a collector
would. :func:`receiver` is the fixture; :func:`spans` and :func:`attributes` read what arrived."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span


class _Receiver(BaseHTTPRequestHandler):
    """Decodes each POST /v1/traces as ExportTraceServiceRequest."""

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
    """A running receiver; ``receiver.received``: the requests so far."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.received = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def endpoint(server: ThreadingHTTPServer) -> str:
    """The receiver's base URL (``OTEL_EXPORTER_OTLP_ENDPOINT``: the exporter adds ``/v1/traces``)."""
    return f"http://127.0.0.1:{server.server_address[1]}"


def spans(server: ThreadingHTTPServer) -> list[Span]:
    """Every span received so far."""
    return [
        span
        for request in server.received  # type: ignore[attr-defined]
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]


def service_names(server: ThreadingHTTPServer) -> set[str]:
    """The ``service.name`` of every resource that sent spans."""
    return {
        value.string_value
        for request in server.received  # type: ignore[attr-defined]
        for resource in request.resource_spans
        for key, value in attributes(resource.resource.attributes).items()
        if key == "service.name"
    }


def attributes(pairs: Any) -> dict[str, Any]:
    """A span's (or resource's) attributes by key: each an ``AnyValue``."""
    found: dict[str, Any] = {}
    for pair in pairs:
        assert isinstance(pair, KeyValue)
        found[pair.key] = pair.value
    return found
