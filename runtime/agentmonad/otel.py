"""A run's events as OpenTelemetry spans, following the GenAI semantic conventions.

This module needs ``opentelemetry-api`` only (``pip install 'agentmonad[trace]'`` brings it;
``mcec[trace]`` brings it with the SDK and the OTLP/HTTP exporter ``mcec run --otel`` uses):
the application configures the SDK (a ``TracerProvider`` and its exporters), then, once at
start-up, :func:`instrument`::

    from agentmonad.otel import instrument

    instrument()                            # the global tracer provider, or instrument(provider)
    outcome = await module.react(state, question)   # every run in the process: its spans

or, for the runs started inside one block, attaches a :class:`SpanSink`::

    from agentmonad.context import hooks
    from agentmonad.otel import SpanSink

    with hooks(events=SpanSink()):          # the global tracer provider, or SpanSink(provider)
        outcome = await module.react(state, question)

With :func:`instrument` and no provider given, each run looks, when it starts, whether the SDK
is configured (a global provider set with ``trace.set_tracer_provider``, before or after the
call): until it is, a run attaches nothing and its steps cost what they cost uninstrumented. The two forms add up: a run
inside ``with hooks(events=SpanSink())`` in an instrumented process reports to both.

Spans (OpenTelemetry semantic conventions **v1.41.0**: the GenAI agent and client spans, and
the stable ``code.*`` attributes):

- the run: ``invoke_agent {pipeline}`` (INTERNAL), ``gen_ai.operation.name`` =
  ``invoke_agent``, ``gen_ai.agent.name`` = the pipeline; a child of the span active where
  the run starts (the application's own), if any;
- a model call (an ``llm`` step): ``chat {model}`` (CLIENT), ``gen_ai.operation.name`` =
  ``chat``, ``gen_ai.provider.name`` = ``openai`` (the API spoken), ``gen_ai.request.model``
  (the model the request named), ``gen_ai.usage.input_tokens`` / ``output_tokens`` (every
  request of the call, repairs included);
- a tool call (a spec's ``tool`` step): ``execute_tool {tool}`` (INTERNAL),
  ``gen_ai.operation.name`` = ``execute_tool``, ``gen_ai.tool.name`` = the spec's tool name,
  ``gen_ai.tool.type`` = ``extension``, and the MCP server's name and tool
  (``mcec.tool.server``, ``mcec.tool.remote_name``); a tool a user step calls itself
  (``call_tool``) is an ``execute_tool`` span under that step;
- a user step or ``fn``: a span named after it (INTERNAL), ``mcec.effect.kind`` = ``step`` or
  ``fn``;
- a ``par``/``each`` group: a span ``par``/``each`` whose branches' spans are its children
  (``mcec.group.total``, ``mcec.group.done``, ``mcec.group.failed``);
- every span from the spec carries ``code.file.path`` (the ``.mce`` file's name as the spec's
  sites give it), ``code.line.number``, ``code.column.number``, ``code.function.name`` (the
  step's name), ``mcec.element.index`` (the element indices, outermost first) inside ``each``/``par`` branches, and
  ``mcec.outcome`` (``ok``/``err``/``defect``/``cancelled``); a span that did not succeed has
  status ERROR and ``error.type`` (the error's class name, or ``cancelled``);
- a plan checked (``spawn``) is a span event ``mcec.plan.checked`` on the enclosing span; a
  model request made by a user step itself (``record_usage``) is a span event
  ``gen_ai.model.request``.

The span times are the events' own (``time.monotonic()``, mapped onto the wall clock once,
when the sink is made).
"""

from __future__ import annotations

import time
from typing import assert_never, final

from opentelemetry import trace
from opentelemetry.trace import (
    NoOpTracerProvider,
    ProxyTracer,
    ProxyTracerProvider,
    Span,
    SpanKind,
    Status,
    StatusCode,
    Tracer,
    TracerProvider,
)
from opentelemetry.util.types import AttributeValue

from .events import (
    EachProgress,
    Effect,
    EffectEnded,
    EffectStarted,
    Event,
    GroupEnded,
    GroupStarted,
    ModelRequest,
    OutcomeKind,
    PartialOutput,
    PlanChecked,
    RunEnded,
    RunStarted,
    TextDelta,
    ToolCalled,
)
from .observe import add_run_sink, remove_run_sink
from .outcome import Site

__all__ = ["SpanSink", "instrument", "uninstrument", "SEMCONV_VERSION", "SCHEMA_URL"]

#: The version of the OpenTelemetry semantic conventions these spans follow.
SEMCONV_VERSION = "1.41.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

_INSTRUMENTATION = "agentmonad"


def _code(site: Site | None) -> dict[str, AttributeValue]:
    if site is None:
        return {}
    return {
        "code.file.path": site.file,
        "code.line.number": site.line,
        "code.column.number": site.column,
        "code.function.name": site.step,
    }


