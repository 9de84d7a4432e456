"""What generated code calls: type aliases, the slow paths and the groups.

Generated code is straight-line: per step a call, an ``isinstance`` check and
two assignments (docs/DESIGN.md). It calls into this module only when a step
did not return ``Ok`` (``stop``), when a step raised (``raised``), and for
parallel groups (``par``, ``each``), which share ``run_group`` with
``AgentMonad.par``/``each``.

Type-alias parameter order is ``[S, A, B, E]`` (state, input, output, errors):

- ``Step[S, A, B, E]``      = ``Callable[[S, A], Outcome[S, E, B]]``
- ``AsyncStep[S, A, B, E]`` = ``Callable[[S, A], Awaitable[Outcome[S, E, B]]]``
- ``Fn[A, B]``              = ``Callable[[A], B]``
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeAlias, TypeVar

from ._show import callable_name
from .concurrency import run_group
from .contract import raised
from .contract import stop as _stop
from .errors import MergeConflict
from .outcome import Err, Ok, Outcome, Site

__all__ = ["Step", "AsyncStep", "Fn", "Branch", "stop", "raised", "par", "each", "declared_merge", "MergeContractError"]

_S = TypeVar("_S")
_A = TypeVar("_A")
_B = TypeVar("_B")
_E = TypeVar("_E")

# Spelled ``Ok[S, B] | Err[S, E]`` rather than ``Outcome[S, E, B]`` so that the
# alias parameters appear in the documented order S, A, B, E (a generic alias
# takes its parameters in order of first appearance).
Step: TypeAlias = Callable[[_S, _A], Ok[_S, _B] | Err[_S, _E]]
AsyncStep: TypeAlias = Callable[[_S, _A], Awaitable[Ok[_S, _B] | Err[_S, _E]]]
Fn: TypeAlias = Callable[[_A], _B]
Branch: TypeAlias = Callable[[_S, _A], Coroutine[Any, Any, Outcome[_S, Any, Any]]]
"""A ``par`` branch or ``each`` body: an ``async def (state, value) -> Outcome``."""


def stop(
    result: Err[_S, _E], site: Site, errors: tuple[type, ...], *, state: object = None
) -> Err[_S, _E]:
    """A step returned something other than ``Ok`` (see ``contract.stop``).

    Statically ``result`` is the step's ``Err[S, E]`` (generated code calls this
    after ``isinstance(r, Ok)`` failed), and it comes back with that type, so
    mypy checks the step's errors ``E`` against the pipeline's declared ones —
    which settles what the checker must leave open when two user error classes
    might be related. At run time anything is accepted: a non-``Outcome``
    result, or an ``Err`` of an undeclared type, raises ``Defect``.
    """
    return _stop(result, site, errors, state=state)


async def par(
    state: _S,
    value: Any,
    branches: Sequence[Callable[[_S, Any], Coroutine[Any, Any, Outcome[_S, Any, Any]]]],
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
) -> Outcome[_S, Any, tuple[Any, ...]]:
    """Run every branch on ``(state, value)`` concurrently (LANGUAGE.md §6).

    Fail-fast: the first ``Err`` observed wins and the other branches are
    cancelled and awaited; a ``Defect`` propagates with the others attached.
    On success: the outputs as a tuple in source order, and the state
    ``merge(state, branch_states)`` (``merge=None``: no branch is stateful, the
    state stays ``state``). A ``MergeConflict`` gives ``Err(conflict, state, site)``.
    """
    out = await run_group(
        state, len(branches), lambda i: branches[i](state, value), None, merge, site
    )
    if type(out) is Ok:
        return Ok(tuple(out.value), out.state)
    return out


async def each(
    state: _S,
    values: Sequence[Any],
    body: Callable[[_S, Any], Coroutine[Any, Any, Outcome[_S, Any, Any]]],
    limit: int | None,
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
) -> Outcome[_S, Any, list[Any]]:
    """``par`` of ``body`` over ``values``, in list order, at most ``limit`` at
    once (``None``: no limit). Branch coroutines are created only as they start,
    so a long list with a limit holds at most ``limit`` of them.
    ``each`` of ``[]`` is ``Ok([], state)``."""
    return await run_group(
        state, len(values), lambda i: body(state, values[i]), limit, merge, site
    )


class MergeContractError(Exception):
    """A declared merge (``state T merge f``) raised ``MergeConflict``: the Defect's cause."""


def declared_merge(merge: Callable[[_S, Sequence[_S]], _S]) -> Callable[[_S, Sequence[_S]], _S]:
    """The merge of a file that declares ``state T merge f``, as groups must call it.

    Such a file has no ``MergeConflict`` in any error set (LANGUAGE.md §5), so
    callers are never told to expect one: ``f`` raising it breaks the contract
    like any other exception from a merge, and becomes a ``Defect`` at the
    group (with the group's input state) instead of an ``Err`` outside the
    declared errors. The conflict is kept as the cause's ``__cause__``.
    """

    def merged(base: _S, branches: Sequence[_S]) -> _S:
        try:
            return merge(base, branches)
        except MergeConflict as conflict:
            raise MergeContractError(
                f"the declared merge {callable_name(merge)} raised MergeConflict ({conflict}), "
                "but a file with a custom merge has no MergeConflict in its error sets"
            ) from conflict

    merged.__wrapped__ = merge  # type: ignore[attr-defined]
    return merged
