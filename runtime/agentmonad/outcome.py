"""The two tracks of a run: ``Ok`` (success) and ``Err`` (failure), plus ``Site``.

Both carry the state at that point: the computation is ``S -> IO (Either E A, S)``
(docs/language.md §6), so a failure keeps the state it failed in.

>>> Ok(1, "s") == Ok(1, "s")
True
>>> Err("boom", "s", Site("plan", "a.mce", 3, 5)) == Err("boom", "s")  # site is metadata
True
>>> match Ok(None, 0):
...     case Ok(value, state):
...         print(value, state)
None 0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeAlias, TypeVar, final

from ._show import safe_repr

__all__ = ["Ok", "Err", "Outcome", "Site"]

_S_co = TypeVar("_S_co", covariant=True)
_A_co = TypeVar("_A_co", covariant=True)
_E_co = TypeVar("_E_co", covariant=True)

_S = TypeVar("_S")
_E = TypeVar("_E")
_A = TypeVar("_A")


@final
@dataclass(frozen=True, slots=True)
class Site:
    """Where a step sits in its ``.mce`` file (1-based line and column).

    >>> str(Site("plan_action", "research.mce", 12, 5))
    'research.mce:12:5 (plan_action)'
    """

    step: str
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column} ({self.step})"

    @property
    def location(self) -> str:
        """``file:line:col`` without the step name."""
        return f"{self.file}:{self.line}:{self.column}"


@final
@dataclass(frozen=True, slots=True, repr=False)
class Ok(Generic[_S_co, _A_co]):
    """Success: the step's output ``value`` and the state after it.

    ``None`` is a perfectly good value: ``Ok(None, s)`` is a success. The repr
    never raises: a value whose own repr raises shows as ``<unprintable T object>``.
    """

    value: _A_co
    state: _S_co

    def __repr__(self) -> str:
        return f"Ok(value={safe_repr(self.value)}, state={safe_repr(self.state)})"


@final
@dataclass(frozen=True, slots=True, repr=False)
class Err(Generic[_S_co, _E_co]):
    """Failure: the ``error`` value and the state at the failure.

    ``site`` names the step (and its ``.mce`` location) that failed when known.
    It is metadata: it takes no part in ``==`` or ``hash``, so two runs that fail
    with the same error and state compare equal whichever step recorded them.
    The repr never raises, like ``Ok``'s.
    """

    error: _E_co
    state: _S_co
    site: Site | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        return f"Err(error={safe_repr(self.error)}, state={safe_repr(self.state)}, site={self.site!r})"


# Written Err-first on purpose: a generic alias takes its parameters in order of
# first appearance, and the contract's order is ``Outcome[S, E, A]``.
Outcome: TypeAlias = Err[_S, _E] | Ok[_S, _A]
"""``Outcome[S, E, A]`` = ``Ok[S, A] | Err[S, E]``: the result of a step or pipeline."""
