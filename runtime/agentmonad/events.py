"""What a run does, as events: one stream, several consumers (the timeline, progress, OpenTelemetry).

Attach an :class:`EventSink` (anything with ``emit(event)``) with
:func:`agentmonad.context.hooks` ``(events=sink)`` and every run started inside tells it
what happens, as the frozen dataclasses of the union :data:`Event`:

- :class:`RunStarted` / :class:`RunEnded`: a pipeline's run (the CLI's, :func:`observe`'s,
  ``AgentMonad.run``'s) begins and ends, with its outcome kind;
- :class:`EffectStarted` / :class:`EffectEnded`: an effect (a user step, a ``fn``, an MCP tool,
  a model: an :class:`Effect`, with its ``.mce`` site and its element index
  inside ``each``/``par``) begins and ends, with its duration, outcome kind and tokens;
- :class:`GroupStarted` / :class:`GroupEnded` and :class:`EachProgress`: a ``par``/``each``
  group's branches start, finish one by one, and the group ends;
- :class:`ModelRequest`: one request to a model, with its token usage;
- :class:`TextDelta` / :class:`PartialOutput`: a streamed model call's text so far and typed
  partial output;
- :class:`ToolCalled`: an MCP tool was called on a server;
- :class:`PlanChecked`: a checked plan was accepted or rejected by the compiler's checks.

Every event has ``at``, a monotonic timestamp in seconds (``time.monotonic()``; only
differences mean something). The events that open something (a run, an effect, a group)
carry ``span``, a number unique in the process, and ``parent``, the span they run inside
(``None`` at the top): a consumer rebuilds the run's tree from these without guessing (a
``par`` branch's effects have the group's span as their parent). The other events carry
``span``, the innermost span open where they were made (``None`` outside any, or when the
code that made it did not say: ``agentmonad.observe.current_span()`` gives it).

Attaching nothing costs nothing: no event is built unless an event sink is attached (the
effect seam's callers make one attribute test, ``RunContext.hooked``). A sink is called in
the task of the code it reports on; it must not raise (an exception from ``emit`` propagates
into the run) and should return quickly.

:func:`agentmonad.observe.observe` iterates over a run's events in Python (``async for
event in …``), the Outcome at the end; :func:`agentmonad.observe.emit` sends an event to the
sink attached where it is called. (This module defines the events and the spans the runtime
opens; it imports nothing of the run context, which refers to it.)
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias, final

from .errors import Defect
from .outcome import Err, Site

__all__ = [
    "Event",
    "OutcomeKind",
    "RunStarted",
    "RunEnded",
    "EffectStarted",
    "EffectEnded",
    "GroupStarted",
    "GroupEnded",
    "EachProgress",
    "ModelRequest",
    "TextDelta",
    "PartialOutput",
    "ToolCalled",
    "PlanChecked",
    "Effect",
    "EffectKind",
    "EventSink",
    "Fanout",
    "OpenSpan",
    "new_span_id",
    "count_tokens",
    "outcome_kind",
    "failure_kind",
]

#: How something ended: ``ok`` (an ``Ok``, a value); ``err`` (an ``Err``, or an exception the
#: step raised — the seam does not know which errors a step declares: the step contract then
#: makes an undeclared one a Defect, which the run's or group's outcome shows); ``defect`` (a
#: ``Defect`` from a nested run, anything not an ``Exception``); ``cancelled`` (a timeout, a
#: failing sibling, the user).
OutcomeKind = Literal["ok", "err", "defect", "cancelled"]

_spans = itertools.count(1)


def new_span_id() -> int:
    """A span number never given before in this process."""
    return next(_spans)


def now() -> float:
    """The events' clock: ``time.monotonic()``."""
    return time.monotonic()


@final
@dataclass(slots=True)
class OpenSpan:
    """A span open where code runs (an effect, a group, a run; ``RunContext.span``): what the
    events made inside it are attributed to, and the tokens its model requests counted."""

    span: int
    effect: Effect | None
    prompt_tokens: int = 0
    completion_tokens: int = 0


# ------------------------------------------------------------------------- effects


#: What kind of effect: a user step (sync or async), an MCP tool, a model, a
#: ``retry``'s pause between attempts (through the seam only when a journal is attached: its
#: length is drawn at random, so a durable run records it and does not sleep again on replay),
#: a person's answer to an ``ask`` step (:mod:`agentmonad.human`), an ``each`` element run by
#: another process of a durable run (:mod:`agentmonad.durable.elements`; its effects are that
#: process's).
#: A pure ``fn`` is no effect (docs/language.md §14): it reads its argument, touches nothing
#: outside the run and re-runs on replay, so no hook sees it.
EffectKind = Literal["step", "tool", "model", "pause", "human", "element"]


@final
@dataclass(frozen=True, slots=True)
class Effect:
    """One effect of a run, as hooks see it (:mod:`agentmonad.effects`): its ``kind``, its
    ``site`` in the spec (``None`` for a step built without one), and ``index``, the element
    indices of the ``each``/``par`` branches it runs in, outermost first (``()`` outside any).
    A ``"human"`` effect carries its ``question`` (an :class:`agentmonad.human.Question`, typed
    ``object`` here so that this module stays below the one that asks: what a durable journal parks
    on and a sink may show); it takes no part in comparing effects."""

    kind: EffectKind
    site: Site | None
    index: tuple[int, ...]
    question: object = field(default=None, compare=False)



# ------------------------------------------------------------------------- the events