@final
class _Open:
    """A span this sink started and has not ended: the OTel span, and what an effect's
    events add to it."""

    __slots__ = ("span", "effect", "model")

    def __init__(self, span: Span, effect: Effect | None) -> None:
        self.span = span
        self.effect = effect
        self.model: str | None = None


@final
class SpanSink:
    """An event sink (:mod:`agentmonad.events`) that turns a run's events into OpenTelemetry
    spans (see the module docstring). ``tracer_provider``: the provider to get the tracer from
    (default: the global one, ``opentelemetry.trace.get_tracer_provider()``)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self.tracer: Tracer = trace.get_tracer(_INSTRUMENTATION, tracer_provider=tracer_provider, schema_url=SCHEMA_URL)
        self._open: dict[int, _Open] = {}
        # the events' clock is monotonic; spans want nanoseconds since the epoch
        self._offset = time.time_ns() - time.monotonic_ns()

    def _ns(self, at: float) -> int:
        return int(at * 1e9) + self._offset

    def _start(
        self, span: int, parent: int | None, name: str, kind: SpanKind, at: float,
        attributes: dict[str, AttributeValue], effect: Effect | None = None,
    ) -> None:
        above = self._open.get(parent) if parent is not None else None
        # no parent of ours: the span active where the run runs (the application's), if any
        context = trace.set_span_in_context(above.span) if above is not None else None
        started = self.tracer.start_span(name, context=context, kind=kind, attributes=attributes, start_time=self._ns(at))
        self._open[span] = _Open(started, effect)

    def _end(self, span: int, outcome: OutcomeKind, error: str | None, at: float) -> _Open | None:
        opened = self._open.pop(span, None)
        if opened is None:
            return None
        opened.span.set_attribute("mcec.outcome", outcome)
        if outcome != "ok":
            kind = "cancelled" if outcome == "cancelled" else (error or outcome)
            opened.span.set_attribute("error.type", kind)
            opened.span.set_status(Status(StatusCode.ERROR, f"{outcome}: {kind}"))
        return opened

    def emit(self, event: Event) -> None:
        """Start, change or end the span ``event`` is about."""
        match event:
            case RunStarted(pipeline=name, site=site, span=span, parent=parent, at=at):
                attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **_code(site)}
                self._start(span, parent, f"invoke_agent {name}", SpanKind.INTERNAL, at, attributes)
            case RunEnded(span=span, outcome=outcome, at=at):
                opened = self._end(span, outcome, None, at)
                if opened is not None:
                    opened.span.end(end_time=self._ns(at))
            case EffectStarted(effect=effect, span=span, parent=parent, at=at):
                self._effect_started(effect, span, parent, at)
            case EffectEnded(span=span, outcome=outcome, error=error, at=at) as ended:
                opened = self._end(span, outcome, error, at)
                if opened is not None:
                    if ended.effect.kind == "model":
                        opened.span.set_attribute("gen_ai.usage.input_tokens", ended.prompt_tokens)
                        opened.span.set_attribute("gen_ai.usage.output_tokens", ended.completion_tokens)
                    opened.span.end(end_time=self._ns(at))
            case GroupStarted(site=site, index=index, total=total, span=span, parent=parent, at=at):
                name = site.step if site is not None else "group"
                attributes = {"mcec.group.total": total, **_code(site), **_index(index)}
                self._start(span, parent, name, SpanKind.INTERNAL, at, attributes)
            case EachProgress(span=span, done=done, failed=failed):
                group = self._open.get(span)
                if group is not None:
                    group.span.set_attributes({"mcec.group.done": done, "mcec.group.failed": failed})
            case GroupEnded(span=span, outcome=outcome, at=at):
                opened = self._end(span, outcome, None, at)
                if opened is not None:
                    opened.span.end(end_time=self._ns(at))
            case ModelRequest(span=span) as request:
                self._model_request(request, span)
            case ToolCalled(span=span) as called:
                self._tool_called(called, span)
            case PlanChecked(span=span, accepted=accepted, diagnostics=count, at=at):
                opened = self._open.get(span) if span is not None else None
                if opened is not None:
                    checked: dict[str, AttributeValue] = {"mcec.plan.accepted": accepted, "mcec.plan.diagnostics": count}
                    opened.span.add_event("mcec.plan.checked", checked, timestamp=self._ns(at))
            case TextDelta() | PartialOutput():
                pass  # streamed pieces of an answer: the chat span covers the call
            case _:
                assert_never(event)

    def _effect_started(self, effect: Effect, span: int, parent: int | None, at: float) -> None:
        site = effect.site
        name = site.step if site is not None else effect.kind
        attributes: dict[str, AttributeValue] = {**_code(site), **_index(effect.index)}
        match effect.kind:
            case "model":
                # the model's name comes with its first request (ModelRequest): until then, the step's
                attributes |= {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}
                self._start(span, parent, f"chat {name}", SpanKind.CLIENT, at, attributes, effect)
            case "tool":
                attributes |= {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "gen_ai.tool.type": "extension"}
                self._start(span, parent, f"execute_tool {name}", SpanKind.INTERNAL, at, attributes, effect)
            case "step" | "pause" | "human" | "element":  # a pause: a retry's wait, through the seam in a durable run
                attributes["mcec.effect.kind"] = effect.kind
                self._start(span, parent, name, SpanKind.INTERNAL, at, attributes, effect)
            case _:
                assert_never(effect.kind)

    def _model_request(self, request: ModelRequest, span: int | None) -> None:
        opened = self._open.get(span) if span is not None else None
        if opened is None:
            return
        model = request.model_id or request.model
        if opened.effect is not None and opened.effect.kind == "model":
            if opened.model is None:
                opened.model = model
                opened.span.update_name(f"chat {model}")
                opened.span.set_attribute("gen_ai.request.model", model)
        else:  # a user step that calls a model itself and counts its tokens (record_usage)
            attributes: dict[str, AttributeValue] = {
                "gen_ai.request.model": model,
                "gen_ai.usage.input_tokens": request.prompt_tokens,
                "gen_ai.usage.output_tokens": request.completion_tokens,
            }
            opened.span.add_event("gen_ai.model.request", attributes, timestamp=self._ns(request.at))

    def _tool_called(self, called: ToolCalled, span: int | None) -> None:
        opened = self._open.get(span) if span is not None else None
        if opened is None:
            return
        remote = {"mcec.tool.server": called.server, "mcec.tool.remote_name": called.tool}
        if opened.effect is not None and opened.effect.kind == "tool":
            opened.span.set_attributes(remote)
            return
        # a user step called the tool itself (call_tool): a span of its own under the step
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": called.tool,
            "gen_ai.tool.type": "extension",
            **remote,
        }
        context = trace.set_span_in_context(opened.span)
        start = self._ns(called.at - called.duration)
        child = self.tracer.start_span(
            f"execute_tool {called.tool}", context=context, kind=SpanKind.INTERNAL, attributes=attributes, start_time=start
        )
        child.set_attribute("mcec.outcome", "ok" if called.ok else "err")
        if not called.ok:
            child.set_attribute("error.type", "tool_call_failed")
            child.set_status(Status(StatusCode.ERROR, "the tool call failed"))
        child.end(end_time=self._ns(called.at))


def _index(index: tuple[int, ...]) -> dict[str, AttributeValue]:
    return {"mcec.element.index": list(index)} if index else {}


# ------------------------------------------------------------------------- the process's runs


@final
class _RunSpans:
    """The process-wide run sink :func:`instrument` adds (:func:`agentmonad.observe.add_run_sink`):
    a :class:`SpanSink` for each run, or ``None`` while the global provider is not configured."""

    __slots__ = ("provider", "proxy")

    def __init__(self, tracer_provider: TracerProvider | None) -> None:
        #: The provider the runs' spans go to; ``None`` until the global one is configured.
        self.provider = tracer_provider
        #: Not configured yet: the API's proxy provider, which gives a proxy tracer until the SDK
        #: is configured (``None``: configured, or the no-op provider for good).
        self.proxy: ProxyTracerProvider | None = None
        if tracer_provider is None:
            found = trace.get_tracer_provider()
            if isinstance(found, ProxyTracerProvider):
                self.proxy = found
            elif not isinstance(found, NoOpTracerProvider):
                self.provider = found

    def __call__(self) -> SpanSink | None:
        provider = self.provider
        if provider is None:
            # asked of the proxy kept, not of trace.get_tracer_provider(): that reads os.environ
            # each time, three times the cost (a run's one look should cost next to nothing)
            if self.proxy is None or isinstance(
                self.proxy.get_tracer(_INSTRUMENTATION, None, SCHEMA_URL), ProxyTracer
            ):
                return None
            # configured since: the global provider is set once per process (the API refuses a second)
            provider = trace.get_tracer_provider()
            if isinstance(provider, NoOpTracerProvider):
                self.proxy = None
                return None
            self.provider = provider
        return SpanSink(provider)


_instrumented: list[_RunSpans] = []


def instrument(tracer_provider: TracerProvider | None = None) -> None:
    """Make every run that starts in this process from now on — a compiled pipeline called from
    outside any run, ``mcec``'s interpreter, ``AgentMonad.run`` — emit its spans (the run's, its
    steps', tools', model calls', groups': see the module docstring) to ``tracer_provider``
    (default: the global one, looked up as each run starts, so that configuring the SDK after
    this call is fine). No ``with`` block is needed around each call; calling it again replaces
    the provider. :func:`uninstrument` undoes it."""
    uninstrument()
    spans = _RunSpans(tracer_provider)
    _instrumented.append(spans)
    add_run_sink(spans)


def uninstrument() -> None:
    """Undo :func:`instrument`: runs that start from now on emit no spans (unless a
    :class:`SpanSink` is attached around them)."""
    while _instrumented:
        remove_run_sink(_instrumented.pop())
