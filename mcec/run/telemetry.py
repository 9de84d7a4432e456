"""``mcec run --otel`` and ``mcec worker --otel``: the process's runs exported as OpenTelemetry
spans, configured by the standard ``OTEL_*`` environment variables (docs/language.md §14).

The OpenTelemetry SDK reads its own variables: the resource (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``; the service is ``mcec`` when neither names one), the sampler
(``OTEL_TRACES_SAMPLER``), the batch processor (``OTEL_BSP_*``), and each exporter its
endpoint, headers, timeout and compression (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``, …). Which exporters:
``OTEL_TRACES_EXPORTER`` (default ``otlp``; ``none``: none), each found by name among the
installed packages' ``opentelemetry_traces_exporter`` entry points, as the SDK's own
auto-configuration finds them; ``otlp`` is the one for the OTLP protocol
(``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` or ``OTEL_EXPORTER_OTLP_PROTOCOL``, default
``http/protobuf``, the protocol the specification makes the default: ``mcec[trace]`` installs
its exporter).

The provider is made the global one (so spans of the application's own instrumented libraries
join the runs'), :func:`agentmonad.otel.instrument` makes every run report to it, and
:func:`shutdown` exports what is left when the command ends.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["TelemetryError", "start", "shutdown"]

#: The OTLP protocols and the exporters' entry-point names (as the SDK names them).
_OTLP_EXPORTERS = {"http/protobuf": "otlp_proto_http", "grpc": "otlp_proto_grpc"}
_INSTALL = "pip install 'mcec[trace]'"


class TelemetryError(Exception):
    """``--otel`` cannot start: a package is missing or a variable names something unknown (one line)."""


def _exporter_names() -> list[str]:
    """The entry-point names of the span exporters ``OTEL_TRACES_EXPORTER`` asks for."""
    names = [name.strip() for name in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if name.strip()]
    if names == ["none"]:
        return []
    chosen: list[str] = []
    for name in names:
        if name == "otlp":
            protocol = (
                os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
                or "http/protobuf"
            ).strip()
            if protocol not in _OTLP_EXPORTERS:
                known = ", ".join(_OTLP_EXPORTERS)
                raise TelemetryError(f"the OTLP protocol {protocol!r} is not one of {known}")
            name = _OTLP_EXPORTERS[protocol]
        chosen.append(name)
    return chosen


def start() -> TracerProvider:
    """Configure the SDK from the environment, make its provider the global one, and instrument
    every run in the process (:func:`agentmonad.otel.instrument`). The provider: to
    :func:`shutdown` at the end."""
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

        from agentmonad.otel import instrument
    except ImportError:
        raise TelemetryError(f"--otel needs the OpenTelemetry SDK (opentelemetry-sdk), not installed: {_INSTALL}") from None
    processors: list[BatchSpanProcessor] = []
    for name in _exporter_names():
        found = entry_points(group="opentelemetry_traces_exporter", name=name)
        if not found:
            hint = f": {_INSTALL}" if name == "otlp_proto_http" else " (OTEL_TRACES_EXPORTER)"
            raise TelemetryError(f"no OpenTelemetry span exporter {name!r} is installed{hint}")
        try:
            exporter_class = next(iter(found)).load()
            exporter = exporter_class()
        except Exception as exc:  # an exporter's own import or settings: its message, one line
            raise TelemetryError(f"the span exporter {name!r} cannot start: {exc}") from None
        if not isinstance(exporter, SpanExporter):
            raise TelemetryError(f"the entry point {name!r} is not a span exporter")
        processors.append(BatchSpanProcessor(exporter))
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "mcec"}))
    provider = TracerProvider(resource=resource)
    for processor in processors:
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    instrument(provider)  # this provider even where the global one was set before (the API sets it once)
    return provider


def shutdown(provider: TracerProvider) -> None:
    """Export the spans not exported yet and stop the exporters (the command is ending)."""
    from agentmonad.otel import uninstrument

    uninstrument()
    provider.shutdown()
