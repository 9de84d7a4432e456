"""The body of every durable workflow (docs/language.md §13), a run's (``mcec_run``) or an ``each``
element's (``mcec_element``): what differs is a :class:`Workload`; how it starts, waits, stops and
ends is :func:`execute_body` alone, so an element keeps a run's rules (it stops at ``runs cancel``
of its run; a start that fails for a cause outside it leaves it resumable)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

from .errors import DurableError, RunNotStarted
from .request import BadRequest
from .version import SpecVersion, VersionError

if TYPE_CHECKING:
    from ..concurrency import ElementsHook
    from ..context import Meter
    from ..events import EventSink
    from ..llm import LLMConfig
    from .journal import Record, Store
    from .locks import HeldLock

__all__ = ["LOCK_LOST", "LockLost", "Workload", "execute_body", "held"]


class LockLost(BaseException):
    """This process no longer holds the lock of the run it runs (on Postgres: the lock's connection
    ended), so another process may run the run now: it stops before its next effect."""


#: Why a process that lost a run's lock stopped it.
LOCK_LOST = "this process lost the run's lock (its database connection ended) and stopped it before its next effect"

#: The run locks this process holds now, by run id: what its bodies consult before each effect
#: (a process that lost a run's lock stops the run, :class:`LockLost`).
held: dict[str, HeldLock] = {}


@final
@dataclass(frozen=True, slots=True)
class Workload:
    """What a workflow runs: ``call()`` (a pipeline or an element's body on its input) of ``version``
    with the ``answers`` to its questions (by its keys), its models ``llm``, its tokens counted by
    ``meter``; ``ended`` gives its Outcome as the workflow's result. ``events``: the sink watching it;
    ``elements``: where its ``each(limit=N)`` elements go; ``deadline``: Unix time after which none
    of its effects starts (an element under its run's ``timeout``: its result is then ``expired``)."""

    version: SpecVersion
    call: Callable[[], Awaitable[Any]]
    answers: Mapping[str, tuple[object, object]]
    llm: LLMConfig | None
    meter: Meter
    ended: Callable[[Any], dict[str, Any]]
    events: EventSink | None = None
    elements: ElementsHook | None = None
    deadline: float | None = None


async def execute_body(run_id: str, load: Callable[[], Workload], store: Store,
                       records: Mapping[str, Record]) -> dict[str, Any]:
    """Run what ``load`` gives (of the run ``run_id``), its effects in ``store``, ``records``
    replayed: its result, its open questions (``"status": "waiting"``) or ``"status": "cancelled"``.
    :class:`RunNotStarted` when it cannot run here (``load`` failed, the lock is lost, the spec changed)."""
    from ..concurrency import ElementsHook
    from ..context import current_run_context, hooks, reset_run_context, set_run_context
    from ..errors import Defect
    from ..llm import llm_config
    from ..report import defect_payload
    from ..spec import InputError
    from .dbos import stop_asked
    from .journal import DurableJournal, ReplayMismatch, StopAsked
    from .watch import watched

    lock, asked = held.get(run_id), stop_asked(run_id)

    def stop() -> bool:  # before each effect: was the run asked to stop? does this process still hold its lock?
        if lock is not None and not lock.held():
            raise LockLost()
        return asked()

    if stop():  # cancelled while it waited (or before it started): record that, run nothing
        return {"ok": None, "status": "cancelled"}
    try:
        work = load()
    except (BadRequest, VersionError, InputError, DurableError, LookupError, ValueError) as exc:
        raise RunNotStarted(str(exc)) from None  # the cause is outside the body: resumable once fixed
    journal = DurableJournal(store, work.version.type_table(), records, work.answers, stop_asked=stop)
    try:
        attached = watched(journal, work.version.streams(), work.events)  # a replayed streamed answer told to the sink
        models = llm_config(work.llm) if work.llm is not None else nullcontext()
        with hooks(journal=attached, events=work.events), models:
            # the context as both left it (the one `hooks` yields has no model config yet)
            token = set_run_context(current_run_context().with_meter(work.meter).with_part(ElementsHook, work.elements))
            try:
                async with asyncio.timeout(None if work.deadline is None else max(work.deadline - time.time(), 0.0)):
                    ended = await journal.until_waiting(work.call())
            finally:
                reset_run_context(token)
        await store.flush()
    except TimeoutError:
        if work.deadline is None:
            raise
        await store.flush()
        return {"expired": True}
    except LockLost:
        raise RunNotStarted(LOCK_LOST) from None
    except StopAsked:  # `runs cancel`: every effect that completed is recorded; it ends cancelled
        await store.flush()
        return {"ok": None, "status": "cancelled"}
    except Defect as defect:
        # the spec changed under it, or an element of it could not start: resumable as it is
        if isinstance(defect.cause, (ReplayMismatch, RunNotStarted)):
            raise RunNotStarted(str(defect.cause)) from None
        return defect_payload(defect)
    if isinstance(ended, list):  # it waits for people: their open questions
        return {"ok": None, "status": "waiting", "questions": [q.as_json() for q in ended], "refused": journal.refused}
    return work.ended(ended)
