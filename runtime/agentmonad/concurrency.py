"""The one concurrency core behind ``par`` and ``each`` (docs/language.md §6).

``run_group`` starts ``count`` branches (lazily, at most ``limit`` at once),
waits for them, and fails fast: the first ``Err`` observed wins, the other
branches are cancelled *and awaited* before it returns, so no task outlives the
group. A ``Defect`` (or any exception escaping a branch) cancels the others the
same way and propagates, with the Defects other branches raised meanwhile
attached to ``.others``. An outer cancellation cancels and awaits every branch,
then propagates — unless a branch raised a Defect (before or while being
cancelled): a bug beats a cancellation, as in ``asyncio.TaskGroup``, so it is
never lost. On success the outputs come back in source order and the
state is ``merge(state, branch_states)``.

Both ``AgentMonad.par``/``each`` and ``agentmonad.compiled.par``/``each`` call it.

An ``each`` with a limit may hand its elements to other processes: with an
:class:`Elements` hook attached to the run context (a durable run a worker took
from a queue, :mod:`agentmonad.durable.elements`), :func:`elements_start` makes
branch ``i`` a wait for element ``i``'s remote run instead of the body's own
run. The group is the same: its limit, order, fail-fast (a cancelled branch
cancels its remote element) and merge are run_group's.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, final

from ._show import short_repr
from .context import current_run_context, set_run_context
from .control import note_reached
from .errors import Defect, MergeConflict
from .observe import GroupSpan
from .outcome import Err, Ok, Outcome, Site

__all__ = ["run_group", "merge_outcome", "Elements", "ElementsHook", "elements_start", "give_up_slot"]

@final
@dataclass(frozen=True, slots=True)
class _Slots:
    """In the run context of a ``par``/``each`` group's branches (a hooked run): what gives element
    ``i``'s slot to the group's next element (:func:`give_up_slot`). Each group sets its own, so an
    inner group's branches see theirs."""

    give_up: Callable[[int], None]


def give_up_slot() -> None:
    """The branch running here waits on a person, not on work (a durable run's open question, see
    :meth:`agentmonad.durable.DurableJournal`): its group (the innermost ``each(limit=N)`` around it)
    starts its next element at once instead of when this one ends. So a batch's elements that need
    no answer all run, and every question of the batch is open at once, whatever ``limit`` says.
    Outside a group, nothing."""
    run = current_run_context()
    slots = run.part(_Slots)
    if slots is not None and run.index:
        slots.give_up(run.index[-1])

_S = TypeVar("_S")

Start = Callable[[int], Coroutine[Any, Any, Outcome[Any, Any, Any]]]


class Elements(Protocol):
    """Runs ``each`` elements in other processes (a durable run's queue: the element
    distributor of :mod:`agentmonad.durable.elements`)."""

    def takes(self, site: Site, limit: int | None) -> bool:
        """Whether the ``each`` at ``site`` (with ``limit``) hands its elements out."""
        ...

    def element(self, site: Site, index: int, state: Any, value: Any, body: str | None) -> Coroutine[Any, Any, Outcome[Any, Any, Any]]:
        """Element ``index`` of the ``each`` at ``site``, run elsewhere on ``(state, value)``:
        its Outcome. ``body`` names the compiled body function (``None``: the interpreter's
        ``each`` at ``site``). Runs in the element's branch context (``run_group`` sets it)."""
        ...


@final
@dataclass(frozen=True, slots=True)
class ElementsHook:
    """The :class:`Elements` attached to a run context (kept in ``RunContext.parts`` under this class)."""

    elements: Elements


def elements_start(
    state: Any, values: Sequence[Any], body: str | None, limit: int | None, site: Site | None
) -> Start | None:
    """The branches of an ``each`` when its elements run elsewhere (an :class:`ElementsHook`
    attached that takes this ``each``), else None (they run here)."""
    run = current_run_context()
    if not run.hooked or site is None:
        return None
    hook = run.part(ElementsHook)
    if hook is None or not hook.elements.takes(site, limit):
        return None
    elements = hook.elements
    return lambda i: elements.element(site, i, state, values[i], body)


