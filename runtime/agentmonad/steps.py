"""Lifting implementations into Kleisli arrows ``A -> AgentMonad[S, E, B]``.

>>> def plan(state: int, q: str) -> Outcome[int, KeyError, str]:
...     return Ok(q.upper(), state + 1)
>>> plan_k = lift_step(plan, name="plan", errors=(KeyError,))
>>> shout = lift_fn(lambda s: s + "!", name="shout")
>>> plan_k("hi").then(shout).run_sync(0)
Ok(value='HI!', state=1)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Never, TypeVar

from .context import EffectKind
from .monad import AgentMonad, FnSpec, StepSpec
from .outcome import Ok, Outcome, Site

__all__ = ["lift_step", "lift_fn", "StepSpec", "FnSpec"]

_S = TypeVar("_S")
_A = TypeVar("_A")
_B = TypeVar("_B")
_E = TypeVar("_E")

_ = Ok  # re-exported for the doctest above


def _site(name: str, site: Site | None) -> Site:
    # Without a known location the site still names the step, so every Err and
    # Defect says which step failed; line 0 means "location unknown".
    return site if site is not None else Site(name, "<unknown>", 0, 0)


def lift_step(
    impl: Callable[[_S, _A], Outcome[_S, _E, _B]]
    | Callable[[_S, _A], Awaitable[Outcome[_S, _E, _B]]],
    *,
    name: str,
    errors: Sequence[type[_E]] | Sequence[type],
    site: Site | None = None,
    is_async: bool = False,
    kind: EffectKind | None = "step",
) -> Callable[[_A], AgentMonad[_S, _E, _B]]:
    """Turn a ``step`` implementation ``f(state, value) -> Outcome`` (an
    ``async def`` when ``is_async``) into a Kleisli arrow.

    The step contract (docs/language.md §3) is enforced when it runs: raising one of
    ``errors`` is ``Err(exc, state_received, site)``; an ``Err`` of another type,
    a non-``Outcome`` return, or any other exception is a ``Defect``. ``kind`` is what
    its calls are to hooks attached to a run (:mod:`agentmonad.effects`): a user
    ``step``, an MCP ``tool``, a ``model`` (``None``: no effect of its own, see ``StepSpec.kind``).
    """
    return StepSpec(impl, name, tuple(errors), _site(name, site), is_async, kind)


def lift_fn(
    impl: Callable[[_A], _B], *, name: str, site: Site | None = None
) -> Callable[[_A], AgentMonad[_S, Never, _B]]:
    """Turn an ``fn`` implementation ``f(value) -> B`` into a Kleisli arrow
    that sees no state and cannot fail (an exception in it is a ``Defect``)."""
    return FnSpec(impl, name, _site(name, site))
