"""What generated code calls: type aliases, the slow paths and the groups.

Generated code is straight-line: per step a call, an ``isinstance`` check and
two assignments (docs/DESIGN.md). It calls into this module only when a step
did not return ``Ok`` (``stop``), when a step raised (``raised``), and for
parallel groups (:func:`group` for ``par``, :func:`each`), which share
``run_group`` with ``AgentMonad.par``/``each``, and for v2 control flow:
``await retry_pause(attempt, backoff)`` between the attempts of a ``retry``
(and, in a ``retry`` whose body can reach a ``spawn``, ``remember_failure``, which
shows the next attempt's planner how this one failed; that ``retry`` ends with
``forget_failure``)
and ``with Deadline(S)`` for a ``timeout`` (both from
:mod:`agentmonad.control`, which ``AgentMonad.retry``/``timeout`` use too),
and inside a timed body ``note_reached(state)`` where a
cancellation leaves an async step or a ``local``, so that the timeout reports
the state the body had reached however deep in helpers it was interrupted.

**The run context and the effect seam.** Everything a run holds besides the
spec's state — open model and tool scopes, token meters and budgets, the
deadlines and budgets (*guards*) around the current code, a retry's last
failure, and the hooks (journal, event sink, human input) — is one
``RunContext`` in one ``ContextVar`` (:mod:`agentmonad.context`). A ``budget``
entered here pushes itself as a guard; a task's first ``Deadline`` pushes the
task's clock, which lists its deadlines from then on; ``note_reached(state)``
tells the guards whose own cancellation is unwinding which state the
interrupted await started from, so nothing rides on the exception. With a hook
attached (``RunContext.hooked``) an effect goes through
:mod:`agentmonad.effects` with its site and its ``each``/``par`` element index,
as in the interpreter. A generated function that calls steps reads the run
context once at entry, ``run = hooked_run() if hooks_alive else None``
(``None`` with no hook attached, the default; :data:`hooks_alive` is empty
while no hooked run context exists in the process, so a process that never
attaches a hook does not read the ``ContextVar`` at all), and per step,
tool or model call hands it to :func:`step_effect` or
:func:`async_step_effect` with its kind and ``SITE_n``
when ``run`` is not ``None`` and otherwise makes the plain call (last, so
that with no hook it is the fall-through). A pure ``fn`` is no effect
(docs/language.md §14): it is always the plain call::

    if run is not None:
        r = step_effect(run, "step", SITE_1, inc, state, value)
    else:
        r = inc(state, value)

Each function reads it anew because an ``each``/``par`` branch runs in a task
whose run context carries its element index (``run_group``).

Everything here is typed so that mypy, checking a generated module, sees every
value type and error set as the checker computed it: a ``par`` group is built
branch by branch (``group(b1).also(b2)``), each step of the chain adding its
output to the group's tuple type and its errors to its error set, and the way
a group merges states says whether ``MergeConflict`` can happen. Generated code
needs no ``cast``.

Type-alias parameter order is ``[S, A, B, E]`` (state, input, output, errors):

- ``Step[S, A, B, E]``      = ``Callable[[S, A], Outcome[S, E, B]]``
- ``AsyncStep[S, A, B, E]`` = ``Callable[[S, A], Awaitable[Outcome[S, E, B]]]``
- ``Fn[A, B]``              = ``Callable[[A], B]``
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Generic, TypeAlias, TypeVar, TypeVarTuple, Unpack, cast

from ._show import callable_name
from .concurrency import elements_start, run_group
from .context import HOOKS_ALIVE, EffectKind, RunContext, current_run_context
from .contract import raised
from .contract import stop as _stop
from .control import Deadline, forget_failure, note_reached, remember_failure, retry_pause
from .effects import perform, perform_sync
from .errors import MergeConflict
from .merge import merge_states
from .events import EventSink
from .observe import RUN_SINKS, observed_run, run_sink
from .outcome import Err, Ok, Outcome, Site

__all__ = [
    "Step",
    "AsyncStep",
    "Fn",
    "Branch",
    "Group",
    "stop",
    "raised",
    "group",
    "each",
    "each_merged",
    "each_merging",
    "par",
    "each_values",
    "declared_merge",
    "MergeContractError",
    "Deadline",
    "note_reached",
    "retry_pause",
    "remember_failure",
    "forget_failure",
    "hooks_alive",
    "hooked_run",
    "run_sinks",
    "run_sink",
    "observed_pipeline",
    "step_effect",
    "async_step_effect",
    "fn_effect",
]

_S = TypeVar("_S")
_A = TypeVar("_A")
_B = TypeVar("_B")
_E = TypeVar("_E")
_E2 = TypeVar("_E2")
_Ts = TypeVarTuple("_Ts")
_R = TypeVar("_R")

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


#: Empty while no run context with a hook attached exists in the process
#: (:data:`agentmonad.context.HOOKS_ALIVE`): a generated function tests it before it reads its
#: run context, ``run = hooked_run() if hooks_alive else None``, so that with nothing attached
#: its entry costs one global read and no ``ContextVar`` read.
hooks_alive = HOOKS_ALIVE


#: The process-wide run sinks (:data:`agentmonad.observe.RUN_SINKS`, what
#: ``agentmonad.otel.instrument`` adds to). A pipeline's function tells its own run — a
#: ``RunStarted`` before its events, a ``RunEnded`` after — when it is called from outside any
#: run with something listening; its entry tests, one global read each::
#:
#:     if hooks_alive or run_sinks:
#:         sink = run_sink()
#:         if sink is not None:
#:             return await observed_pipeline(sink, "answer", SITE_0, answer, state, value)
#:
#: (the call inside runs in the run's span, where ``run_sink()`` is ``None``: the body runs).
run_sinks = RUN_SINKS


async def observed_pipeline(
    sink: EventSink, pipeline: str, site: Site, function: Callable[[_S, _A], Awaitable[_R]], state: _S, value: _A
) -> _R:
    """``await function(state, value)``, the run of ``pipeline`` declared at ``site``, told to
    ``sink`` (:func:`agentmonad.observe.observed_run`). Arguments, not a ``lambda`` in the
    generated function: a closure would make its ``state`` and ``value`` cells, every step's
    access to them slower."""
    return await observed_run(sink, pipeline, site, lambda: function(state, value))


def hooked_run() -> RunContext | None:
    """The run context when a hook is attached (every effect then goes through
    :mod:`agentmonad.effects`), else ``None``: what a generated function reads once at entry,
    when :data:`hooks_alive` is not empty (another run's hook makes it read, not go through)."""
    run = current_run_context()
    return run if run.hooked else None


def step_effect(
    run: RunContext, kind: EffectKind, site: Site, step: Callable[[_S, _A], _R], state: _S, value: _A
) -> _R:
    """``step(state, value)`` (a sync step) through the effect seam, as an effect of ``kind`` at ``site``."""
    return perform_sync(run, kind, site, lambda: step(state, value))


async def async_step_effect(
    run: RunContext, kind: EffectKind, site: Site, step: Callable[[_S, _A], Awaitable[_R]], state: _S, value: _A
) -> _R:
    """``await step(state, value)`` (an async step, a tool, a model) through the effect seam."""
    return await perform(run, kind, site, lambda: step(state, value))


def fn_effect(run: RunContext, site: Site, fn: Callable[[_A], _B], value: _A) -> _B:
    """``fn(value)``: what modules generated before a pure fn stopped being an effect (issue 48,
    docs/language.md §14) call for a fn while hooked; kept so that they run on this runtime
    unchanged. Generated code now calls the fn itself."""
    return fn(value)


async def par(
    state: _S,
    value: Any,
    branches: Sequence[Callable[[_S, Any], Coroutine[Any, Any, Outcome[_S, Any, Any]]]],
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
) -> Outcome[_S, Any, tuple[Any, ...]]:
    """Run every branch on ``(state, value)`` concurrently (docs/language.md §6): the untyped core of
    :class:`Group`.

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


class Group(Generic[_S, _A, _E, Unpack[_Ts]]):
    """A ``par`` group's branches, typed: ``Group[S, A, E, B1, …, Bn]`` runs each branch on an
    ``A`` and gives ``tuple[B1, …, Bn]``, failing with ``E`` (the union of the branches' errors).

    Built with :func:`group` and :meth:`also`; run with :meth:`run` (no branch changes
    state), :meth:`run_merged` (a merge that cannot conflict: one branch changes state, or
    the file declares its merge) or :meth:`run_merging` (the default merge over two or more
    stateful branches, which adds ``MergeConflict``).
    """

    __slots__ = ("_branches", "_count")

    def __init__(self, branches: list[Branch[_S, _A]], count: int) -> None:
        # The first ``count`` entries of ``branches`` are this group's. Groups grown from one
        # another share the list, so building an n-branch group with ``also`` is O(n), not
        # O(n²) (a ``par`` of 10,000 branches is built on every call).
        self._branches = branches
        self._count = count

    def also(
        self, branch: Callable[[_S, _A], Coroutine[Any, Any, Ok[_S, _B] | Err[_S, _E2]]]
    ) -> Group[_S, _A, _E | _E2, Unpack[_Ts], _B]:
        """This group with one more branch, last (this group itself is unchanged)."""
        branches = self._branches
        if len(branches) != self._count:  # a group grown from this one already appended: copy
            branches = branches[: self._count]
        branches.append(branch)
        return Group(branches, self._count + 1)

    async def run(self, state: _S, value: _A, site: Site) -> Ok[_S, tuple[Unpack[_Ts]]] | Err[_S, _E]:
        """Run the branches concurrently; none changes state, so the state stays ``state``."""
        return await self._run(state, value, None, site)

    async def run_merged(
        self, state: _S, value: _A, merge: Callable[[_S, Sequence[_S]], _S], site: Site
    ) -> Ok[_S, tuple[Unpack[_Ts]]] | Err[_S, _E]:
        """Run the branches and merge their states with ``merge``, which cannot conflict here:
        a ``MergeConflict`` from it breaks that promise and is a ``Defect``."""
        return await self._run(state, value, declared_merge(merge), site)

    async def run_merging(
        self, state: _S, value: _A, site: Site
    ) -> Ok[_S, tuple[Unpack[_Ts]]] | Err[_S, _E | MergeConflict]:
        """Run the branches and merge their states by field (:func:`~agentmonad.merge_states`)."""
        return await self._run(state, value, merge_states, site)

    async def _run(
        self, state: _S, value: _A, merge: Callable[[_S, Sequence[_S]], _S] | None, site: Site
    ) -> Ok[_S, tuple[Unpack[_Ts]]] | Err[_S, Any]:
        branches = self._branches
        out = await run_group(state, self._count, lambda i: branches[i](state, value), None, merge, site)
        if type(out) is Ok:
            # the values come back in branch order: the tuple type this group was built with
            return Ok(cast("tuple[Unpack[_Ts]]", tuple(out.value)), out.state)
        return out


def group(branch: Callable[[_S, _A], Coroutine[Any, Any, Ok[_S, _B] | Err[_S, _E]]]) -> Group[_S, _A, _E, _B]:
    """A :class:`Group` of one branch, to grow with :meth:`Group.also`."""
    return Group([branch], 1)


async def each_values(
    state: _S,
    values: Sequence[Any],
    body: Callable[[_S, Any], Coroutine[Any, Any, Outcome[_S, Any, Any]]],
    limit: int | None,
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
) -> Outcome[_S, Any, list[Any]]:
    """``par`` of ``body`` over ``values``, in list order, at most ``limit`` at once (``None``:
    no limit): the untyped core of :func:`each`. Branch coroutines are created only as they
    start, so a long list with a limit holds at most ``limit`` of them. ``each`` of ``[]`` is
    ``Ok([], state)``."""
    return await run_group(state, len(values), lambda i: body(state, values[i]), limit, merge, site)


async def each(
    state: _S,
    values: Sequence[_A],
    body: Callable[[_S, _A], Coroutine[Any, Any, Ok[_S, _B] | Err[_S, _E]]],
    limit: int | None,
    site: Site,
) -> Ok[_S, list[_B]] | Err[_S, _E]:
    """``each``: ``body`` over ``values`` (see :func:`each_values`); the body changes no state."""
    return await _each(state, values, body, limit, None, site)


async def each_merged(
    state: _S,
    values: Sequence[_A],
    body: Callable[[_S, _A], Coroutine[Any, Any, Ok[_S, _B] | Err[_S, _E]]],
    limit: int | None,
    merge: Callable[[_S, Sequence[_S]], _S],
    site: Site,
) -> Ok[_S, list[_B]] | Err[_S, _E]:
    """``each`` in a file that declares its merge: ``merge`` cannot conflict (a ``MergeConflict``
    from it is a ``Defect``)."""
    return await _each(state, values, body, limit, declared_merge(merge), site)


async def each_merging(
    state: _S,
    values: Sequence[_A],
    body: Callable[[_S, _A], Coroutine[Any, Any, Ok[_S, _B] | Err[_S, _E]]],
    limit: int | None,
    site: Site,
) -> Ok[_S, list[_B]] | Err[_S, _E | MergeConflict]:
    """``each`` over a stateful body: the runs' states are merged by field (``merge_states``)."""
    return await _each(state, values, body, limit, merge_states, site)


async def _each(
    state: _S,
    values: Sequence[_A],
    body: Callable[[_S, _A], Coroutine[Any, Any, Ok[_S, _B] | Err[_S, _E]]],
    limit: int | None,
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site,
) -> Ok[_S, list[_B]] | Err[_S, Any]:
    start: Callable[[int], Coroutine[Any, Any, Outcome[Any, Any, Any]]] | None = None
    if HOOKS_ALIVE:  # a durable run may hand the elements to workers; the body is a module-level function
        name = getattr(body, "__qualname__", "<")
        if "<" not in name and "." not in name:  # a worker finds it by this name in its own compiled module
            start = elements_start(state, values, name, limit, site)
    if start is None:
        start = lambda i: body(state, values[i])  # noqa: E731
    out = await run_group(state, len(values), start, limit, merge, site)
    return cast("Ok[_S, list[_B]] | Err[_S, Any]", out)


class MergeContractError(Exception):
    """A merge that cannot conflict (a declared merge, or the default merge over one stateful
    branch) raised ``MergeConflict``: the Defect's cause."""


def declared_merge(merge: Callable[[_S, Sequence[_S]], _S]) -> Callable[[_S, Sequence[_S]], _S]:
    """``merge`` as a group calls it where the checker proved no ``MergeConflict`` can happen.

    That is a file that declares ``state T merge f`` (no ``MergeConflict`` in any
    error set, docs/language.md §5), or the default merge over a group with exactly
    one stateful branch (a field only one branch changes takes its value). So
    callers are never told to expect one: ``merge`` raising it breaks the
    contract like any other exception from a merge, and becomes a ``Defect`` at
    the group (with the group's input state) instead of an ``Err`` outside the
    declared errors. The conflict is kept as the cause's ``__cause__``.
    """

    def merged(base: _S, branches: Sequence[_S]) -> _S:
        try:
            return merge(base, branches)
        except MergeConflict as conflict:
            raise MergeContractError(
                f"the merge {callable_name(merge)} raised MergeConflict ({conflict}) where none can happen: "
                "the group has one stateful branch, or the file declares its merge"
            ) from conflict

    merged.__wrapped__ = merge  # type: ignore[attr-defined]
    return merged