def _as_defect(exc: Exception, site: Site | None, state: object) -> Defect:
    if isinstance(exc, Defect):
        return exc
    return Defect(site if site is not None else "<par>", state, exc)


def _not_an_outcome(result: object) -> Callable[[], str]:
    return lambda: f"a branch returned {short_repr(result)}, not an Ok or Err"


def merge_outcome(
    state: _S,
    values: list[Any],
    states: Sequence[_S],
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
) -> Ok[_S, list[Any]] | Err[_S, MergeConflict]:
    """Finish a successful group: merge the branch states into one."""
    if merge is None:
        return Ok(values, state)
    try:
        merged = merge(state, states)
    except MergeConflict as conflict:
        return Err(conflict, state, site)
    except Exception as exc:
        raise Defect(site if site is not None else "<merge>", state, exc) from exc
    return Ok(values, merged)


async def run_group(
    state: _S,
    count: int,
    start: Start,
    limit: int | None,
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
) -> Outcome[_S, Any, list[Any]]:
    """Run branches ``start(0) … start(count-1)``; see the module docstring.

    ``start(i)`` is called only when branch ``i`` may begin, so ``each`` over a
    long list with a limit holds at most ``limit`` coroutines at a time. With an
    event sink attached the group is a span (``GroupStarted``/``GroupEnded``, its
    branches inside it) and each finished branch an ``EachProgress``.
    """
    sink = current_run_context().events
    if sink is None:
        return await _run_group(state, count, start, limit, merge, site, None)
    group = GroupSpan(sink, site, count)
    try:
        out = await _run_group(state, count, start, limit, merge, site, group)
    except BaseException as exc:
        group.failed(exc)
        raise
    group.ended(out)
    return out


