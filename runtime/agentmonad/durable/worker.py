"""A worker (``mcec worker``, ``python -m agentmonad worker``): a long-running process that runs the
durable runs enqueued for its spec versions (docs/language.md "Workers").

A worker loads every compiled module it is given once, listens to the DBOS queues of those spec
versions (:func:`agentmonad.durable.queues.queues_for`), and runs what DBOS's dequeue hands it with
the same workflow body as a run started here (:func:`agentmonad.durable.runs.execute`): a run's journal is in
the database, so whichever worker runs it, or takes it up after another died, replays what was
recorded and runs the rest.

Its main thread keeps a heartbeat (the ``mcec_workers`` table) and, every heartbeat, re-enqueues
the ``PENDING`` runs of workers whose heartbeat went stale. On SIGTERM or SIGINT it stops taking
runs, lets those in flight finish for up to ``drain_seconds``, and exits 0; a run still going then
is left ``PENDING`` (its heartbeat marked stale) for another worker to take up from its journal.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO, final

from .errors import DurableError
from .request import RunRequest
from .runs import engine_for, execute, shown_url
from .version import Loader, SpecVersion, first_line, loader, set_loader

if TYPE_CHECKING:
    from .dbos import QueueSpec, Runner
    from .journal import Record, Store

__all__ = ["DEFAULT_CONCURRENCY", "serve"]

#: Runs one worker runs at once when ``--concurrency`` is not given.
DEFAULT_CONCURRENCY = 8


@final
class ServedLoader:
    """The loader of a worker: a run of a version the worker serves runs with the version it
    loaded (by digest: the module or spec the run started with may not exist on this machine);
    any other goes to the loader that was in charge."""

    def __init__(self, versions: dict[str, SpecVersion], fallback: Loader) -> None:
        self.versions = versions
        self.fallback = fallback

    def load(self, request: RunRequest) -> SpecVersion:
        """The served version of ``request``'s digest, else the fallback's."""
        found = self.versions.get(request.digest)
        return found if found is not None else self.fallback.load(request)

    def changed(self, request: RunRequest, version: SpecVersion | None) -> str | None:
        """The fallback's."""
        return self.fallback.changed(request, version)


def _outcome_kind(result: dict[str, Any]) -> str:
    if result.get("ok"):
        return "ok"
    if result.get("status") == "waiting":
        return "waiting"
    for kind in ("defect", "failed"):
        if kind in result:
            return kind
    return "err"


