"""The step contract (docs/language.md §3), checked in one place.

A step either returns ``Ok``/``Err`` or raises. Raising one of its declared
error types is an ``Err`` with the state the step received; returning an
``Err`` whose error is not of a declared type, returning anything that is not
an ``Outcome``, or raising anything else is a ``Defect``. ``KeyboardInterrupt``,
``SystemExit`` and ``CancelledError`` are not ``Exception``\\ s and are never
caught here. Both the interpreter (``AgentMonad``) and generated code (through
``agentmonad.compiled``) use these functions, only on their slow paths.

The Defects raised here quote the offending value only when their message is
read, and through ``_show``: a value whose ``__repr__``/``__str__`` raises
still becomes a Defect like any other, never an exception of its own.
"""

from __future__ import annotations

import inspect
from typing import Any, NoReturn, TypeVar

from ._show import short_repr, type_name
from .errors import Defect
from .outcome import Err, Ok, Site

__all__ = ["stop", "raised", "fn_defect"]


_S = TypeVar("_S")
_E = TypeVar("_E")

def _names(errors: tuple[type, ...]) -> str:
    return " | ".join(t.__name__ for t in errors) if errors else "Never"


def stop(
    result: object, site: Site, errors: tuple[type, ...], *, state: object = None
) -> Err[Any, Any]:
    """A step at ``site`` returned ``result``, which is not an ``Ok``.

    An ``Err`` of a declared type comes back with ``site`` attached (a site it
    already has is kept: it names the innermost failing step). Anything else
    raises ``Defect``. ``state`` is the state the step received; it is reported
    only when ``result`` is not an ``Err`` (an ``Err`` carries its own).

    >>> site = Site("plan", "a.mce", 1, 1)
    >>> stop(Err(KeyError("k"), 0), site, (KeyError,)).site == site
    True
    >>> stop(Err("oops", 0), site, (KeyError,))
    Traceback (most recent call last):
    ...
    agentmonad.errors.Defect: defect in step 'plan' at a.mce:1:1: returned Err('oops'), but 'oops' is not a KeyError
    """
    if type(result) is Err:
        if isinstance(result.error, errors):
            if result.site is None:
                return Err(result.error, result.state, site)
            return result
        error = result.error

        def undeclared() -> str:
            shown = short_repr(error)
            return f"returned Err({shown}), but {shown} is not a {_names(errors)}"

        raise Defect(
            site,
            result.state,
            error if isinstance(error, BaseException) else None,
            reason=undeclared,
        )
    if type(result) is Ok:  # not a stop at all; callers check Ok first
        raise TypeError("stop() called with an Ok")
    if _is_awaitable(result):
        if inspect.iscoroutine(result):
            result.close()  # no "never awaited" warning on top of the defect
        name = type_name(result)
        raise Defect(site, state, reason=f"returned an awaitable ({name}); is it an async step?")
    raise Defect(site, state, reason=lambda: f"returned {short_repr(result)}, not an Ok or Err")


def _is_awaitable(value: object) -> bool:
    # ``inspect.isawaitable`` reads attributes of ``value``, which a hostile
    # object may make raise; such an object is simply not an awaitable here.
    try:
        return inspect.isawaitable(value)
    except Exception:
        return False


def raised(
    exc: Exception, site: Site, state: _S, errors: tuple[type[_E], ...]
) -> Err[_S, _E]:
    """The step at ``site`` raised ``exc`` while holding ``state``.

    A declared error becomes ``Err(exc, state, site)``; a ``Defect`` (from a
    nested run) is re-raised unchanged; anything else raises
    ``Defect(site, state, exc)``.

    >>> site = Site("plan", "a.mce", 1, 1)
    >>> raised(KeyError("k"), site, {"s": 1}, (KeyError,)).state
    {'s': 1}
    """
    if isinstance(exc, errors):
        return Err(exc, state, site)
    if isinstance(exc, Defect) or not isinstance(exc, Exception):
        # a nested run's Defect passes unchanged; KeyboardInterrupt, SystemExit
        # and CancelledError are never converted, even if handed to us
        raise exc
    raise Defect(site, state, exc) from exc


def fn_defect(exc: Exception, where: Site | str, state: object) -> NoReturn:
    """A pure function (``fn``, a ``map`` callback, a continuation) raised."""
    if isinstance(exc, Defect):
        raise exc
    raise Defect(where, state, exc) from exc
