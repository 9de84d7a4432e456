"""``each`` elements of a durable run handed to worker processes over a queue (docs/language.md,
"`each` over workers").

A durable run that a worker took from a queue attaches an :class:`ElementDistributor` to its run
context (an :class:`~agentmonad.concurrency.ElementsHook`). An ``each(limit=N)`` there no longer
runs its body in this process: branch ``i`` of the group (``run_group`` still starts at most ``N``
at once, in order, and fails fast) puts element ``i`` on the queue of the ``each``'s site — a DBOS
workflow of its own, ``mcec_element``, that any worker listening to that queue runs — and awaits
its result. The element's effects are recorded in its own workflow; its result (the body's Outcome,
its tokens) comes back here and is recorded in the run's journal as an effect of kind
``"element"`` under the element's identity, so a resumed run replays it and does not hand the
element out again.

The element workflow's id is ``{run_id}/{identity}`` (``identity`` is the element's identity in the
run's journal): a run resumed before an element ended attaches to the same workflow. A branch
cancelled (a sibling failed, the run was cancelled, an enclosing ``timeout`` fired) cancels its
element's workflow. An element found cancelled when a run (re)attaches — cancelled by an earlier
process of the run — is resumed: the same workflow, on its queue again, replays the effects it
recorded and runs the rest. An element stops itself as a run does (:mod:`agentmonad.durable.body`):
to wait for people (the run asks them), when its run is asked to stop (the run stops too), or when
it cannot start where it runs (sent on once more; stopped again, the run stops with it, resumable).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypedDict, cast, final

from ..context import RunContext, current_run_context
from ..control import deadlines_around
from ..effects import perform
from ..errors import Defect
from ..outcome import Outcome, Site
from ..usage import record_usage
from .codec import SiteTypes, decode_result, encode_value
from .errors import RunNotStarted
from .journal import CANCELLED, STOPPED, WAITING, DurableJournal, OpenQuestion, Record, branch_key

__all__ = ["Backend", "ElementDistributor", "ElementEnded", "ElementFailed", "ElementTypes", "deadline_of",
           "element_question_key", "run_question_key"]


class ElementFailed(Exception):
    """An element run by a worker ended with a defect (or its workflow with an error): the
    cause of the run's :class:`~agentmonad.errors.Defect` at the ``each``."""


@final
@dataclass(frozen=True, slots=True)
class ElementTypes:
    """The types an ``each``'s element travels with: its ``value`` (the body's input), and
    ``result``: the body's output, the state and the body's errors."""

    value: Any
    result: SiteTypes


class ElementEnded(TypedDict, total=False):
    """What an element's workflow ended with (:func:`agentmonad.durable.element_runs.execute_element`):
    its body's Outcome (typed JSON) and the tokens of each model call (model, prompt, completion);
    or its ``defect``; or ``expired``: its run's deadline passed first."""

    outcome: Any
    usage: list[list[Any]]
    defect: dict[str, Any]
    expired: bool


class Backend(Protocol):
    """The queues the elements go on (:class:`agentmonad.durable.dbos.ElementQueues`)."""

    def resume(self, queue: str, element_id: str) -> Awaitable[None]:
        """Put the cancelled element ``element_id`` back on ``queue``, its recorded effects kept."""
        ...

    def enqueue(self, queue: str, element_id: str, request: dict[str, Any]) -> Awaitable[None]:
        """Put the element ``element_id`` on ``queue``."""
        ...

    def stopped(self, element_id: str) -> Awaitable[Record | None]:
        """Why the cancelled element ``element_id`` stopped itself: its ``waiting``, ``stopped`` or
        ``cancelled`` record (None: its run cancelled it)."""
        ...

    def ended(self, element_ids: list[str]) -> Awaitable[dict[str, tuple[str, Any]]]:
        """Of ``element_ids``, those that ended: status and result."""
        ...

    def cancel(self, element_ids: list[str]) -> Awaitable[None]:
        """Cancel ``element_ids``."""
        ...


def run_question_key(identity: str, key: str) -> str:
    """The key, in its run, of the question ``key`` an element (``identity`` in the run) asks: below
    the element's own effect, so the run parks on it there (its ``/`` kept apart as ``|``)."""
    return f"{identity}/{key.replace('/', '|')}"


