"""The effect seam: the one place an effect of a run goes through when a hook is attached.

An *effect* is what a run does outside its own code: a user step's call, an MCP
tool's call, a model's call (and, with the human-input issue, a person's
answer). Durable runs (a journal), tracing and streaming (an event sink) and
human input each need to see every effect with its site, in one place: that
place is :func:`perform` (and :func:`perform_sync` for a sync step).

With nothing attached (``RunContext.hooked`` false, the default) a caller makes
the plain call itself: one attribute test of a run context it read once is the
whole cost (compiled code does not even read the context while no hooked one
exists in the process: ``agentmonad.context.HOOKS_ALIVE``, one global test per
generated function), so a run without hooks stays at the floor. With a hook attached the
caller hands the call to the seam, which tells the event sink that the effect
starts, runs it (or, with a journal, replays its recorded result or runs and records it), and tells the sink how it
ended (:mod:`agentmonad.events`: ``EffectStarted``/``EffectEnded``, with the span the
effect's own events — its model requests, tool calls, streamed text — are attributed to).

Which callers go through here today: the interpreter (``AgentMonad.run``, so
checked plans and ``mcec run --interpret``) for every step, tool and model call,
with the step's site and the element index inside ``each``/``par``
(``RunContext.index``); and compiled code, through ``agentmonad.compiled``'s
``step_effect``/``async_step_effect``, with the same effects for
the same spec (tests/codegen/test_differential.py; see docs/DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from .context import Effect as Effect
from .context import EffectKind as EffectKind
from .context import RunContext
from .observe import EffectSpan
from .outcome import Site

__all__ = ["EffectKind", "Effect", "perform", "perform_sync"]

_T = TypeVar("_T")

def _started(context: RunContext, effect: Effect) -> EffectSpan | None:
    """Tell the event sink, if any, that ``effect`` starts: the span to end (``None``: no sink)."""
    return EffectSpan(context.events, effect) if context.events is not None else None


def _ended(span: EffectSpan | None, result: object) -> None:
    if span is not None:
        span.ended(result)


def _failed(span: EffectSpan | None, exc: BaseException) -> None:
    if span is not None:
        span.failed(exc)


async def perform(context: RunContext, kind: EffectKind, site: Site | None, call: Callable[[], Awaitable[_T]],
                  question: object = None) -> _T:
    """Run ``call()`` (an async effect of ``kind`` at ``site``; a ``"human"`` one asks
    ``question``, an :class:`agentmonad.human.Question`) with the hooks of ``context`` told: the
    sink before and after (:class:`~agentmonad.events.EffectStarted`,
    :class:`~agentmonad.events.EffectEnded`); with a journal attached, the call runs only when the
    journal has no recorded result for it. An exception (a step's raised error, a cancellation) is
    told to the sink and propagates unchanged."""
    effect = Effect(kind, site, context.index, question)
    span = _started(context, effect)
    try:
        # a journal replays a recorded result, or runs the call and records it
        result = await (call() if context.journal is None else context.journal.perform(effect, call))
    except BaseException as exc:
        _failed(span, exc)
        raise
    _ended(span, result)
    return result


def perform_sync(context: RunContext, kind: EffectKind, site: Site | None, call: Callable[[], _T]) -> _T:
    """:func:`perform` for a sync effect (a sync step)."""
    effect = Effect(kind, site, context.index)
    span = _started(context, effect)
    try:
        result = call() if context.journal is None else context.journal.perform_sync(effect, call)
    except BaseException as exc:
        _failed(span, exc)
        raise
    _ended(span, result)
    return result