def serve(versions: Sequence[tuple[str, SpecVersion]], *, db: str | None = None, queue: str = "default",
          concurrency: int | None = DEFAULT_CONCURRENCY, drain_seconds: float = 30.0, heartbeat_seconds: float = 1.0,
          stale_after: float = 10.0, poll_seconds: float = 1.0, log: TextIO | None = None,
          stop: threading.Event | None = None) -> int:
    """Serve the runs of ``versions`` (each with the name it is shown by) enqueued on ``queue`` in
    the database ``db`` until ``stop`` is set (or SIGTERM/SIGINT, when called from the main
    thread); the exit status (0). ``concurrency``: runs at once in this worker (None: no limit).
    Every ``heartbeat_seconds`` the worker records that it is alive and re-enqueues the runs of
    workers silent for ``stale_after`` seconds; queues are polled every ``poll_seconds``. On stop it
    drains: runs in flight have ``drain_seconds`` to finish; when some are still running then, the
    process exits at once (``os._exit(0)``) leaving them to another worker. Raises
    :class:`DurableError` when a version cannot be served or the database cannot be reached."""
    from .queues import check_queue_name, queues_for

    out = log if log is not None else sys.stderr
    check_queue_name(queue)
    if concurrency is not None and concurrency < 1:
        raise DurableError(f"--concurrency {concurrency}: a worker runs at least 1 run at once")
    for name, value in (("drain", drain_seconds), ("heartbeat", heartbeat_seconds), ("stale-after", stale_after),
                        ("poll", poll_seconds)):
        if value < 0 or (value == 0 and name != "drain"):
            raise DurableError(f"--{name}-seconds {value}: give a positive number of seconds")
    if stale_after <= 2 * heartbeat_seconds:
        raise DurableError(f"a worker is taken for dead after {stale_after}s of silence: make that more than two "
                           f"heartbeats ({heartbeat_seconds}s each)")
    if not versions:
        raise DurableError("give the worker at least one spec to serve")
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    served: dict[str, SpecVersion] = {}
    shown: dict[str, str] = {}
    queues: dict[str, QueueSpec] = {}
    for name, version in versions:
        if not version.digest:
            raise DurableError(f"{name} cannot be served: its compiled module has no fingerprint (compile it again)")
        served.setdefault(version.digest, version)
        shown.setdefault(version.digest, name)
        for q in queues_for(version, queue, concurrency):
            queues.setdefault(q.name, q)
    set_loader(ServedLoader(served, loader()))
    executor_id = f"mcec-worker-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    tag = f"mcec worker {executor_id[len('mcec-worker-'):]}"

    def say(text: str) -> None:
        out.write(f"{tag}: {text}\n")
        out.flush()

    async def runner(data: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
        run_id = data.get("run_id", "?")
        what = shown.get(str(data.get("digest")), str(data.get("spec") or data.get("module")))
        say(f"run {run_id} started ({data.get('pipeline')} of {what}"
            f"{', resumed after ' + str(len(records)) + ' recorded effects' if records else ''})")
        started = time.monotonic()
        try:
            result = await execute(data, store, records)
        except BaseException as exc:
            say(f"run {run_id} stopped: {type(exc).__name__} ({time.monotonic() - started:.2f}s)")
            raise
        say(f"run {run_id} finished: {_outcome_kind(result)} ({time.monotonic() - started:.2f}s)")
        return result

    stopping = stop if stop is not None else threading.Event()
    signalled: list[str] = []

    def on_signal(number: int, frame: FrameType | None) -> None:
        signalled.append(signal.Signals(number).name)
        stopping.set()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():  # a library caller's own thread keeps its signals
        for number in (signal.SIGTERM, signal.SIGINT):
            previous[number] = signal.signal(number, on_signal)
    try:
        _work(db, list(queues.values()), executor_id, runner, poll_seconds, heartbeat_seconds, stale_after,
              drain_seconds, concurrency, stopping, signalled, say)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 0


def _work(db: str | None, queues: list[QueueSpec], executor_id: str, runner: Runner, poll_seconds: float,
          heartbeat_seconds: float, stale_after: float, drain_seconds: float, concurrency: int | None,
          stopping: threading.Event, signalled: list[str], say: Callable[[str], None]) -> None:
    """The worker's life once its specs are compiled: launch, beat and recover until stopped, drain."""
    names = sorted(q.name for q in queues)
    with engine_for(db, keep=False) as engine:
        engine.executor_id = executor_id
        try:
            engine.heartbeat(names)  # a row before any run is taken: a worker killed at once is recoverable
            engine.launch(runner, queues=queues, executor_id=executor_id, poll_seconds=poll_seconds, resumes=False)
        except Exception as exc:
            raise DurableError(f"cannot serve queues in {shown_url(engine.url)}: {first_line(exc)}") from exc
        shown = "no limit" if concurrency is None else str(concurrency)
        say(f"serving {', '.join(names)} from {shown_url(engine.url)} ({shown} at once)")
        while not stopping.wait(heartbeat_seconds):
            try:
                engine.heartbeat(names)
                for dead, runs in engine.recover_stale(stale_after).items():
                    say(f"worker {dead} is silent: re-enqueued {len(runs)} of its runs"
                        + (f" ({', '.join(runs)})" if runs else ""))
            except Exception as exc:  # the database went away for a moment: try again next beat
                say(f"heartbeat failed: {first_line(exc)}")
        engine.stop_taking()
        held = engine.in_flight()
        say(f"{' '.join(signalled) or 'stop'}: taking no more runs; draining {held} in flight (up to {drain_seconds:g}s)")
        deadline = time.monotonic() + drain_seconds
        last_beat = time.monotonic()
        while engine.in_flight() and time.monotonic() < deadline:
            time.sleep(0.05)
            if time.monotonic() - last_beat >= heartbeat_seconds:  # still alive: peers must not take these runs
                last_beat = time.monotonic()
                try:
                    engine.heartbeat(names)
                except Exception as exc:
                    say(f"heartbeat failed: {first_line(exc)}")
        left = engine.in_flight()
        if left:
            engine.mark_dead()
            say(f"left {left} runs in flight for another worker to take up; exiting")
            sys.stdout.flush()
            # DBOS's shutdown would stop the runs' event loop under them; the process ends here
            # and the runs stay PENDING in the database, each resumed from its journal elsewhere
            os._exit(0)
        engine.forget()
        say("stopped")