@final
@dataclass(frozen=True, slots=True)
class RunStarted:
    """A run of ``pipeline`` began. ``site`` is where the pipeline is declared, when known;
    ``parent`` the span it runs inside (a step that runs a nested pipeline or a plan)."""

    pipeline: str
    site: Site | None
    span: int
    parent: int | None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run ``span`` of ``pipeline`` ended, ``outcome`` telling how, after ``duration`` seconds."""

    pipeline: str
    span: int
    outcome: OutcomeKind
    duration: float
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class EffectStarted:
    """``effect`` (a step, ``fn``, tool or model call at its site) began, as span ``span``
    inside ``parent`` (its group's span in a ``par``/``each`` branch, else the run's)."""

    effect: Effect
    span: int
    parent: int | None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class EffectEnded:
    """``effect`` (span ``span``) ended after ``duration`` seconds: ``outcome`` tells how
    (:data:`OutcomeKind`), ``error`` names the error's type when it did not succeed. The
    tokens are those its model requests used (both 0 when it made none)."""

    effect: Effect
    span: int
    outcome: OutcomeKind
    duration: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class GroupStarted:
    """A ``par``/``each`` group at ``site`` (``site.step`` is ``par`` or ``each`` for a spec's
    group) began its ``total`` branches, as span ``span``; ``index`` is the element index of
    the branch it runs in (its branches' effects have ``index + (i, …)``)."""

    site: Site | None
    index: tuple[int, ...]
    total: int
    span: int
    parent: int | None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class GroupEnded:
    """The group ``span`` ended (``outcome``: the group's own, a failing branch makes it ``err``)."""

    site: Site | None
    span: int
    outcome: OutcomeKind
    duration: float
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class EachProgress:
    """A branch of the group at ``site`` (span ``span``, in the branch ``index``) finished:
    ``done`` of ``total`` have, ``failed`` of them with an ``Err`` or a Defect. Emitted for
    ``par`` groups too; a progress bar is ``done``/``total``."""

    site: Site | None
    index: tuple[int, ...]
    done: int
    total: int
    failed: int
    span: int
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to model ``model`` (the spec's declaration name; ``model_id`` the model the
    request named, e.g. ``gpt-4o-mini``, when known) answered, using ``prompt_tokens`` +
    ``completion_tokens``. ``effect`` is the effect that made it (a model call, or a user step
    that counts its own tokens with ``record_usage``), ``None`` outside any."""

    effect: Effect | None
    model: str
    model_id: str | None
    prompt_tokens: int
    completion_tokens: int
    span: int | None = None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class TextDelta:
    """A streamed model call (``effect``) produced ``text``, the next piece of its answer."""

    effect: Effect | None
    text: str
    span: int | None = None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class PartialOutput:
    """A streamed model call with a structured output (``effect``) has parsed ``value`` so far:
    an instance of the output's generated partial type (every field optional)."""

    effect: Effect | None
    value: object
    span: int | None = None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class ToolCalled:
    """The MCP tool ``tool`` of server ``server`` was called (by ``effect``: a spec's ``tool``
    step, or a user step calling ``call_tool``) and answered after ``duration`` seconds; ``ok``
    is false when it answered with an error result or the call failed."""

    effect: Effect | None
    tool: str
    server: str
    ok: bool
    duration: float
    span: int | None = None
    at: float = field(default_factory=now)


@final
@dataclass(frozen=True, slots=True)
class PlanChecked:
    """A checked plan was checked by the compiler: ``accepted``, or rejected with
    ``diagnostics`` errors (an accepted plan's count is 0). ``site`` is the ``spawn``'s."""

    site: Site | None
    accepted: bool
    diagnostics: int
    span: int | None = None
    at: float = field(default_factory=now)


#: Every event a run emits.
Event: TypeAlias = (
    RunStarted
    | RunEnded
    | EffectStarted
    | EffectEnded
    | GroupStarted
    | GroupEnded
    | EachProgress
    | ModelRequest
    | TextDelta
    | PartialOutput
    | ToolCalled
    | PlanChecked
)


class EventSink(Protocol):
    """Where a traced, observed or streamed run sends what it does (this module).

    ``None`` in ``RunContext.events`` (the default): no event is made."""

    def emit(self, event: Event) -> None:
        """Take ``event`` (one of :data:`Event`); called in the task of the
        code it reports on. It must not raise, and should return quickly."""
        ...



@final
class Fanout:
    """An event sink that hands every event to each of ``sinks``, in order (a timeline and a
    progress display, say)."""

    __slots__ = ("sinks",)

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, event: Event) -> None:
        """Hand ``event`` to every sink."""
        for sink in self.sinks:
            sink.emit(event)


def outcome_kind(result: object) -> OutcomeKind:
    """How a call that returned ``result`` ended: ``err`` for an ``Err``, else ``ok``."""
    return "err" if type(result) is Err else "ok"


def failure_kind(exc: BaseException) -> OutcomeKind:
    """How a call that raised ``exc`` ended: ``cancelled``; ``defect`` (a Defect, or not an
    ``Exception``); or ``err`` (an exception a step raised: see :data:`OutcomeKind`)."""
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    if isinstance(exc, Defect) or not isinstance(exc, Exception):
        return "defect"
    return "err"


def count_tokens(
    sink: EventSink, opened: OpenSpan | None, model: str, model_id: str | None, prompt_tokens: int, completion_tokens: int
) -> None:
    """A model request used these tokens, inside span ``opened`` (``record_usage`` calls this when
    an event sink is attached): add them to that span's effect and emit :class:`ModelRequest`."""
    if opened is not None:
        opened.prompt_tokens += prompt_tokens
        opened.completion_tokens += completion_tokens
        sink.emit(ModelRequest(opened.effect, model, model_id, prompt_tokens, completion_tokens, opened.span))
    else:
        sink.emit(ModelRequest(None, model, model_id, prompt_tokens, completion_tokens))
