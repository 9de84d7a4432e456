"""``mcec worker``: a long-running process that runs the durable runs enqueued for its specs
(docs/language.md "Workers").

A worker compiles every spec it is given once, listens to the DBOS queues of those spec versions
(:func:`mcec.durable.queues.queues_for`), and runs what DBOS's dequeue hands it with the same
workflow body as ``mcec run --durable`` (:func:`mcec.durable._execute`): a run's journal is in
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
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from mcec.durable import DurableError, _compiled, _engine, _execute, _first_line, _served, _shown_url

if TYPE_CHECKING:
    from agentmonad.durable.dbos import QueueSpec, Runner
    from agentmonad.durable.journal import Record, Store

__all__ = ["DEFAULT_CONCURRENCY", "serve"]

#: Runs one worker runs at once when ``--concurrency`` is not given.
DEFAULT_CONCURRENCY = 8


def _served_spec(spec: str) -> tuple[str, str]:
    """Compile ``spec`` once for the worker's runs (DurableError when it does not check); its
    absolute path and its fingerprint's digest."""
    from mcec.check.pyindex import package_root
    from mcec.fingerprint import fingerprint

    path = Path(spec)
    if not path.is_file():
        raise DurableError(f"no spec {spec}")
    root = str(package_root(path))
    if root not in sys.path:  # the spec's Python modules import as `mcec run` imports them
        sys.path.insert(1, root)
    compiled = _compiled(spec, generate=True)
    assert compiled.program is not None
    absolute = str(path.resolve())
    _served[(absolute, True)] = compiled
    return absolute, fingerprint(compiled.program).digest


def _outcome_kind(result: dict[str, Any]) -> str:
    if result.get("ok"):
        return "ok"
    if result.get("status") == "waiting":
        return "waiting"
    for kind in ("defect", "failed"):
        if kind in result:
            return kind
    return "err"


def serve(specs: Sequence[str], *, db: str | None = None, queue: str = "default",
          concurrency: int | None = DEFAULT_CONCURRENCY, drain_seconds: float = 30.0, heartbeat_seconds: float = 1.0,
          stale_after: float = 10.0, poll_seconds: float = 1.0, log: TextIO | None = None,
          stop: threading.Event | None = None) -> int:
    """Serve the runs of ``specs`` enqueued on ``queue`` in the database ``db`` until ``stop`` is
    set (or SIGTERM/SIGINT, when called from the main thread); the exit status (0).

    ``concurrency``: runs at once in this worker (None: no limit). Every ``heartbeat_seconds``
    the worker records that it is alive and re-enqueues the runs of workers silent for
    ``stale_after`` seconds; queues are polled every ``poll_seconds``. On stop it drains: runs in
    flight have ``drain_seconds`` to finish; when some are still running then, the process
    exits at once (``os._exit(0)``) leaving them to another worker. Raises
    :class:`DurableError` when a spec does not check or the database cannot be reached."""
    from mcec.durable.queues import check_queue_name, queues_for
    from mcec.fingerprint import SpecFingerprint

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
    if not specs:
        raise DurableError("give the worker at least one spec to serve")
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    local: dict[str, str] = {}  # by spec digest, the spec file this worker runs it with
    queues: dict[str, QueueSpec] = {}
    for spec in specs:
        absolute, digest = _served_spec(spec)
        local.setdefault(digest, absolute)
        program = _served[(absolute, True)].program
        assert program is not None
        for q in queues_for(program, queue, concurrency):
            queues.setdefault(q.name, q)
    executor_id = f"mcec-worker-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    tag = f"mcec worker {executor_id[len('mcec-worker-'):]}"

    def say(text: str) -> None:
        out.write(f"{tag}: {text}\n")
        out.flush()

    async def runner(request: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
        digest = SpecFingerprint.from_json(request["fingerprint"]).digest
        if digest in local:  # the run's spec version as this worker has it (the enqueuer's path may not exist here)
            request = {**request, "spec": local[digest], "cwd": cwd}
        run_id = request.get("run_id", "?")
        say(f"run {run_id} started ({request['pipeline']} of {os.path.relpath(str(request['spec']), cwd)}"
            f"{', resumed after ' + str(len(records)) + ' recorded effects' if records else ''})")
        started = time.monotonic()
        try:
            result = await _execute(request, store, records)
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
    with _engine(db) as engine:
        engine.executor_id = executor_id
        try:
            engine.heartbeat(names)  # a row before any run is taken: a worker killed at once is recoverable
            engine.launch(runner, queues=queues, executor_id=executor_id, poll_seconds=poll_seconds, resumes=False)
        except Exception as exc:
            raise DurableError(f"cannot serve queues in {_shown_url(engine.url)}: {_first_line(exc)}") from exc
        shown = "no limit" if concurrency is None else str(concurrency)
        say(f"serving {', '.join(names)} from {_shown_url(engine.url)} ({shown} at once)")
        while not stopping.wait(heartbeat_seconds):
            try:
                engine.heartbeat(names)
                for dead, runs in engine.recover_stale(stale_after).items():
                    say(f"worker {dead} is silent: re-enqueued {len(runs)} of its runs"
                        + (f" ({', '.join(runs)})" if runs else ""))
            except Exception as exc:  # the database went away for a moment: try again next beat
                say(f"heartbeat failed: {_first_line(exc)}")
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
                    say(f"heartbeat failed: {_first_line(exc)}")
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

