"""Durable runs of compiled modules (docs/language.md §13): start, resume, answer, inspect and
cancel runs that survive a crash and resume from their last completed effect — the one door every
command goes through (``mcec run --durable``, ``mcec runs …``, ``python -m agentmonad …``).

>>> from agentmonad.durable import runs                              # doctest: +SKIP
>>> import billing_mce
>>> runs.run(billing_mce, "refund", '{"id": "T1", "amount": 250}', run_id="t1")["status"]
'waiting'
>>> runs.answer("t1", "approve", '{"ok": true}')["ok"]
True

A run records the compiled module it runs (its import name) and the digest of its spec version
(``SPEC_INFO.fingerprint``); any process where that module imports can resume, answer or cancel
it — the ``.mce`` source and the compiler are not needed. The runs are DBOS workflows (the
``agentmonad[durable]`` extra) in the database ``db``: by default an SQLite file
``.mcec/runs.sqlite`` in the working directory; ``MCEC_DB`` or ``db=`` name another
(``postgresql://…`` for a server shared by many processes). Every function raises
:class:`DurableError` with a one-line message when it cannot do what was asked.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import json
import os
import threading
import time
import types as pytypes
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from enum import StrEnum
from typing import TYPE_CHECKING, Any, assert_never, final

from .errors import DurableError
from .request import BadRequest, RunRequest
from .version import SpecVersion, VersionError, first_line, loader

if TYPE_CHECKING:
    from ..events import EventSink
    from ..timeline import Node
    from .dbos import Engine, RunInfo, WorkerInfo
    from .journal import Record, Store

__all__ = [
    "DurableError", "RunStatus", "RunSummary", "answer", "cancel", "close", "database_url", "enqueue", "enqueue_request", "list_runs",
    "result", "resume",
    "resume_expired", "run", "show", "show_tree", "start", "waiting",
]

#: The database of a durable run when neither ``db`` nor ``MCEC_DB`` names one.
DEFAULT_DB = Path(".mcec") / "runs.sqlite"

#: How long a process waits for the lock of a run another process is running (starting,
#: resuming, answering, cancelling it), in seconds, before it gives up with a message.
LOCK_WAIT = 60.0

#: The longest run id accepted.
MAX_RUN_ID = 200


def database_url(db: str | None = None) -> str:
    """The database URL: ``db``, else ``$MCEC_DB``, else an SQLite file ``.mcec/runs.sqlite`` in the
    working directory (its folder made when missing). A bare path is an SQLite file."""
    from .urls import resolved

    chosen = db or os.environ.get("MCEC_DB")
    if not chosen:
        DEFAULT_DB.parent.mkdir(exist_ok=True)
        return f"sqlite:///{DEFAULT_DB.resolve()}"
    return resolved(chosen)


#: The engine this process keeps on its run database from one call to the next (one: DBOS is one
#: per process): launching DBOS and opening its client cost more than a short run's own work, and
#: DBOS is made to be launched once by a process. Closed when the process ends, or by :func:`close`.
_kept: list[Engine] = []
_keeping = threading.RLock()


@contextmanager
def engine_for(db: str | None, *, keep: bool = True) -> Iterator[Engine]:
    """DBOS on the run database (a clear :class:`DurableError` when it cannot be reached): the one
    this process keeps (``keep``), else one of its own, closed at the end (a worker's, or a call on
    another database while another thread's call holds the kept one)."""
    try:
        from .dbos import ELEMENT_WORKFLOW, runners
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise DurableError(f"durable runs need DBOS: pip install 'agentmonad[durable]' ({exc})") from exc
    from .element_runs import execute_element

    from .urls import file_identity

    runners[ELEMENT_WORKFLOW] = execute_element  # this process may run `each` elements of queued runs
    url = database_url(db)
    kept: Engine | None = None
    if keep:
        with _keeping:
            if not _kept or (not _kept[0].held and (_kept[0].url, _kept[0].identity) != (url, file_identity(url))):
                close()  # another database, or the file was deleted (or made anew) since it was opened
                _kept.append(_opened(url))
            if _kept[0].url == url:
                kept = _kept[0]
                kept.hold()
    engine = kept if kept is not None else _opened(url)
    broken = False
    try:
        yield engine
    except BaseException as exc:
        broken = not isinstance(exc, DurableError)  # it may have left DBOS broken: the next call starts anew
        raise
    finally:
        if kept is None:
            engine.close()
        else:
            with _keeping:
                kept.release()
                if broken and not kept.held:
                    close()


def _opened(url: str) -> Engine:
    from .dbos import Engine

    try:
        return Engine(url)
    except Exception as exc:
        from .urls import redacted

        raise DurableError(f"cannot open the run database {shown_url(url)}: {redacted(first_line(exc), url)}") from None


def close() -> None:
    """Close the engine this process keeps on its run database (:func:`engine_for`), if any: DBOS
    stops (no run of this process may be running). Done when the process ends."""
    from .locks import close as close_locks

    with _keeping:
        while _kept:
            _kept.pop().close()
        close_locks()


atexit.register(close)


#: The engine a forked child inherited: kept referenced, never used or closed here (closing its
#: connections would end the parent's sessions).
_inherited: list[Engine] = []


def _forget_after_fork() -> None:
    """A forked child does not use its parent's engine (its connections are the parent's; see
    :func:`agentmonad.durable.dbos._forget_after_fork`): its next call opens its own."""
    _inherited.extend(_kept)
    _kept.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def shown_url(url: str) -> str:
    """``url`` without its secrets (:func:`agentmonad.durable.urls.shown`)."""
    from .urls import shown

    return shown(url)


def check_run_id(run_id: str) -> str:
    """``run_id`` when it can name a new run: 1 to :data:`MAX_RUN_ID` printable characters, no
    spaces (a run id is printed on a line of its own in `runs list`, and typed in a shell)."""
    if not run_id or len(run_id) > MAX_RUN_ID or not run_id.isprintable() or any(c.isspace() for c in run_id):
        raise DurableError(f"bad run id {run_id!r}: 1 to {MAX_RUN_ID} printable characters, no spaces")
    return run_id


def _same_input(a: str, b: str) -> bool:
    """Whether two input JSON texts are the same input: the same JSON value, types included
    (``1``, ``1.0`` and ``true`` are three inputs, though Python's ``==`` takes them for one)."""
    try:
        return _canonical(json.loads(a)) == _canonical(json.loads(b))
    except (ValueError, RecursionError):
        return False


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def request_of(info: RunInfo) -> RunRequest:
    """The request ``info``'s run was started with (:class:`DurableError`: not a durable run's)."""
    try:
        return RunRequest.from_json(info.request)
    except BadRequest as exc:
        raise DurableError(f"run {info.run_id} is not a durable run of a compiled spec: {exc}") from None


# ----------------------------------------------------------------------------- the run itself


async def execute(data: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
    """Run one durable run's pipeline with its journal (the ``mcec_run`` workflow's body,
    :func:`agentmonad.durable.body.execute_body`): the Outcome as JSON."""
    from ..report import report
    from ..usage import Usage
    from .body import Workload, execute_body
    from .dbos import given_answers
    from .element_runs import distributor
    from .version import llm_config_for
    from .watch import sink_for

    run_id = str(data.get("run_id"))

    def load() -> Workload:
        request = RunRequest.from_json(data)
        version = loader().load(request)
        llm = llm_config_for(version, list(request.models))
        value, state = version.prepare(request.pipeline, request.input, request.state)
        function = version.pipeline(request.pipeline)
        used = Usage()

        def ended(outcome: Any) -> dict[str, Any]:
            payload = report(outcome).payload
            return {**payload, "usage": used.as_dict()} if llm is not None else payload

        return Workload(version, lambda: function(state, value), given_answers(run_id), llm, used, ended,
                        events=sink_for(run_id), elements=distributor(version, request))  # `--stream`: watched here

    return await execute_body(run_id, load, store, records)


@contextmanager
def _locked(engine: Engine, run_id: str) -> Iterator[None]:
    """Hold the run's lock in its database (:mod:`agentmonad.durable.locks`): one process at a time
    starts, resumes, answers or cancels it. Another process's hold is waited for, up to
    :data:`LOCK_WAIT` seconds."""
    from .body import LOCK_LOST, held
    from .locks import LockBusy, run_lock

    try:
        with run_lock(engine.url, run_id, wait=LOCK_WAIT) as lock:
            held[run_id] = lock
            try:
                yield
            finally:
                held.pop(run_id, None)
            if not lock.held():
                # the lock went while it ran the run: it stopped the run (before an effect, or DBOS
                # refused the record of the effect in flight once another process took the run
                # over), and an outcome it was handed then is the other process's doing
                raise _stopped(run_id, LOCK_LOST)
    except LockBusy as exc:
        raise DurableError(str(exc)) from None


def _payload(run_id: str, result: dict[str, Any]) -> dict[str, Any]:
    """A workflow's result as the caller gets it (``run_id`` added); :class:`DurableError` for a run
    that stopped or failed."""
    if result.get("resumable"):
        raise _stopped(run_id, str(result["failed"]))
    if "failed" in result:
        raise DurableError(f"run {run_id}: {result['failed']}")
    return {**result, "run_id": run_id}


def _stopped(run_id: str, reason: str) -> DurableError:
    """The error of a run that stopped for ``reason``, resumable once that is fixed."""
    return DurableError(f"run {run_id} stopped: {first_line(Exception(reason))} (nothing of it is lost: fix that, "
                        f"then `mcec runs resume {run_id}`)")


def new_request(version: SpecVersion, *, pipeline: str, input_json: str, state_json: str | None = None,
                models: Sequence[str] = (), run_id: str, module: str | None, spec: str | None = None,
                interpret: bool = False, elements: bool = False, fingerprint: str | None = None,
                declarations: Any = None) -> RunRequest:
    """The request of a new durable run of ``version`` (started here or enqueued), refused with a
    :class:`DurableError` when the input is bad or a model unknown — before anything is recorded."""
    from ..spec import InputError
    from .version import llm_config_for

    if not version.digest:
        raise DurableError(f"{module or spec} cannot run durably: its compiled module has no fingerprint (the "
                           "classes it names did not import where it was compiled); compile it again")
    try:
        version.prepare(pipeline, input_json, state_json)
        llm_config_for(version, list(models))
    except (InputError, VersionError) as exc:
        raise DurableError(str(exc)) from None
    return RunRequest(run_id=run_id, pipeline=pipeline, input=input_json, digest=version.digest, module=module,
                      spec=spec, state=state_json, models=tuple(models), cwd=os.getcwd(), interpret=interpret,
                      elements=elements, fingerprint=fingerprint, declarations=declarations)


def module_name(target: pytypes.ModuleType | str) -> str:
    """The import name of a compiled module given as a module or its name."""
    return target if isinstance(target, str) else target.__name__


def compiled_version(target: pytypes.ModuleType | str) -> tuple[str, SpecVersion]:
    """The import name and the version of the compiled module ``target`` (a module or its name,
    imported then); :class:`DurableError` when it does not import or mcec did not compile it."""
    from .version import CompiledVersion

    name = module_name(target)
    try:
        module = target if isinstance(target, pytypes.ModuleType) else importlib.import_module(name)
        return name, CompiledVersion.of(module)
    except VersionError as exc:
        raise DurableError(str(exc)) from None
    except Exception as exc:
        raise DurableError(f"importing {name} failed: {type(exc).__name__}: {first_line(exc)}") from None


def run(target: pytypes.ModuleType | str, pipeline: str, input_json: str, *, state_json: str | None = None,
        run_id: str | None = None, db: str | None = None, allow_changed_spec: bool = False, models: Sequence[str] = (),
        elements: bool = False, events: EventSink | None = None) -> dict[str, Any]:
    """Run ``pipeline`` of the compiled module ``target`` (a module, or its import name) on
    ``input_json`` durably; the Outcome as ``run`` prints it, plus ``run_id``. With the ``run_id``
    of an earlier run: resume it (its own input), or give its recorded outcome when it finished.
    ``elements``: its ``each(limit=N)`` elements go on their queues as in a queued run, and this
    process takes them from there itself. ``events``: the sink the run tells what it does here."""
    name, version = compiled_version(target)
    chosen = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12]
    return start(lambda: new_request(version, pipeline=pipeline, input_json=input_json, state_json=state_json,
                                     models=models, run_id=chosen, module=name, elements=elements),
                 chosen, db=db, allow_changed_spec=allow_changed_spec, events=events, version=version,
                 same=(name, None, pipeline, input_json))


def start(make: Callable[[], RunRequest], run_id: str, *, db: str | None, allow_changed_spec: bool,
          events: EventSink | None, version: SpecVersion | None,
          same: tuple[str | None, str | None, str, str]) -> dict[str, Any]:
    """Start the run ``run_id`` with the request ``make`` makes, or — when it exists and is the
    same run (``same``: its module, spec, pipeline and input) — resume it (the door of :func:`run`
    and of ``mcec``'s spec form)."""
    from .watch import watching

    with engine_for(db) as engine, _locked(engine, run_id), watching(run_id, events):
        existing = engine.run(run_id)
        if existing is not None:
            _same_run(existing, *same)
            return _resume(engine, run_id, allow_changed_spec)
        request = make()
        _launch(engine, version, request)
        return _payload(run_id, asyncio.run(engine.start(run_id, request.as_json())))


def _launch(engine: Engine, version: SpecVersion | None, request: RunRequest) -> None:
    """Launch DBOS to run ``request``'s run in this process: listening to the element queues of
    its spec version when it runs its elements through them itself (``elements=True``)."""
    if not request.elements:
        engine.launch(execute)
        return
    from .dbos import QueueSpec
    from .version import element_queue

    if version is None:
        try:
            version = loader().load(request)
        except VersionError as exc:
            raise DurableError(f"run {request.run_id} cannot resume here: {exc} (the run is as it was)") from None
    queues = [QueueSpec(element_queue(version.digest, site), limit, None) for site, limit in version.each_limits().items()]
    engine.launch(execute, queues=queues, poll_seconds=0.05)


def _same_run(info: RunInfo, module: str | None, spec: str | None, pipeline: str, input_json: str) -> None:
    """Running again with an existing run id resumes that run: refuse it when the command asks for
    another spec (or module), pipeline or input (the user meant a new run, or mistyped the id)."""
    request = request_of(info)
    differs = []
    if spec is not None and request.spec != spec:
        differs.append(f"spec {request.spec!r}")
    if module is not None and request.module != module:
        differs.append(f"module {request.module!r}")
    if request.pipeline != pipeline:
        differs.append(f"pipeline {request.pipeline!r}")
    if not _same_input(input_json, request.input):
        differs.append(f"input {request.input}")
    if differs:
        raise DurableError(
            f"run {info.run_id} exists with another {', '.join(differs)}: resume it with `mcec runs resume "
            f"{info.run_id}`, or start a new run with another --run-id"
        )


def resume(run_id: str, *, db: str | None = None, allow_changed_spec: bool = False,
           events: EventSink | None = None) -> dict[str, Any]:
    """Resume the run ``run_id`` from its last completed effect (a finished run: its recorded
    outcome); the Outcome as :func:`run` gives it. ``events``: as :func:`run`'s."""
    from .watch import watching

    with engine_for(db) as engine, _locked(engine, run_id), watching(run_id, events):
        return _resume(engine, run_id, allow_changed_spec)


#: A worker whose heartbeat is older than this (seconds) is taken for dead by `runs resume` (as by
#: its peers with their default ``--stale-after``).
WORKER_STALE_AFTER = 10.0


def _resume(engine: Engine, run_id: str, allow_changed_spec: bool) -> dict[str, Any]:
    """Resume ``run_id`` (the caller holds its lock)."""
    from .body import LOCK_LOST, held

    info = _known(engine, run_id)
    if info.status == "SUCCESS" and info.result is not None:
        return _payload(run_id, info.result)
    request = request_of(info)
    _refuse_a_workers_run(engine, info, request)
    engine.take_up(run_id)  # resumed: no longer asked to stop
    version = _refuse_changed(request, allow_changed_spec)
    _launch(engine, version, request)
    resumed = asyncio.run(engine.resume(run_id))
    lock = held.get(run_id)
    if resumed.get("resumable") and resumed.get("failed") == LOCK_LOST and lock is not None and lock.held():
        # not this process's stop: the process that lost the lock this one took stopped the run
        # (its record, then its cancel) just as this resume put it on its queue; it is this one's now
        resumed = asyncio.run(engine.resume(run_id))
    return _payload(run_id, resumed)


def _refuse_changed(request: RunRequest, allow_changed_spec: bool) -> SpecVersion | None:
    """The version the run resumes under: the one it started with, unless the user says otherwise
    (None: it cannot be had here — the run's workflow then records why it stopped, resumable)."""
    try:
        version: SpecVersion | None = loader().load(request)
    except VersionError:
        version = None
    changed = loader().changed(request, version)
    if changed is not None and not allow_changed_spec:
        raise DurableError(
            f"run {request.run_id} cannot resume: {changed}\n"
            "  = help: pass --allow-changed-spec to resume it anyway (recorded values are still checked against today's types)"
        )
    return version


def _its_worker(engine: Engine, info: RunInfo, request: RunRequest) -> WorkerInfo | None:
    """The live worker running the run ``info`` (a run enqueued for workers, ``PENDING`` under an
    executor whose heartbeat is younger than :data:`WORKER_STALE_AFTER`), else None. Workers hold no
    run lock (DBOS's dequeue gives a run to one worker): this is how other processes tell."""
    if info.status != "PENDING" or not request.queue or not info.executor:
        return None
    return engine.live_worker(info.executor, WORKER_STALE_AFTER)


def _refuse_a_workers_run(engine: Engine, info: RunInfo, request: RunRequest) -> None:
    """A run a live worker is running goes on there: resuming it here too would run its next
    effect in both processes. So does a run still on its workers' queue: a worker may take it
    between this look and the resume, which DBOS would put back on a queue of its own under the
    worker (``ENQUEUED`` again, whatever process holds it)."""
    if info.status == "ENQUEUED" and request.queue and info.queue == request.queue:
        raise DurableError(f"run {info.run_id} is enqueued for a worker of its version: a worker takes it up "
                           f"(`mcec runs cancel {info.run_id}`, then `mcec runs resume {info.run_id}`, runs it here)")
    worker = _its_worker(engine, info, request)
    if worker is not None:
        raise DurableError(f"run {info.run_id} is being run by worker {worker.executor_id} (pid {worker.pid} on "
                           f"{worker.host}): it goes on there (`mcec runs cancel {info.run_id}` stops it)")


def _known(engine: Engine, run_id: str) -> RunInfo:
    info = engine.run(run_id)
    if info is None:
        raise DurableError(f"no durable run {run_id!r} in {shown_url(engine.url)} (see `mcec runs list`)")
    return info


# ----------------------------------------------------------------------------- reading runs


class RunStatus(StrEnum):
    """Where a durable run is (what ``runs list`` says): derived from its workflow's status and its
    last record by :func:`status_of` alone."""

    #: Running now, or interrupted (its process died): ``runs resume`` takes it up.
    RUNNING = "running"
    #: On a queue, waiting for a worker of its version.
    ENQUEUED = "enqueued"
    #: Waiting for people's answers.
    WAITING = "waiting"
    #: Ended with its pipeline's Ok.
    FINISHED = "finished"
    #: Ended with an error or a defect.
    FAILED = "failed"
    #: Cancelled (``runs resume`` takes it up again).
    CANCELLED = "cancelled"
    #: Could not start or go on here (its modules, its lock): resumable once the cause is fixed.
    STOPPED = "stopped"


@final
@dataclass(frozen=True, slots=True)
class RunSummary:
    """One line of ``runs list``."""

    run_id: str
    spec: str
    pipeline: str
    status: RunStatus
    started: float | None
    last_step: str | None

    def as_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {"run_id": self.run_id, "spec": self.spec, "pipeline": self.pipeline, "status": self.status,
                "started": _when(self.started), "last_step": self.last_step}


def _when(epoch: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch is not None else None


def status_of(info: RunInfo, steps: list[Record]) -> RunStatus:
    """The run's status from its workflow and its last record."""
    match info.status:
        case "CANCELLED" if steps and steps[-1].get("kind") == "waiting":
            return RunStatus.WAITING
        case "CANCELLED" if steps and steps[-1].get("kind") == "stopped":
            return RunStatus.STOPPED
        case "SUCCESS":
            ended = info.result is None or "defect" in info.result or "failed" in info.result
            return RunStatus.FAILED if ended else RunStatus.FINISHED
        case "ERROR" | "MAX_RECOVERY_ATTEMPTS_EXCEEDED":
            return RunStatus.FAILED
        case "CANCELLED":
            return RunStatus.CANCELLED
        case "ENQUEUED":
            return RunStatus.ENQUEUED
        case _:
            return RunStatus.RUNNING


def named_of(info: RunInfo) -> tuple[str, str]:
    """What ``info``'s run runs (spec or module) and its pipeline, "?" when its request is not one."""
    try:
        request = RunRequest.from_json(info.request)
    except BadRequest:
        return "?", "?"
    return request.shown, request.pipeline


def list_runs(*, db: str | None = None) -> list[RunSummary]:
    """Every durable run in the database, oldest first."""
    with engine_for(db) as engine:
        summaries = []
        for info in engine.runs():
            steps = engine.steps(info.run_id)
            spec, pipeline = named_of(info)
            summaries.append(RunSummary(info.run_id, spec, pipeline, status_of(info, steps), info.created,
                                        str(steps[-1].get("step")) if steps else None))
        return summaries


def show(run_id: str, *, db: str | None = None) -> dict[str, Any]:
    """The run ``run_id``: its summary, every recorded effect in order (its identity, kind, step,
    site, duration, outcome kind, and how it changed the state), the state its own branch is at
    now, and the run as the tree ``--trace`` draws (``tree``: each effect under its
    ``par``/``each`` element, see :func:`agentmonad.timeline.as_json`)."""
    from ..timeline import as_json

    shown, tree = show_tree(run_id, db=db)
    return {**shown, "tree": as_json(tree)}


def show_tree(run_id: str, *, db: str | None = None) -> tuple[dict[str, Any], list[Node]]:
    """What :func:`show` gives without its ``tree``, and the tree itself (to draw with
    :func:`agentmonad.timeline.render_text`)."""
    from ..timeline import from_records, short_json
    from .journal import states_seen

    with engine_for(db) as engine:
        info = _known(engine, run_id)
        records = engine.steps(run_id)
        spec, pipeline = named_of(info)
        # the state after each effect only as a line of the tree: the whole of them grows with the
        # square of a run whose state grows, so the JSON gives each effect's change instead
        texts, state = states_seen(records, short_json)
        tree = from_records(records, texts, pipeline=pipeline, outcome=_run_outcome(info, records),
                            started=info.created, ended=info.updated)
        shown = {
            "run_id": run_id,
            "spec": spec,
            "pipeline": pipeline,
            "input": info.request.get("input") if isinstance(info.request, Mapping) else None,
            "status": status_of(info, records),
            "started": _when(info.created),
            "effects": [_effect(record) for record in records],
            "state": state,
            "outcome": info.result,
        }
        return shown, tree


def _run_outcome(info: RunInfo, records: list[Record]) -> str | None:
    """The run's outcome kind as a trace shows it: ``ok``, ``err``, ``defect``, ``cancelled``, or
    None while it has not ended (running, or interrupted)."""
    match status_of(info, records):
        case RunStatus.RUNNING | RunStatus.WAITING | RunStatus.ENQUEUED | RunStatus.STOPPED:
            return None
        case RunStatus.CANCELLED:
            return "cancelled"
        case RunStatus.FINISHED | RunStatus.FAILED:
            result = info.result or {}
            if result.get("ok"):
                return "ok"
            return "defect" if not result or "defect" in result or "failed" in result else "err"
        case other:
            assert_never(other)


def _effect(record: Record) -> dict[str, Any]:
    from ..timeline import record_outcome, state_change

    return {
        "key": record.get("key"),
        "kind": record.get("kind"),
        "step": record.get("step"),
        "site": record.get("site"),
        "seconds": round(float(record.get("seconds", 0.0)), 6),
        "outcome": record_outcome(record),
        "state_change": state_change(record),
        "usage": record.get("usage") or None,
    }


# ----------------------------------------------------------------------------- cancelling


def cancel(run_id: str, *, db: str | None = None) -> None:
    """Cancel the run ``run_id``: a process running it stops at its next effect (this waits,
    up to :data:`LOCK_WAIT` seconds, until it has); a run waiting for people is ``cancelled``
    from then on and takes no answer. ``resume`` takes either up again."""
    with engine_for(db) as engine:
        info = _known(engine, run_id)
        request = request_of(info)
        ended = status_of(info, engine.steps(run_id))
        if ended in ("finished", "failed"):
            raise DurableError(f"run {run_id} has already ended ({ended}): there is nothing to cancel")
        # a row, before anything else: the process running the run stops before its next effect
        # (the effect in flight completes and is recorded), then lets go of its lock
        engine.ask_to_stop(run_id)
        _until_no_worker_runs(engine, run_id, request)
        with _locked(engine, run_id):
            info = _known(engine, run_id)
            status = status_of(info, engine.steps(run_id))
            if status in ("finished", "failed"):  # it ended before it saw the ask: as if it came after
                engine.take_up(run_id)
                raise DurableError(f"run {run_id} has already ended ({status}): there is nothing to cancel")
            if status == "waiting":
                # a waiting run's workflow is already CANCELLED in DBOS (the state DBOS resumes): it is
                # resumed only to record that it is cancelled (its run sees the row), running nothing
                engine.launch(execute)
                asyncio.run(engine.resume(run_id))
            elif status in ("running", "enqueued", "stopped"):  # no process runs it (we hold its lock)
                engine.cancel(run_id)


def _until_no_worker_runs(engine: Engine, run_id: str, request: RunRequest) -> None:
    """Wait (up to :data:`LOCK_WAIT` seconds) until no live worker runs ``run_id``: a worker holds
    no run lock, and stops the run at its next effect once it sees it was asked to."""
    deadline = time.monotonic() + LOCK_WAIT
    while time.monotonic() < deadline:
        if _its_worker(engine, _known(engine, run_id), request) is None:
            return
        time.sleep(0.05)
    raise DurableError(f"run {run_id} was asked to stop, but its worker still runs it after {LOCK_WAIT:g} s "
                       "(it stops before its next effect)")


# ----------------------------------------------------------------------------- people's answers


def _open_questions(engine: Engine, info: RunInfo) -> list[dict[str, Any]]:
    """The questions the run ``info`` waits on (none: it does not wait), each with its
    ``deadline`` (ISO time, None: none) and whether it ``expired``."""
    steps = engine.steps(info.run_id)
    if status_of(info, steps) != "waiting":
        return []
    now = time.time()
    return [{**q, "deadline": q.get("deadline"), "expired": _expired(q, now)} for q in steps[-1].get("questions", [])]


def _expired(question: dict[str, Any], now: float) -> bool:
    """Whether the deadline of ``question`` (as the waiting record keeps it) has passed."""
    from .journal import epoch

    deadline = question.get("deadline")
    return isinstance(deadline, str) and epoch(deadline) <= now


def _is_a_workers(info: RunInfo) -> bool:
    return isinstance(info.request, Mapping) and bool(info.request.get("queue"))


def _interrupted_questions(engine: Engine, info: RunInfo) -> list[dict[str, Any]]:
    """The questions a run still waits on though its process died while it ran (an answer resumed
    it and was killed before it waited again): a run ``running`` whose lock the caller holds —
    so no process runs it — and that is not a worker's (workers hold no run lock). Those of its
    last wait that have no record since."""
    steps = engine.steps(info.run_id)
    if status_of(info, steps) != "running" or _is_a_workers(info):
        return []
    last = max((i for i, record in enumerate(steps) if record.get("kind") == "waiting"), default=None)
    if last is None:
        return []
    since = {record.get("key") for record in steps[last + 1:]}
    now = time.time()
    return [{**q, "expired": _expired(q, now)} for q in steps[last].get("questions", []) if q.get("key") not in since]


def _questions_if_unheld(engine: Engine, info: RunInfo) -> list[dict[str, Any]]:
    """The questions still open of a run that is ``running`` though no process holds its lock (its
    answering process died: :func:`_interrupted_questions`); none when a process holds it."""
    from .locks import LockBusy, run_lock

    if info.status != "PENDING" or _is_a_workers(info):
        return []
    try:
        with run_lock(engine.url, info.run_id, wait=0):
            return _interrupted_questions(engine, info)
    except LockBusy:
        return []


def waiting(*, db: str | None = None, run_id: str | None = None,
            about: Mapping[str, object] | Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every open question of every waiting run (or of ``run_id``; ``about``: whose payload has
    those field values, see :mod:`agentmonad.durable.questions`), oldest run first: its
    ``run_id``, the ask step's ``name``, ``site``, element ``index`` (inside ``each``/``par``),
    the ``question`` payload as JSON, the answer's JSON ``schema``, the rendered ``prompt``,
    when it was first ``asked``, its ``within`` seconds and ``deadline`` (ISO UTC times; None:
    no deadline) and whether it has ``expired``."""
    from .questions import about_conditions, matches

    conditions = about_conditions(about)
    with engine_for(db) as engine:
        infos = [_known(engine, run_id)] if run_id is not None else engine.runs()
        found = [{"run_id": info.run_id, **q} for info in infos
                 for q in _open_questions(engine, info) or _questions_if_unheld(engine, info)]
    return [q for q in found if matches(q, conditions)]


def answer(run_id: str, name: str, value_json: str, *, index: Sequence[int] | None = None, db: str | None = None,
           allow_changed_spec: bool = False, about: Mapping[str, object] | Sequence[str] | None = None) -> dict[str, Any]:
    """Answer the open question ``name`` (the one whose payload has the field values ``about``,
    see :mod:`agentmonad.durable.questions`, or at element ``index``, when the run asks it more
    than once) of the waiting run ``run_id`` with ``value_json``, and resume the run: its Outcome
    as :func:`run` gives it (``"status": "waiting"`` again while other questions are open). The
    answer is validated against the answer type when the run resumes; a bad one is a
    :class:`DurableError` with pydantic's errors, and the run keeps waiting. So is an answer to
    a question whose deadline passed, or to a cancelled run. While another process runs the run
    (resuming or answering it), this waits for it, then answers if the question is still open."""
    from .questions import narrowed

    with engine_for(db) as engine, _locked(engine, run_id):
        info = _known(engine, run_id)
        questions = _open_questions(engine, info) or _interrupted_questions(engine, info)
        if not questions:
            status = status_of(info, engine.steps(run_id))
            if status == "cancelled":
                raise DurableError(f"run {run_id} was cancelled: it takes no answer (`mcec runs resume {run_id}` "
                                   "takes it up again, and it waits for its questions again)")
            raise DurableError(f"run {run_id} is not waiting for an answer (it is {status})")
        question = _chosen(run_id, narrowed(run_id, questions, name, about, index), name, index)
        if question["expired"]:
            raise DurableError(
                f"the question {name} of run {run_id} expired at {question['deadline']} (within {question['within']:g} s): "
                f"the answer is refused; `mcec runs resume {run_id}` (or `mcec runs expire`) goes on with "
                f"NoAnswer(reason=\"deadline\")"
            )
        key = str(question["key"])
        # recorded before the run goes on: a process killed from here on leaves the answer in the
        # database, and whichever process runs the run next applies it
        engine.give_answer(run_id, key, question["question"], _parsed(question, value_json))
        resumed = _resume(engine, run_id, allow_changed_spec)
        refused = resumed.get("refused", {}).get(key)
        if refused is not None:
            engine.take_back_answer(run_id, key)
            raise DurableError(f"bad answer to {name}: {'; '.join(refused)} (the run keeps waiting)")
        return resumed


def resume_expired(*, db: str | None = None) -> list[str]:
    """Resume every waiting run one of whose questions has expired (its ``within S`` passed):
    each records ``NoAnswer(reason="deadline")`` for it and goes on (to its ``catch``/``orelse``,
    or fails with it). The ids of the runs resumed, oldest first. What ``runs expire`` does, for a
    cron job or a worker to call now and then. A run that cannot be resumed (its spec changed,
    another process holds it) does not stop the others: a :class:`DurableError` naming each is
    raised after them."""
    with engine_for(db) as engine:
        now = time.time()
        due = [info.run_id for info in engine.runs() if any(_expired(q, now) for q in _open_questions(engine, info))]
    resumed: list[str] = []
    problems: list[str] = []
    for run_id in due:  # each resume launches DBOS in this process and stops it again
        try:
            with engine_for(db) as engine, _locked(engine, run_id):
                if not any(q["expired"] for q in _open_questions(engine, _known(engine, run_id))):
                    continue  # answered or resumed by another process meanwhile
                _resume(engine, run_id, False)
            resumed.append(run_id)
        except DurableError as exc:
            problems.append(f"{run_id}: {exc}")
    if problems:
        done = f" (resumed: {', '.join(resumed)})" if resumed else ""
        raise DurableError("some runs with expired questions were not resumed" + done + ":\n  " + "\n  ".join(problems))
    return resumed


def _chosen(run_id: str, questions: list[dict[str, Any]], name: str, index: Sequence[int] | None) -> dict[str, Any]:
    """The open question ``name`` (at ``index``) of ``questions``, or a message saying which there are."""
    named = [q for q in questions if q["name"] == name]
    if index is not None:
        named = [q for q in named if list(q["index"]) == list(index)]
    if len(named) == 1:
        return named[0]
    shown = ", ".join(f"{q['name']}" + (f" --index {','.join(map(str, q['index']))}" if q["index"] else "")
                      for q in questions)
    if not named:
        raise DurableError(f"run {run_id} has no open question {name!r}" + (f" at index {list(index)}" if index else "")
                           + f"; it waits on: {shown}")
    raise DurableError(f"run {run_id} asks {name!r} {len(named)} times: say which with --index ({shown})")


def _parsed(question: dict[str, Any], value_json: str) -> object:
    """``value_json`` as JSON data (the answer type's check is the resumed run's: the journal
    validates it with the type the run asks with, and refuses it with pydantic's errors)."""
    try:
        return json.loads(value_json)
    except ValueError as exc:
        raise DurableError(f"the answer to {question['name']} is not JSON: {exc}") from exc
    except RecursionError:
        raise DurableError(f"the answer to {question['name']} is nested too deeply to be an answer") from None


# ----------------------------------------------------------------------------- workers


def enqueue(target: pytypes.ModuleType | str, pipeline: str, input_json: str, *, queue: str = "default",
            run_id: str | None = None, db: str | None = None, state_json: str | None = None,
            models: Sequence[str] = ()) -> dict[str, Any]:
    """Put a durable run of the compiled module ``target`` on ``queue`` for a worker to run instead
    of running it here: ``{"run_id", "status": "enqueued", "queue"}`` (:func:`enqueue_request`)."""
    name, version = compiled_version(target)
    return enqueue_request(version, lambda chosen: new_request(version, pipeline=pipeline, input_json=input_json,
                                                               state_json=state_json, models=models, run_id=chosen,
                                                               module=name),
                           queue=queue, run_id=run_id, db=db, same=(name, None, pipeline, input_json))


def enqueue_request(version: SpecVersion, make: Callable[[str], RunRequest], *, queue: str = "default",
            run_id: str | None = None, db: str | None = None,
            same: tuple[str | None, str | None, str, str]) -> dict[str, Any]:
    """Put a durable run of ``version`` — the request ``make`` makes for its run id — on ``queue``
    for a worker of this version to run: ``{"run_id", "status": "enqueued", "queue"}``. The input
    is checked first (nothing is enqueued when it is bad); an existing ``run_id`` of the same run
    (``same``: its module, spec, pipeline and input) is not enqueued again (its status is given)."""
    from .queues import check_queue_name, queue_name

    check_queue_name(queue)
    if run_id is not None:
        check_run_id(run_id)
    with engine_for(db) as engine:
        if run_id is not None:
            existing = engine.run(run_id)
            if existing is not None:
                _same_run(existing, *same)
                return {"run_id": run_id, "status": status_of(existing, engine.steps(run_id)), "queue": queue}
        chosen = run_id or uuid.uuid4().hex[:12]
        # the queue goes with the request: a queued run hands its `each` elements to workers wherever
        # it is resumed (:func:`_elements`)
        request = replace(make(chosen), queue=queue_name(queue, version.digest))
        engine.enqueue(chosen, request.as_json(), str(request.queue))
        return {"run_id": chosen, "status": "enqueued", "queue": queue}


def result(run_id: str, *, db: str | None = None, wait: bool = True, poll_seconds: float = 0.1,
           timeout: float | None = None) -> dict[str, Any] | None:
    """The Outcome of the run ``run_id`` as :func:`run` gives it, wherever
    it ran; with ``wait``, once it has ended (or stops to wait for people), else None while it has
    not (nor when ``timeout`` seconds pass first)."""
    with engine_for(db) as engine:
        if engine.run(run_id) is None:
            raise DurableError(f"no durable run {run_id!r} (see `mcec runs list`)")
        ended = engine.wait_result(run_id, poll_seconds, timeout if wait else 0.0)
        return None if ended is None else _payload(run_id, ended)