async def _run_group(
    state: _S,
    count: int,
    start: Start,
    limit: int | None,
    merge: Callable[[_S, Sequence[_S]], _S] | None,
    site: Site | None,
    group: GroupSpan | None,
) -> Outcome[_S, Any, list[Any]]:
    """:func:`run_group`, telling ``group`` (when an event sink is attached) of each branch done."""
    if count == 0:
        return Ok([], state)
    if limit is None or limit > count:
        limit = count
    elif limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")

    loop = asyncio.get_running_loop()
    values: list[Any] = [None] * count
    states: list[Any] = [None] * count
    running: dict[asyncio.Task[Any], int] = {}
    finished: deque[asyncio.Task[Any]] = deque()
    wake: list[asyncio.Future[None]] = [loop.create_future()]

    def on_done(task: asyncio.Task[Any]) -> None:
        finished.append(task)
        w = wake[0]
        if not w.done():
            w.set_result(None)

    run = current_run_context()
    if run.hooked:  # its branches can give their slot up (give_up_slot)
        run = run.with_part(_Slots, _Slots(lambda i: give_up(i)))
    # a journal names the group's branches (their effects' identities do not depend on the
    # order the branches run in) and learns which are live; else the branch's effects just
    # carry its element index
    branches = None if run.journal is None else run.journal.branches(run)
    element = run.with_index if branches is None else branches.context
    live: set[int] = set()  # the elements started and not yet taken in (told to ``branches``)

    def taken_in(i: int) -> None:
        live.discard(i)
        if branches is not None:
            branches.ended(i)

    next_index = 0
    given_up: set[int] = set()  # the elements that gave their slot up (give_up_slot): they wait on people

    def give_up(i: int) -> None:
        nonlocal next_index
        if i in given_up:
            return
        given_up.add(i)
        if next_index < count:
            launch(next_index)
            next_index += 1

    def launch(i: int) -> None:
        if run.hooked:  # the branch's effects carry its element index (agentmonad.effects)
            branch = contextvars.copy_context()
            branch.run(set_run_context, element(i))
            task = loop.create_task(start(i), context=branch)
        else:
            task = loop.create_task(start(i))
        running[task] = i
        live.add(i)
        task.add_done_callback(on_done)

    try:
        while next_index < limit:
            launch(next_index)
            next_index += 1

        failure: Err[Any, Any] | None = None
        defect: Defect | None = None
        fatal: BaseException | None = None  # KeyboardInterrupt, SystemExit, …
        remaining = count
        try:
            while remaining:
                if not finished:
                    await wake[0]
                    wake[0] = loop.create_future()
                while finished:
                    task = finished.popleft()
                    i = running.pop(task)
                    remaining -= 1
                    if group is not None:
                        group.branch_done(task.cancelled() or task.exception() is not None or type(task.result()) is not Ok)
                    if task.cancelled():
                        # nobody but us cancels a branch, except the branch itself;
                        # treat a self-cancelled branch as cancellation of the group
                        raise asyncio.CancelledError()
                    exc = task.exception()
                    if exc is not None:
                        if not isinstance(exc, Exception):
                            fatal = exc
                        else:
                            defect = _as_defect(exc, site, state)
                        break
                    result = task.result()
                    if type(result) is Ok:
                        values[i] = result.value
                        states[i] = result.state
                    elif type(result) is Err:
                        failure = result
                        break
                    else:
                        defect = Defect(
                            site if site is not None else "<par>",
                            state,
                            reason=_not_an_outcome(result),
                        )
                        break
                    if next_index < count and i not in given_up:  # a slot given up was handed on already
                        launch(next_index)
                        next_index += 1
                    taken_in(i)
                if failure is not None or defect is not None or fatal is not None:
                    break
        except asyncio.CancelledError as cancelled:
            # Cancelled from outside (or a branch cancelled itself): cancel and
            # await every branch. A Defect a branch raised meanwhile — or had
            # raised before we got to process it — is a bug and beats the
            # cancellation (as in ``asyncio.TaskGroup``): it must not be lost.
            others, _ = await _cancel_all(running, None, site, state)
            if others:
                raise _first_with_others(others)
            # a group in progress has not completed: a timeout reports the state before it
            note_reached(state)
            raise
        if failure is None and defect is None and fatal is None:
            return merge_outcome(state, values, states, merge, site)
        # Fail fast: cancel the siblings and wait for them, keeping every defect.
        others, cancelled_again = await _cancel_all(running, defect, site, state)
        if fatal is not None:
            raise fatal
        if defect is None and others:
            # A defect is a bug and must not be lost behind an ordinary error
            # (nor behind an outer cancellation that arrived meanwhile).
            defect = _first_with_others(others)
        if defect is not None:
            raise defect
        if cancelled_again:
            again = asyncio.CancelledError()
            note_reached(state)
            raise again
        assert failure is not None
        return failure
    finally:
        for i in sorted(live):  # a failing or cancelled group has cancelled and awaited them
            taken_in(i)


def _first_with_others(defects: list[Defect]) -> Defect:
    first = defects[0]
    for d in defects[1:]:
        first.attach(d)
    return first


async def _cancel_all(
    running: dict[asyncio.Task[Any], int],
    primary: Defect | None,
    site: Site | None,
    state: object,
) -> tuple[list[Defect], bool]:
    """Cancel every branch not yet processed and wait until all are done.

    Returns the Defects that those branches raised (also attached to
    ``primary`` when there is one) and whether the group itself was cancelled
    meanwhile. Repeated outer cancellation does not cut the wait short: the
    group never returns while a branch still runs. A branch's
    ``KeyboardInterrupt``/``SystemExit`` is re-raised.
    """
    tasks = list(running)
    running.clear()
    for t in tasks:
        t.cancel()
    cancelled_again = False
    pending = set(tasks)
    while pending:
        try:
            _, pending = await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled_again = True
    found: list[Defect] = []
    fatal: BaseException | None = None
    for t in tasks:
        if t.cancelled():
            continue
        exc = t.exception()
        if isinstance(exc, Exception):
            d = _as_defect(exc, site, state)
            if d is not primary:
                found.append(d)
        elif exc is not None and fatal is None:
            fatal = exc
    if primary is not None:
        for d in found:
            primary.attach(d)
    if fatal is not None:
        raise fatal
    return found, cancelled_again