def element_question_key(identity: str, run_key: str) -> str | None:
    """:func:`run_question_key` backwards: the element's own key of the run's question ``run_key``
    (None: the question is not one the element ``identity`` asks)."""
    prefix = f"{identity}/"
    return run_key.removeprefix(prefix).replace("|", "/") if run_key.startswith(prefix) else None


def _durable_journal(run: RunContext) -> DurableJournal:
    """The durable journal of ``run`` (inside whatever wraps it: a watched run's, a recorder's)."""
    journal: object = run.journal
    while not isinstance(journal, DurableJournal):
        journal = getattr(journal, "journal", None)
        if journal is None:
            raise AssertionError("elements are handed out by durable runs only")
    return journal


def deadline_of(run: RunContext) -> float | None:
    """The earliest deadline ``run`` is under, as Unix time (None: no ``timeout`` encloses it)."""
    loop = asyncio.get_running_loop()
    # a Deadline keeps when it runs out on the loop's clock (inf while held: no deadline now)
    left = min((d._when - loop.time() for d in deadlines_around(run)), default=math.inf)
    return time.time() + left if math.isfinite(left) else None


@final
class ElementDistributor:
    """The :class:`~agentmonad.concurrency.Elements` of one durable run: hands the elements of
    each ``each(limit=N)`` whose site has a queue in ``queues`` (site text to queue name) to that
    queue. ``request`` is what every element's request starts with (the run's spec, pipeline,
    fingerprint…); ``types`` the element types of each site (by site text)."""

    def __init__(self, backend: Backend, run_id: str, request: Mapping[str, Any], queues: Mapping[str, str],
                 types: Mapping[str, ElementTypes], *, poll: float = 0.02) -> None:
        self.backend = backend
        self.run_id = run_id
        self.request = dict(request)
        self.queues = dict(queues)
        self.types = dict(types)
        self.poll = poll
        #: Elements awaited now, by workflow id: one poller reads all their results at once.
        self._waiting: dict[str, asyncio.Future[tuple[str, Any]]] = {}
        self._poller: asyncio.Task[None] | None = None
        #: Elements sent on in this run of the run after they waited for people or could not start.
        self._taken_up: set[str] = set()

    def takes(self, site: Site, limit: int | None) -> bool:
        """An ``each`` with a limit at a site that has a queue (one without a limit runs here)."""
        return limit is not None and str(site) in self.queues

    async def element(self, site: Site, index: int, state: Any, value: Any, body: str | None) -> Outcome[Any, Any, Any]:
        """Element ``index``, run by a worker: recorded in the run's journal (replayed on resume)."""
        run = current_run_context()
        assert run.journal is not None, "elements are handed out by durable runs only"
        # through the effect seam, as every effect: recorded by the journal, told to the event sink
        return await perform(run, "element", site, lambda: self._remote(site, state, value, body, run))

    async def _remote(self, site: Site, state: Any, value: Any, body: str | None, run: RunContext) -> Outcome[Any, Any, Any]:
        types = self.types[str(site)]
        base = f"{self.run_id}/{branch_key()}"
        request = {
            **self.request,
            "run_id": self.run_id,
            "site": str(site),
            "body": body,
            "index": list(run.index),
            "value": encode_value(types.value, value, "the element"),
            "state": encode_value(types.result.state, state, "the state"),
            "deadline": deadline_of(run),
        }
        queue = self.queues[str(site)]
        # the enqueue runs to its end even if this branch is cancelled meanwhile: an element put on
        # the queue after its branch stopped caring would run for nothing
        handed = asyncio.ensure_future(self.backend.enqueue(queue, base, request))  # one that exists: attached to
        try:
            await asyncio.shield(handed)
            while True:
                status, result = await self._ended(base)
                if status == "SUCCESS" and isinstance(result, dict) and result.get("expired") and deadline_of(run) is not None:
                    # the worker stopped it at the run's deadline, which fires here at once (or a
                    # clock's skew later): its cancellation ends this wait, as a timeout in-process
                    await asyncio.get_running_loop().create_future()
                if status != "CANCELLED":
                    break
                await self._stopped(await self.backend.stopped(base), base, site, state, run)
                await self.backend.resume(queue, base)  # it goes on from its last recorded effect
        except asyncio.CancelledError:
            # fail-fast, the run cancelled, a timeout: the element stops too (shielded: the
            # cancel must reach the database even if this task is cancelled again meanwhile)
            try:
                await asyncio.shield(self._cancel(handed, base))
            except asyncio.CancelledError:
                pass
            raise
        return self._outcome(site, state, types.result, base, status, result)

    async def _stopped(self, why: Record | None, element_id: str, site: Site, state: Any, run: RunContext) -> None:
        """The element's workflow is cancelled, ``why`` (None: by an earlier process of this run):
        return when it is to go on, raise when the run stops with it. One that could not start goes
        on once in this run of the run; one its run's cancel stopped stops the run (unless resumed since)."""
        if why is not None and why["kind"] == WAITING:
            await self._wait_for_people(why, element_id, run)
        elif why is not None and why["kind"] == STOPPED:
            if element_id in self._taken_up:
                raise Defect(site, state, RunNotStarted(f"element {element_id}: {why.get('reason')}"))
            self._taken_up.add(element_id)
        elif why is not None and why["kind"] == CANCELLED:
            _durable_journal(run).stop_if_asked()

    async def _wait_for_people(self, waiting: Record, element_id: str, run: RunContext) -> None:
        """The element stopped to wait for people (its ``waiting`` record): when one of its
        questions was answered (or its deadline passed) since, it goes on (once in this run of the
        run: an answer it refused brings it back waiting, with why); else this branch of the run
        parks on them as its own — under the element's identity and index — and never returns."""
        journal = _durable_journal(run)
        identity = element_id.removeprefix(f"{self.run_id}/")
        now = time.time()
        questions = []
        for asked in (OpenQuestion.from_json(q) for q in waiting.get("questions", ())):
            key = run_question_key(identity, asked.key)
            due = journal.answered(key, asked.payload) or (asked.deadline is not None and now >= asked.deadline)
            if due and element_id not in self._taken_up:
                self._taken_up.add(element_id)
                return  # the element takes it in when it goes on
            questions.append(replace(asked, key=key, index=(*run.index, *asked.index)))
        refused = {run_question_key(identity, key): why for key, why in waiting.get("refused", {}).items()}
        await journal.park(questions, refused)

    async def _cancel(self, handed: asyncio.Future[None], element_id: str) -> None:
        """Cancel the element once it is on the queue (or its enqueue failed)."""
        try:
            await handed
        except Exception:
            return
        await self.backend.cancel([element_id])

    def _outcome(self, site: Site, state: Any, types: SiteTypes, element_id: str, status: str, result: Any) -> Outcome[Any, Any, Any]:
        ended = cast(ElementEnded, result if status == "SUCCESS" and isinstance(result, dict) else {})
        if "outcome" in ended:
            for model, prompt, completion in ended.get("usage", ()):
                record_usage(str(model), int(prompt), int(completion))  # the run's meters and this record's
            outcome: Outcome[Any, Any, Any] = decode_result(ended["outcome"], types)  # type: ignore[assignment]  # an ok or err
            return outcome
        if ended.get("expired"):
            raise Defect(site, state, ElementFailed(f"element {element_id} ran past the run's deadline, which has not fired here"))
        message = str(ended["defect"].get("message")) if "defect" in ended else f"its workflow ended {status}: {result}"
        raise Defect(site, state, ElementFailed(f"element {element_id}: {message}"))

    async def _ended(self, element_id: str) -> tuple[str, Any]:
        future: asyncio.Future[tuple[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[element_id] = future
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())
        try:
            return await future
        finally:
            if self._waiting.get(element_id) is future:
                del self._waiting[element_id]

    async def _poll(self) -> None:
        """Read the results of every awaited element, one query a turn, until none is awaited."""
        while self._waiting:
            ids = list(self._waiting)
            try:
                ended = await self.backend.ended(ids)
            except Exception as exc:  # the database is gone: every awaited element fails with it
                for future in self._waiting.values():
                    if not future.done():
                        future.set_exception(exc)
                self._waiting.clear()
                return
            for element_id, found in ended.items():
                waiting = self._waiting.pop(element_id, None)
                if waiting is not None and not waiting.done():
                    waiting.set_result(found)
            await asyncio.sleep(self.poll)

