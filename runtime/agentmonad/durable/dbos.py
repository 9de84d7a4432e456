"""Durable runs on DBOS Transact (``dbos>=3.4,<4``, the ``agentmonad[durable]`` extra): the only
module of the runtime that imports ``dbos``.

A durable run is one DBOS workflow, ``mcec_run``, whose id is the run id and whose input is the
run's request (a JSON object: which spec, pipeline, input…; what runs it is the ``runner`` the
caller gives :class:`Engine`). Every effect the journal records is one DBOS step whose output is
the effect's record (:data:`~agentmonad.durable.journal.Record`).

DBOS replays a workflow's steps by their step id, which it assigns in call order — and the
branches of a ``par``/``each`` call in whatever order they get there (DBOS issue #688). So a
durable run does not use DBOS's replay: when the workflow (re)starts it reads the records of the
steps it has, replays those by their *own* identities (:class:`DurableJournal`), and draws past
the step ids already used (``DBOS.reserve_step``), so that every new effect gets a new step.

Everything is stored as JSON (:class:`JsonSerializer`), never pickle. DBOS recovers pending
workflows of *this* process's executor when it launches; each process is an executor of its
own, so a process never takes up another one's runs by itself: a run is resumed when someone asks
(:meth:`Engine.resume`).

Workers (docs/language.md "Workers"): a run can also be *enqueued* (:meth:`Engine.enqueue`) on a
DBOS queue, which a worker process listens to (``Engine.launch(..., queues=…)``); DBOS's dequeue
(one transaction that turns an ``ENQUEUED`` run ``PENDING`` and names the executor) is what
makes one worker, and one only, take it. A worker also writes a heartbeat into a table of ours
(``mcec_workers``: DBOS keeps none); a live worker re-enqueues the ``PENDING`` runs of a worker
whose heartbeat is stale (:meth:`Engine.recover_stale`), on the queue each was on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import datetime
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, final

import sqlalchemy as sa
from dbos import DBOS, DBOSClient, EnqueueOptions, Serializer, SetWorkflowID

from .dbos_internals import (
    CANCELLED_ERRORS, DEFAULT_QUEUE_POLLING_INTERVAL_SEC, INTERNAL_QUEUE_NAME, DBOSAwaitedWorkflowCancelledError,
    dbos_instance, forget_instance, internal_queue, refuse_pickled_rows, set_worker_concurrency, system_engine,
)

from .codec import RecordError
from .errors import RunNotStarted
from .urls import file_identity
from .journal import CANCELLED, NOT_EFFECTS, STOPPED, WAITING, Record, record_from_json

__all__ = ["Engine", "DBOSStore", "JsonSerializer", "QueueSpec", "RunInfo", "RunNotStarted", "WORKFLOW", "WorkerInfo"]

#: The name of the workflow every durable run is.
WORKFLOW = "mcec_run"
#: DBOS's application name and version of every mcec process (versions are the spec
#: fingerprint's business, carried by the queue names, not DBOS's code hash).
APPLICATION = "mcec"

#: What runs a workflow's body (a run's, an element's): its request, the store to record in, and the
#: records it has so far (by key); gives its result (JSON).
Runner = Callable[[dict[str, Any], "DBOSStore", dict[str, Record]], Awaitable[dict[str, Any]]]


@final
class JsonSerializer(Serializer):
    """What DBOS stores, as JSON (never pickle): a run's request and result, each record. An
    exception DBOS stores (a step that failed with a defect) is its type and message."""

    def serialize(self, data: Any) -> str:
        if isinstance(data, BaseException):
            return json.dumps({"__error__": type(data).__name__, "message": str(data)})
        return json.dumps(data, default=str)

    def deserialize(self, serialized_data: str) -> Any:
        data = json.loads(serialized_data)
        if isinstance(data, dict) and "__error__" in data:
            return RuntimeError(f"{data['__error__']}: {data['message']}")
        return data

    def name(self) -> str:
        return "mcec_json"


@final
class DBOSStore:
    """A journal's :class:`~agentmonad.durable.journal.Store` in the running DBOS workflow. A sync
    effect's record is written before the effect returns (:meth:`keep`); a record left for later (a
    deadline's expiry) is written by a task started at once, so it is kept by the run's next await."""

    __slots__ = ("_pending", "_writer")

    def __init__(self) -> None:
        self._pending: list[Record] = []
        self._writer: asyncio.Task[None] | None = None

    async def step(self, key: str, body: Callable[[], Awaitable[Record]]) -> Record:
        await self.flush()

        async def run() -> Record:
            return await body()

        record: Record = await DBOS.run_step_async({"name": key}, run)
        return record

    def keep(self, record: Record) -> None:
        """Write ``record`` as a step of the workflow now. The caller is sync code on the event
        loop (a sync effect that just completed), where DBOS allows no sync step: the step id is
        drawn here (:meth:`DBOS.reserve_step`) and the write runs on a thread in this workflow's
        context while the loop waits for it — as the sync effect itself held the loop."""
        reservation = DBOS.reserve_step()
        context = contextvars.copy_context()

        def kept() -> Record:
            return record

        def write() -> Record:
            return reservation.run({"name": str(record["key"])}, kept)

        _keeper().submit(context.run, write).result()

    def later(self, record: Record) -> None:
        self._pending.append(record)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write())

    async def _write(self) -> None:
        while self._pending:
            record = self._pending.pop(0)

            async def kept(record: Record = record) -> Record:
                return record

            await DBOS.run_step_async({"name": str(record["key"])}, kept)

    async def flush(self) -> None:
        await self._write()
        if self._writer is not None:
            await self._writer


_keepers: list[concurrent.futures.ThreadPoolExecutor] = []


def _keeper() -> concurrent.futures.ThreadPoolExecutor:
    """The thread that writes sync effects' records (one: the loop waits for each write)."""
    if not _keepers:
        _keepers.append(concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcec-keep"))
    return _keepers[0]


@final
@dataclass(frozen=True, slots=True)
class RunInfo:
    """One durable run as DBOS has it: ``status`` is DBOS's (``PENDING``, ``SUCCESS``, ``ERROR``,
    ``CANCELLED``, ``ENQUEUED``…), ``request`` the run's request, ``result`` its result when it ended."""

    run_id: str
    status: str
    request: dict[str, Any]
    result: dict[str, Any] | None
    created: float | None
    updated: float | None
    #: The DBOS queue the run was enqueued on (None: started in a process of its own).
    queue: str | None = None
    #: The executor (process) that runs or ran it last.
    executor: str | None = None


@final
@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A DBOS queue a worker listens to: ``concurrency`` runs at once across every worker (None: no
    limit), ``worker_concurrency`` at once in each worker (None: no limit)."""

    name: str
    concurrency: int | None
    worker_concurrency: int | None


@final
@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One worker's heartbeat row: its executor id, where it runs, the queues it listens to, and
    the database clock's time of its start and of its last heartbeat (epoch seconds)."""

    executor_id: str
    host: str
    pid: int
    queues: tuple[str, ...]
    started: float
    heartbeat: float


#: What runs each workflow's body in this process, by workflow name: a run's (:meth:`Engine.launch`
#: gives it), an element's (:func:`agentmonad.durable.runs.engine_for`: any process may run one).
runners: dict[str, Runner] = {}


def _journal_rows(steps: Sequence[Mapping[str, Any]]) -> list[tuple[int, Record]]:
    """The journal records among a workflow's DBOS steps (DBOS's own steps have none), each read
    as a :class:`Record` (a row of another shape is refused), with its step id."""
    return [(int(step["function_id"]), record_from_json(step["output"])) for step in steps
            if isinstance(step["output"], dict) and "key" in step["output"]]


@DBOS.workflow(name=WORKFLOW)
async def _mcec_run(request: dict[str, Any]) -> dict[str, Any]:
    """The workflow of every durable run."""
    return await _replayed(runners[WORKFLOW], request)


async def _replayed(runner: Runner, request: dict[str, Any]) -> dict[str, Any]:
    """The body of every workflow (a run's, an ``each`` element's): replay what is recorded, record
    the rest. A body that waits for people records its open questions (a step of their own) and
    the workflow cancels itself: a cancelled workflow is one DBOS resumes (a finished one it does
    not), and it holds nothing in memory or in a queue, so an answer from any process resumes it
    (:meth:`Engine.resume`); a cancelled one, or one that cannot run here, the same way."""
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    try:
        return await _replay(runner, request, workflow_id)
    finally:
        told = _endings.get(workflow_id)
        if told is not None and not told.done():
            told.set_result(None)


#: The resumes waiting in this process for their run to end here (:meth:`Engine.resume`), by run id.
_endings: dict[str, concurrent.futures.Future[None]] = {}


def _ending(run_id: str) -> concurrent.futures.Future[None]:
    """What tells this process's resume of ``run_id`` that its workflow's body returned here."""
    ended: concurrent.futures.Future[None] = concurrent.futures.Future()
    _endings[run_id] = ended
    return ended


async def _replay(runner: Runner, request: dict[str, Any], workflow_id: str) -> dict[str, Any]:
    # read outside the workflow (a read inside it would be a step of its own)
    recorded = await asyncio.to_thread(_client[0].list_workflow_steps, workflow_id)
    used = max((step["function_id"] for step in recorded), default=-1)
    for _ in range(used + 1):  # new effects take new step ids (DBOS's own replay is by call order)
        DBOS.reserve_step()
    try:
        records = {record["key"]: record for _, record in _journal_rows(recorded)}
        result = await runner(request, DBOSStore(), records)
    except (RunNotStarted, RecordError) as exc:  # a row that is no record: refused, the workflow left resumable
        await _stop(workflow_id, {"key": f"{STOPPED}:{used + 1}", "kind": STOPPED, "step": STOPPED, "site": None,
                                  "reason": str(exc)})
        return {"ok": False, "failed": str(exc), "resumable": True}
    if result.get("status") == WAITING:
        questions = result.get("questions", [])
        await _stop(workflow_id, {"key": f"{WAITING}:{len(questions)}", "kind": WAITING, "step": WAITING,
                                  "site": None, "questions": questions, "refused": result.get("refused", {})})
    elif result.get("status") == CANCELLED:
        await _stop(workflow_id, {"key": CANCELLED, "kind": CANCELLED, "step": CANCELLED, "site": None})
    return result


async def _stop(run_id: str, record: Record) -> None:
    """Keep ``record`` (a step of its own: why the workflow stops) and cancel the workflow. A
    waiting run cancelled by the user keeps a ``cancelled`` record the same way, after its waiting one."""

    async def kept() -> Record:
        return record

    await DBOS.run_step_async({"name": str(record["kind"])}, kept)
    # through the client, outside the workflow: DBOS's own cancel inside it would be an operation
    # of the workflow, taking a step id a resumed run's next effect is then given
    await asyncio.to_thread(_client[0].cancel_workflow, run_id)


_client: list[DBOSClient] = []
#: The engine launched in this process (what its runs read their answers through).
_launched: list[Engine] = []


#: How often a running run reads whether it was asked to stop, at most (seconds): a `runs cancel`
#: waits for the run to stop, so this is how long an effect may still start after the ask.
STOP_POLL_SECONDS = 0.1


def stop_asked(run_id: str) -> Callable[[], bool]:
    """Whether ``run_id`` was asked to stop, for its journal to consult before each effect: read
    from the run database at most every :data:`STOP_POLL_SECONDS` (an effect boundary costs no
    read in between)."""
    engine = _launched[0] if _launched else None
    read_at = float("-inf")
    asked_then = False

    def asked() -> bool:
        nonlocal read_at, asked_then
        if engine is None:
            return False
        now = time.monotonic()
        if now - read_at >= STOP_POLL_SECONDS:
            read_at, asked_then = now, engine.stop_is_asked(run_id)
        return asked_then

    return asked


def given_answers(run_id: str) -> dict[str, tuple[object, object]]:
    """The answers given to the questions of ``run_id`` (:meth:`Engine.answers`), for the process
    that runs it: read from the run database, wherever they were given."""
    return _launched[0].answers(run_id) if _launched else {}


#: What a forked child inherited of its parent's DBOS (instance, engines, clients): kept, never used
#: or closed here — closing a connection inherited from the parent would end the parent's session.
_inherited: list[object] = []


def _forget_after_fork() -> None:
    """In a forked child, nothing of the parent's DBOS is this process's: its threads do not run
    here (a resume would wait for a queue poller that does not exist) and its connections are
    the parent's. The child's next call launches its own."""
    _inherited.extend([*_launched, *_client, *_keepers, forget_instance()])
    _launched.clear()
    _client.clear()
    _keepers.clear()
    _endings.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


#: The databases this process has brought up to DBOS's schema (once is enough: a process that
#: enqueues many runs opens the database for each).
_migrated: set[tuple[str, tuple[int, int] | None]] = set()


def _status(raw: Any) -> RunInfo:
    inputs = raw.input or {}
    args = inputs.get("args") if isinstance(inputs, dict) else None
    request = args[0] if args and isinstance(args[0], dict) else {}
    output = raw.output if isinstance(raw.output, dict) else None
    created = raw.created_at / 1000 if raw.created_at else None
    updated = raw.updated_at / 1000 if raw.updated_at else None
    return RunInfo(raw.workflow_id, str(raw.status), request, output, created, updated, raw.queue_name, raw.executor_id)


_metadata = sa.MetaData()
#: The workers' heartbeats (DBOS keeps no table of live executors): one row per worker process,
#: its ``heartbeat`` the database clock's epoch seconds, so machines' clocks need not agree.
_workers = sa.Table(
    "mcec_workers",
    _metadata,
    sa.Column("executor_id", sa.Text, primary_key=True),
    sa.Column("host", sa.Text, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("queues", sa.Text, nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("heartbeat", sa.Float, nullable=False),
)


#: The answers people gave to a waiting run's questions (docs/language.md §15), one row per
#: question: written by ``runs answer`` before it resumes the run, read by whichever process runs
#: it next. ``question`` is the question's key (its effect's identity), ``payload`` the question it
#: answers and ``answer`` the answer (both JSON): an answer applies only to that very question.
_answers = sa.Table(
    "mcec_answers",
    _metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("question", sa.Text, primary_key=True),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("given", sa.Float, nullable=False),
)


#: The runs someone asked to stop (``mcec runs cancel``): a row per run, written by the command and
#: read by whichever process runs the run, which stops before its next effect
#: (:func:`stop_asked`); a resume takes the run up again and removes it.
_cancels = sa.Table(
    "mcec_cancels",
    _metadata,
    sa.Column("run_id", sa.Text, primary_key=True),
    sa.Column("asked", sa.Float, nullable=False),
)


def _db_now(dialect: str) -> sa.ColumnElement[float]:
    """The database clock, in epoch seconds (every worker's heartbeat is stamped by one clock)."""
    if dialect == "sqlite":
        return sa.literal_column("((julianday('now') - 2440587.5) * 86400.0)", sa.Float)
    return sa.literal_column("extract(epoch from clock_timestamp())", sa.Float)


class _QuietCancels(logging.Filter):
    """DBOS logs a traceback when a workflow ends cancelled; a run that waits for people ends so
    every time (and a cancelled run is the user's doing): not an error to show."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], CANCELLED_ERRORS))


logging.getLogger("dbos").addFilter(_QuietCancels())
# DBOS logs at ERROR once launched (Engine.launch); before that — opening a database it cannot
# reach — its warnings would come before mcec's own message on the same failure
logging.getLogger("dbos").setLevel(logging.ERROR)
refuse_pickled_rows()


def _write_ahead(url: str) -> None:
    """Put the SQLite database at ``url`` in WAL mode (kept in the file): a step's write is one
    append and one sync, and readers (``mcec runs list`` while a run runs) do not block it; DBOS
    leaves SQLite in its rollback-journal mode, several syncs per step."""
    import sqlite3

    path = sa.make_url(url).database
    if not path or path == ":memory:":
        return
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as connection:
        connection.execute("pragma journal_mode=wal")


#: How often a process that resumes a run looks for it on its private queue until it has started,
#: and how often it reads whether the run has ended. DBOS's defaults, 1 s each, made every `runs
#: resume`, `runs answer` and `runs cancel` of a waiting run wait about 2 s doing nothing
#: (benchmarks/README.md, "Test suite").
RESUME_POLL_SECONDS = 0.02
RESULT_POLL_SECONDS = 0.1
#: How long DBOS stays launched in a process after its last call (:meth:`Engine.release`).
RESUME_GRACE_SECONDS = 2.0
#: How often the result of a run that ended in this process is read until DBOS has written it.
ENDED_POLL_SECONDS = 0.002


class _Launch(NamedTuple):
    """How an :class:`Engine` launched DBOS: :meth:`Engine.launch`'s arguments."""

    runner: Runner
    queues: tuple[QueueSpec, ...]
    executor_id: str | None
    poll_seconds: float
    resumes: bool


@final
class Engine:
    """DBOS configured for durable runs on the database at ``url`` (``sqlite:///…`` or
    ``postgresql://…``). :meth:`launch` before running; :meth:`close` after. Reading runs
    (:meth:`runs`, :meth:`run`, :meth:`steps`) and cancelling need no launch."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._launched = False
        #: How DBOS was launched (:meth:`launch`'s arguments): launched so again, it is kept as it is.
        self._launched_as: _Launch | None = None
        self._private: str | None = None
        #: Whether the private queue is polled every RESUME_POLL_SECONDS (since the launch: once slowed,
        #: its poller may sleep a slow interval before it reads a new pace, so DBOS is launched anew).
        self._private_fast = False
        #: The calls holding the engine (:meth:`hold`) and what stops DBOS once none has for a while.
        self._busy = 0
        self._timer: threading.Timer | None = None
        self._pace = threading.RLock()
        self.executor_id: str | None = None
        self._tables_made = False
        if (url, file_identity(url)) not in _migrated:  # a new database gets DBOS's tables (an up-to-date one is left as it is)
            if url.startswith("sqlite"):
                _write_ahead(url)
            DBOS.migrate(url)
        #: The SQLite file this engine opened (None: Postgres), to tell it from one made anew since
        #: (read after the migration, which makes a missing file).
        self.identity = file_identity(url)
        _migrated.add((url, self.identity))
        self.client = DBOSClient(system_database_url=url, serializer=JsonSerializer(), application_name=APPLICATION)
        _client[:] = [self.client]

    def launch(self, runner: Runner, *, queues: Sequence[QueueSpec] = (), executor_id: str | None = None,
               poll_seconds: float = 1.0, resumes: bool = True) -> None:
        """Start DBOS in this process, running durable runs with ``runner``, and take the runs
        enqueued on exactly ``queues``, each polled every ``poll_seconds``. ``executor_id`` names
        this process for recovery (default: a new id). ``resumes``: this process resumes runs
        itself (:meth:`resume`), through a queue of its own that no other process listens to — a
        worker (False) takes only what its queues hold.

        DBOS resumes a workflow by enqueuing it; on DBOS's internal queue, which every launched
        process polls, any process could take it — without the answer, the lock or the cancel
        mark the resuming process holds. So no mcec process takes from the internal queue, and a
        process that resumes a run puts it on its private queue (``mcec-resume-<executor>``,
        registered before launch so that its poller starts with DBOS, dropped by :meth:`close`).

        Launched already as asked, DBOS is kept as it is (a process that runs one run after another
        launches once); launched otherwise — or another engine launched — it is stopped first: DBOS
        is one per process."""
        runners[WORKFLOW] = runner
        launched_as = _Launch(runner, tuple(queues), executor_id, poll_seconds, resumes)
        if self._launched and self._launched_as == launched_as and (self._private is None or self._private_fast):
            return
        for engine in list(_launched):
            engine.stop()
        _launched[:] = [self]
        self._launched_as = launched_as
        self.executor_id = executor_id or f"mcec-{uuid.uuid4().hex}"
        if resumes:
            self._private = f"mcec-resume-{self.executor_id}"
            self.client.register_queue(self._private, polling_interval_sec=RESUME_POLL_SECONDS,
                                       on_conflict="always_update")
            self._private_fast = True
        DBOS(
            config={
                "name": APPLICATION,
                "system_database_url": self.url,
                "serializer": JsonSerializer(),
                # an executor of its own: DBOS recovers only this process's runs at launch (none)
                "executor_id": self.executor_id,
                # versions are the spec's fingerprint's business, not DBOS's code hash
                "application_version": APPLICATION,
                "log_level": "ERROR",
                "notification_listener_polling_interval_sec": 0.05,
                # no round trip to ping a pooled connection before each of a step's two transactions
                # (two of its seven on Postgres): a connection that died idle fails its statement,
                # and DBOS retries that (db_retry) on a new one
                "db_engine_kwargs": {"pool_pre_ping": False},
            }
        )
        # DBOS listens to every queue of the application unless told: a process must not be handed
        # runs of queues it was not asked to serve (its spec may not even be the run's)
        DBOS.listen_queues([q.name for q in queues] + ([self._private] if self._private else []))
        DBOS.launch()
        set_worker_concurrency(internal_queue(), 0)  # see above: never take another process's resumed run
        self._launched = True
        for q in queues:
            # the queue's limits live in its database row (DBOS reloads them every poll), so the
            # worker started last sets them for every worker of that queue
            DBOS.register_queue(q.name, global_concurrency=q.concurrency, worker_concurrency=q.worker_concurrency,
                                polling_interval_sec=poll_seconds, on_conflict="always_update")

    def hold(self) -> None:
        """A call of this process uses the engine: DBOS stays as it is until :meth:`release`."""
        with self._pace:
            self._busy += 1
            if self._timer is not None:
                self._timer.cancel()

    @property
    def held(self) -> bool:
        """Whether a call holds the engine now (:meth:`hold`)."""
        with self._pace:
            return self._busy > 0

    def release(self) -> None:
        """The call that held the engine is done: DBOS, launched, is stopped RESUME_GRACE_SECONDS
        later unless another call holds it by then (a process that runs or answers one run after
        another launches once; one left idle holds no connection and polls nothing). Launched to
        take `each` elements from their queues, it stops at once: a process takes elements of other
        runs only while it runs its own (a worker is the process that serves queues)."""
        with self._pace:
            self._busy -= 1
            if not self._busy and self._launched_as is not None and self._launched_as.queues:
                self.stop()
            else:
                self._start_timer()

    def _start_timer(self) -> None:
        if self._launched:
            self._timer = threading.Timer(RESUME_GRACE_SECONDS, self._on_timer)
            self._timer.daemon = True
            self._timer.start()

    def _on_timer(self) -> None:
        with self._pace:
            if not self._busy and self._launched and self.in_flight():
                self._start_timer()  # an `each` element it took from a queue still runs here: later
            elif not self._busy:
                self.stop()
            elif self._private is not None and self._private_fast:
                # a long call: its run started long ago; polling for it fast would cost ~10 % of a
                # core. The next launch starts DBOS anew (its poller may sleep a slow interval).
                self._private_fast = False
                with contextlib.suppress(Exception):  # the database went away: the next launch starts anew
                    self.client.register_queue(self._private, polling_interval_sec=DEFAULT_QUEUE_POLLING_INTERVAL_SEC,
                                               on_conflict="always_update")

    def enqueue(self, run_id: str, request: dict[str, Any], queue: str) -> None:
        """Put the run ``run_id`` with ``request`` on the DBOS queue ``queue`` for a worker to take
        (nothing runs in this process; no launch needed)."""
        options: EnqueueOptions = {"workflow_name": WORKFLOW, "queue_name": queue, "workflow_id": run_id,
                                   "app_version": APPLICATION, "workflow_id_reuse_policy": "reject"}
        self.client.enqueue(options, request)

    def wait_result(self, run_id: str, poll_seconds: float = 0.1, timeout: float | None = None) -> dict[str, Any] | None:
        """The result of ``run_id`` once it has ended (or stops to wait for people: its open
        questions, as :meth:`start` gives them); None when ``timeout`` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            info = self.run(run_id)
            if info is not None:
                if info.status == "SUCCESS" and info.result is not None:
                    return info.result
                if info.status == "CANCELLED":
                    stopped = self._stopped(run_id)
                    return stopped if stopped.get("status") != CANCELLED else {"ok": False, "failed": "it was cancelled"}
                if info.status in ("ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
                    return {"ok": False, "failed": f"it ended {info.status}"}
            if deadline is not None and time.monotonic() > deadline:
                return None
            time.sleep(poll_seconds)

    # ------------------------------------------------------------------ workers: heartbeats, recovery

    def _sql(self) -> sa.Engine:
        """The run database, with mcec's own tables in it (made by the first process to need them)."""
        engine: sa.Engine = system_engine(self.client)
        if not self._tables_made:
            try:
                _metadata.create_all(engine, checkfirst=True)
            except sa.exc.DBAPIError:
                # Postgres's CREATE TABLE IF NOT EXISTS races with another process's (a duplicate
                # type): the tables are there then, made by that process
                if not all(sa.inspect(engine).has_table(t.name) for t in _metadata.sorted_tables):
                    raise
            self._tables_made = True
        return engine

    # ------------------------------------------------------------------ answers to a waiting run's questions

    def give_answer(self, run_id: str, question: str, payload: object, answer: object) -> None:
        """Record ``answer`` to the question ``question`` (its key) of ``run_id``, asked with
        ``payload``, in one transaction: from then on whichever process runs the run applies it."""
        sql = self._sql()
        with sql.begin() as c:
            c.execute(_answers.delete().where(_answers.c.run_id == run_id, _answers.c.question == question))
            c.execute(_answers.insert().values(run_id=run_id, question=question, payload=json.dumps(payload),
                                               answer=json.dumps(answer), given=time.time()))

    def take_back_answer(self, run_id: str, question: str) -> None:
        """Remove the answer to ``question`` of ``run_id`` (the run refused it: it keeps waiting)."""
        with self._sql().begin() as c:
            c.execute(_answers.delete().where(_answers.c.run_id == run_id, _answers.c.question == question))

    def answers(self, run_id: str) -> dict[str, tuple[object, object]]:
        """The answers given to ``run_id``'s questions: by question key, the payload it answers and the answer."""
        with self._sql().begin() as c:
            rows = c.execute(sa.select(_answers.c.question, _answers.c.payload, _answers.c.answer)
                             .where(_answers.c.run_id == run_id)).fetchall()
        return {str(r.question): (json.loads(r.payload), json.loads(r.answer)) for r in rows}

    # ------------------------------------------------------------------ asking a run to stop

    def ask_to_stop(self, run_id: str) -> None:
        """Record that ``run_id`` is to stop: the process running it stops before its next effect."""
        with self._sql().begin() as c:
            c.execute(_cancels.delete().where(_cancels.c.run_id == run_id))
            c.execute(_cancels.insert().values(run_id=run_id, asked=time.time()))

    def stop_is_asked(self, run_id: str) -> bool:
        """Whether someone asked ``run_id`` to stop (and no resume took it up since)."""
        with self._sql().begin() as c:
            return c.execute(sa.select(_cancels.c.run_id).where(_cancels.c.run_id == run_id)).first() is not None

    def take_up(self, run_id: str) -> None:
        """Forget that ``run_id`` was asked to stop (a resume takes it up again)."""
        with self._sql().begin() as c:
            c.execute(_cancels.delete().where(_cancels.c.run_id == run_id))

    def heartbeat(self, queues: Sequence[str] = ()) -> None:
        """Record that this process (a launched worker) is alive (its row made on the first call)."""
        assert self.executor_id is not None, "heartbeat after launch"
        sql = self._sql()
        now = _db_now(sql.dialect.name)
        with sql.begin() as c:
            done = c.execute(_workers.update().where(_workers.c.executor_id == self.executor_id).values(heartbeat=now))
            if done.rowcount == 0:  # the first beat (or a row a peer took for dead: alive again)
                c.execute(_workers.insert().values(executor_id=self.executor_id, host=socket.gethostname(),
                                                   pid=os.getpid(), queues=json.dumps(list(queues)), started=now,
                                                   heartbeat=now))

    def mark_dead(self) -> None:
        """Mark this worker's heartbeat as stale at once: a peer recovers its runs at its next scan."""
        if self.executor_id is None:
            return
        with self._sql().begin() as c:
            c.execute(_workers.update().where(_workers.c.executor_id == self.executor_id).values(heartbeat=0.0))

    def forget(self) -> None:
        """Remove this worker's heartbeat row (it stopped with nothing left running)."""
        if self.executor_id is None:
            return
        with self._sql().begin() as c:
            c.execute(_workers.delete().where(_workers.c.executor_id == self.executor_id))

    def workers(self) -> list[WorkerInfo]:
        """Every worker with a heartbeat row, and the database clock's time now."""
        with self._sql().begin() as c:
            rows = c.execute(sa.select(_workers)).fetchall()
        return [WorkerInfo(r.executor_id, r.host, r.pid, tuple(json.loads(r.queues)), r.started, r.heartbeat)
                for r in rows]

    def live_worker(self, executor_id: str, stale_after: float) -> WorkerInfo | None:
        """The worker ``executor_id`` when its heartbeat is younger than ``stale_after`` seconds
        (by the database clock), else None: no live worker of that id."""
        sql = self._sql()
        now = _db_now(sql.dialect.name)
        with sql.begin() as c:
            row = c.execute(sa.select(_workers).where(_workers.c.executor_id == executor_id,
                                                      _workers.c.heartbeat >= now - stale_after)).first()
        if row is None:
            return None
        return WorkerInfo(row.executor_id, row.host, row.pid, tuple(json.loads(row.queues)), row.started, row.heartbeat)

    def recover_stale(self, stale_after: float) -> dict[str, list[str]]:
        """Re-enqueue the ``PENDING`` runs of every worker whose heartbeat is older than
        ``stale_after`` seconds (each back on its own queue, for any live worker serving it) and
        drop their rows; by dead executor, the runs re-enqueued. Two workers recovering at once
        is harmless: DBOS re-enqueues only a run still ``PENDING`` under the dead executor, and its
        dequeue hands each run to one worker."""
        sql = self._sql()
        now = _db_now(sql.dialect.name)
        with sql.begin() as c:
            stale = c.execute(sa.select(_workers.c.executor_id).where(
                _workers.c.heartbeat < now - stale_after, _workers.c.executor_id != (self.executor_id or ""))).scalars().all()
        recovered: dict[str, list[str]] = {}
        sys_db = dbos_instance()._sys_db
        for dead in stale:
            # what DBOS._recover_pending_workflows does, keeping which runs *this* call re-enqueued
            # (a peer recovering at the same moment finds them no longer PENDING)
            pending = sys_db.get_pending_workflows(dead, APPLICATION)
            recovered[dead] = [w.workflow_id for w in pending
                               if sys_db.reenqueue_for_recovery(w.workflow_id, [dead], INTERNAL_QUEUE_NAME)]
            with sql.begin() as c:
                c.execute(_workers.delete().where(_workers.c.executor_id == dead, _workers.c.heartbeat < now - stale_after))
        return recovered

    def stop_taking(self) -> None:
        """Stop dequeuing (the runs in flight go on): the first step of a worker's drain."""
        for event in dbos_instance().background_thread_stop_events:
            event.set()

    def in_flight(self) -> int:
        """How many runs this process is running now."""
        return len(dbos_instance()._active_workflows_set.activeList())

    def stop(self) -> None:
        """Stop DBOS, if this engine launched it (reading runs goes on: :meth:`close` ends that)."""
        with self._pace:
            if self._timer is not None:
                self._timer.cancel()
        if self._private is not None:
            try:  # its poller sees the row gone and stops; a run still on it is resumed elsewhere later
                self.client.delete_queue(self._private)
            except Exception:  # the database went away: the row is left, harmless (nobody listens to it)
                pass
            self._private = None
        if self._launched:
            DBOS.destroy(destroy_registry=False)
            self._launched, self._launched_as = False, None
            if _launched and _launched[0] is self:
                _launched.clear()

    def close(self) -> None:
        """Stop DBOS (if launched) and the client."""
        self.stop()
        self.client.destroy()

    async def start(self, run_id: str, request: dict[str, Any]) -> dict[str, Any]:
        """Start the run ``run_id`` with ``request`` and wait for its result (or for it to wait:
        ``{"status": "waiting", "questions": …}``)."""
        with SetWorkflowID(run_id):
            handle = await DBOS.start_workflow_async(_mcec_run, request)
        return await self._result(run_id, handle.get_result())

    async def resume(self, run_id: str) -> dict[str, Any]:
        """Resume the run ``run_id`` (interrupted, failed, cancelled or waiting) and wait for its
        result (or for it to wait again)."""
        assert self._private is not None, "resume after launch(resumes=True)"
        ended = _ending(run_id)
        try:
            handle = await DBOS.resume_workflow_async(run_id, queue_name=self._private)
            # it runs here (this process's private queue): its end is told here, its result then read
            # at once; DBOS's reading every RESULT_POLL_SECONDS is the fallback
            polled = asyncio.ensure_future(handle.get_result(polling_interval_sec=RESULT_POLL_SECONDS))
            told = asyncio.wrap_future(ended)
            await asyncio.wait([polled, told], return_when=asyncio.FIRST_COMPLETED)
            if not polled.done():
                soon = asyncio.ensure_future(handle.get_result(polling_interval_sec=ENDED_POLL_SECONDS))
                await asyncio.wait([polled, soon], timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
                if soon.done():  # else DBOS has not written it in a second: read it at the slow pace
                    polled, soon = soon, polled
                soon.cancel()
            return await self._result(run_id, polled)
        finally:
            _endings.pop(run_id, None)

    async def _result(self, run_id: str, result: Awaitable[Any]) -> dict[str, Any]:
        try:
            ended: dict[str, Any] = await result
        except DBOSAwaitedWorkflowCancelledError:
            return self._stopped(run_id)
        return ended

    def _stopped(self, run_id: str) -> dict[str, Any]:
        """The result of a run whose workflow is cancelled: it waits for people (its open questions),
        it could not go on (``failed``, and ``resumable``), or it was cancelled."""
        steps = self.steps(run_id)
        if steps and steps[-1]["kind"] == WAITING:
            return {"ok": None, "status": WAITING, "questions": steps[-1].get("questions", []),
                    "refused": steps[-1].get("refused", {})}
        if steps and steps[-1]["kind"] == STOPPED:
            return {"ok": False, "failed": str(steps[-1].get("reason")), "resumable": True}
        return {"ok": None, "status": CANCELLED}

    def run(self, run_id: str) -> RunInfo | None:
        """The run ``run_id`` (None: no such run)."""
        found = self.client.list_workflows(workflow_ids=[run_id])
        return _status(found[0]) if found else None

    def runs(self) -> list[RunInfo]:
        """Every durable run, oldest first."""
        return [_status(w) for w in self.client.list_workflows(name=WORKFLOW, sort_desc=False)]

    def runs_page(self, *, statuses: Sequence[str] | None = None, since: float | None = None,
                  until: float | None = None, limit: int, offset: int = 0, newest_first: bool = True) -> list[RunInfo]:
        """At most ``limit`` durable runs from the ``offset``-th, newest first (or oldest): those
        whose DBOS status is one of ``statuses`` (None: any), started in ``[since, until]`` (epoch
        seconds; None: no bound). One query, for a page of a long list (``mcec console``)."""
        def iso(epoch: float | None) -> str | None:
            return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).isoformat() if epoch is not None else None

        found = self.client.list_workflows(
            name=WORKFLOW, status=list(statuses) if statuses is not None else None, start_time=iso(since),
            end_time=iso(until), limit=limit, offset=offset, sort_desc=newest_first,
        )
        return [_status(w) for w in found]

    def steps(self, run_id: str) -> list[Record]:
        """The records of ``run_id``, in the order they were kept."""
        return [record for _, record in _journal_rows(self.client.list_workflow_steps(run_id))]

    def step_rows(self, run_id: str) -> list[tuple[int, Record]]:
        """The records of ``run_id`` with their DBOS step ids, in the order they were kept."""
        return _journal_rows(self.client.list_workflow_steps(run_id))

    def cancel(self, run_id: str) -> None:
        """Cancel ``run_id``: a process running it stops at its next effect."""
        self.client.cancel_workflow(run_id)


# ----------------------------------------------------------------------- each elements on queues
# (agentmonad.durable.elements: an ``each(limit=N)`` of a queued run hands its elements to a queue)

#: The name of the workflow an ``each`` element handed to a queue is.
ELEMENT_WORKFLOW = "mcec_element"


@DBOS.workflow(name=ELEMENT_WORKFLOW)
async def _mcec_element(request: dict[str, Any]) -> dict[str, Any]:
    """The workflow of one ``each`` element: its body's effects are recorded here, so a worker
    that dies mid-element leaves a workflow another one resumes from its last completed effect."""
    return await _replayed(runners[ELEMENT_WORKFLOW], request)


#: DBOS's statuses of a workflow that has ended.
_ENDED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


@final
class ElementQueues:
    """The :class:`~agentmonad.durable.elements.Backend` of a durable run on DBOS: enqueues
    element workflows and reads their results through the client (outside the run's workflow:
    none of this takes a step id of the run's)."""

    __slots__ = ("_client",)

    def __init__(self, client: DBOSClient | None = None) -> None:
        self._client = client if client is not None else _client[0]

    async def resume(self, queue: str, element_id: str) -> None:
        """Put the cancelled element ``element_id`` back on ``queue``: DBOS runs it again from its
        recorded steps."""
        await self._client.resume_workflow_async(element_id, queue_name=queue)

    async def stopped(self, element_id: str) -> Record | None:
        """Why the cancelled element ``element_id`` stopped itself: its last record when that is a
        ``waiting``, ``stopped`` or ``cancelled`` one (None: its run cancelled it)."""
        steps = await asyncio.to_thread(self._client.list_workflow_steps, element_id)
        rows = _journal_rows(steps)
        return rows[-1][1] if rows and rows[-1][1]["kind"] in NOT_EFFECTS else None

    async def enqueue(self, queue: str, element_id: str, request: dict[str, Any]) -> None:
        """Put the element ``element_id`` on ``queue`` (an id that exists already: attached to, not run again)."""
        await self._client.enqueue_async({"queue_name": queue, "workflow_name": ELEMENT_WORKFLOW,
                                          "workflow_id": element_id, "app_version": "mcec"}, request)

    async def ended(self, element_ids: list[str]) -> dict[str, tuple[str, Any]]:
        """Of ``element_ids``, those that ended: their status and result (or error)."""
        found = await asyncio.to_thread(self._client.list_workflows, workflow_ids=element_ids, status=_ENDED,
                                        load_input=False)
        return {w.workflow_id: (str(w.status), w.output if w.output is not None else w.error) for w in found}

    async def cancel(self, element_ids: list[str]) -> None:
        """Cancel the elements ``element_ids`` (those that ended keep their result)."""
        await asyncio.to_thread(self._client.cancel_workflows, element_ids)


def workflow_id() -> str | None:
    """The id of the workflow running here (None: none)."""
    return DBOS.workflow_id


