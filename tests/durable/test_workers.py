"""``mcec worker`` (docs/language.md "Workers"), on a real PostgreSQL server, with worker
processes: runs enqueued (``mcec run --durable --queue``, :func:`mcec.durable.enqueue`) are run
by the workers serving their spec version, each by one worker; a worker killed while it holds
runs loses none of them (its peers re-enqueue them and every run ends with the Outcome of an
in-process run, no completed effect run twice); SIGTERM drains; a run of a version no worker
has waits for one that has it.

The steps (``workerbox/impl.py``) append ``STEP RUN PID`` to a file per effect: what the tests
count to see which worker ran what, and how often."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from mcec import durable
from tests.durable.processes import until

ROOT = Path(__file__).resolve().parents[2]
WORK = Path(__file__).parent / "workerbox" / "work.mce"
STEPS = ("first", "second", "third")
#: Fast beats for tests: a worker is taken for dead after 3 s of silence (15 missed beats: on a
#: busy machine a live worker's beat can be a second late, and 1.2 s took one for dead).
FAST = ["--poll-seconds", "0.05", "--heartbeat-seconds", "0.2", "--stale-after", "3"]


def _env(effects: Path, pace: float) -> dict[str, str]:
    env = dict(os.environ)
    env.update(MCEC_EFFECTS=str(effects), MCEC_PACE=str(pace), PYTHONPATH=str(ROOT), NO_COLOR="1")
    env.pop("MCEC_DB", None)
    return env


class Worker:
    """A ``python -m mcec worker`` process, its log in a file (read while it runs)."""

    def __init__(self, tmp: Path, specs: list[Path], db: str, queue: str, effects: Path, pace: float,
                 *extra: str) -> None:
        self.log = tmp / f"worker-{uuid.uuid4().hex[:6]}.log"
        self._err = self.log.open("w")
        args = [sys.executable, "-m", "mcec", "worker", *map(str, specs), "--db", db, "--queue", queue, *FAST, *extra]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=self._err, env=_env(effects, pace),
                                        cwd=tmp)

    @property
    def pid(self) -> str:
        return str(self.process.pid)

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8")

    def wait_for(self, what: str, timeout: float = 60) -> None:
        until(lambda: what in self.text() or self.process.poll() is not None, f"{what!r} in {self.log}", timeout, every=0.02)
        assert what in self.text(), self.text()

    def stop(self, how: signal.Signals = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(how)
        status = self.process.wait(timeout)
        self._err.close()
        return status


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """``start(specs, db, queue, effects, pace, *extra)``: a worker, killed at the test's end if still running."""
    started: list[Worker] = []

    def start(specs: list[Path], db: str, queue: str, effects: Path, pace: float, *extra: str) -> Worker:
        worker = Worker(tmp_path, specs, db, queue, effects, pace, *extra)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait(30)


#: The queue of the fleet every test shares (each with runs of its own names).
SHARED = "shared"


class Fleet:
    """Three workers of work.mce on the queue ``shared``, 3 runs at once each, steps of 0.05 s
    (0.5 s for a ``slow…`` run), all writing to ``effects``."""

    def __init__(self, tmp: Path, db: str) -> None:
        self.db, self.effects = db, tmp / "fleet-effects.txt"
        self.workers = [Worker(tmp, [WORK], db, SHARED, self.effects, 0.05, "--concurrency", "3") for _ in range(3)]
        for worker in self.workers:
            worker.wait_for(f"serving mcec.{SHARED}.")

    @property
    def pids(self) -> set[str]:
        return {w.pid for w in self.workers}

    def effects_of(self, prefix: str) -> list[tuple[str, str, str]]:
        return [e for e in _effects(self.effects) if e[1].startswith(prefix)]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Fleet]:  # noqa: F811
    made = Fleet(tmp_path_factory.mktemp("fleet"), postgres_url)
    yield made
    for worker in made.workers:  # SIGTERM: each drains and exits 0 (a test killed none of them)
        status = worker.stop()
        assert status == 0 and "Traceback" not in worker.text(), worker.text()


def _effects(path: Path) -> list[tuple[str, str, str]]:
    """(step, run input, worker pid) per effect, in the order they ran."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [(step, run, pid) for step, run, pid in (line.split() for line in lines)]


def _expected(run_input: str) -> dict[str, Any]:
    """The Outcome an in-process (not durable, not queued) run of work.mce gives."""
    from mcec.cli.common import load_source
    from mcec.compiler import compile_source
    from mcec.run.runner import load_module, prepare, run_pipeline

    if not _MODULE:
        source, _ = load_source(WORK)
        assert source is not None
        result = compile_source(source)
        assert result.program is not None and result.generated is not None
        _MODULE.append((result.program, load_module(result.program, result.generated)))
    program, module = _MODULE[0]
    value, state = prepare(program, "work", json.dumps(run_input), None)
    payload: dict[str, Any] = json.loads(json.dumps(run_pipeline(module, "work", state, value).payload))
    return payload


_MODULE: list[Any] = []


def _enqueue(db: str, queue: str, inputs: list[str]) -> None:
    for run_input in inputs:
        queued = durable.enqueue(WORK, "work", json.dumps(run_input), queue=queue, run_id=run_input, db=db)
        assert queued == {"run_id": run_input, "status": "enqueued", "queue": queue}


def _finished(db: str, run_id: str) -> dict[str, Any]:
    outcome = durable.result(run_id, db=db, wait=True, timeout=60)
    assert outcome is not None, f"run {run_id} did not finish"
    assert outcome.pop("run_id") == run_id
    return outcome


def test_three_workers_run_thirty_runs_each_once_with_in_process_outcomes(fleet: Fleet) -> None:
    inputs = [f"t{i}" for i in range(30)]
    _enqueue(fleet.db, SHARED, inputs)
    for run_input in inputs:
        assert _finished(fleet.db, run_input) == _expected(run_input)
    ran = fleet.effects_of("t")
    # every effect once, every run's effects in one worker, and the runs spread over the workers
    assert Counter((step, run) for step, run, _ in ran) == {(step, run): 1 for step in STEPS for run in inputs}
    by_run: dict[str, set[str]] = defaultdict(set)
    for _, run, pid in ran:
        by_run[run].add(pid)
    assert all(len(pids) == 1 for pids in by_run.values()), by_run
    assert len({pid for pids in by_run.values() for pid in pids}) >= 2
    statuses = {r.run_id: r.status for r in durable.list_runs(db=fleet.db)}
    assert all(statuses[run] == "finished" for run in inputs)
    assert all(f"run {run} started" in "".join(w.text() for w in fleet.workers) for run in inputs)


def test_the_runs_of_a_killed_worker_are_recovered_by_the_others(
    fleet: Fleet, workers: Callable[..., Worker], tmp_path: Path
) -> None:
    effects, queue = tmp_path / "effects.txt", "kill"
    # the victim alone serves the queue when the runs come, so it holds all three; their first
    # steps take 0.3 s, their second 30 s: it is killed part-way through every one of them
    victim = workers([WORK], fleet.db, queue, effects, 0.3, "--concurrency", "3")
    victim.wait_for(f"serving mcec.{queue}.")
    inputs = [f"slowk{i}" for i in range(3)]
    _enqueue(fleet.db, queue, inputs)
    # two live workers on the queue (and the fleet) all look for dead workers and may take the runs up
    others = [workers([WORK], fleet.db, queue, effects, 0.005) for _ in range(2)]
    until(lambda: len(_effects(effects)) == 3, "the victim's first steps", 60, every=0.02)
    for other in others:
        other.wait_for(f"serving mcec.{queue}.")
    before = _effects(effects)
    victim.stop(signal.SIGKILL)
    assert {(step, run, pid) for step, run, pid in before} == {("first", run, victim.pid) for run in inputs}
    for run_input in inputs:
        assert _finished(fleet.db, run_input) == _expected(run_input)
    ran = _effects(effects)
    counts = Counter((step, run) for step, run, _ in ran)
    # every effect the victim completed ran once, and each run's rest ran once, in one of the
    # others (DBOS's dequeue gives a re-enqueued run to one worker), from its journal
    assert counts == {(step, run): 1 for step in STEPS for run in inputs}, ran
    assert {pid for _, _, pid in ran[3:]} <= {other.pid for other in others}
    logs = "".join(w.text() for w in [*fleet.workers, *others])
    # each run re-enqueued once, however many workers looked at once
    recoveries = re.findall(rf"worker mcec-worker-\S+-{victim.pid}-\w+ is silent: re-enqueued \d+ of its runs \(([^)]*)\)", logs)
    assert sorted(run for line in recoveries for run in line.split(", ")) == inputs, logs
    resumed = "".join(other.text() for other in others)
    assert all(resumed.count(f"run {run} started (work of ") == 1 for run in inputs), resumed
    assert resumed.count("resumed after 1 recorded effects") == 3, resumed
    for other in others:
        assert other.stop() == 0


def test_sigterm_drains_and_leaves_what_outlasts_the_grace_to_another_worker(
    tmp_path: Path, postgres_url: str, workers: Callable[..., Worker]  # noqa: F811
) -> None:
    effects, queue = tmp_path / "effects.txt", "drain"
    # steps of 0.1 s; a `slow` run's second of 10 s, which outlasts the 4 s grace
    worker = workers([WORK], postgres_url, queue, effects, 0.1, "--concurrency", "2", "--drain-seconds", "4")
    worker.wait_for("serving mcec.drain.")
    _enqueue(postgres_url, queue, ["d0", "slowd1"])
    until(lambda: worker.text().count("started (") == 2, "both runs started", 60, every=0.02)
    assert worker.stop(signal.SIGTERM) == 0, worker.text()
    log = worker.text()
    assert "SIGTERM: taking no more runs; draining 2 in flight" in log, log
    assert "run d0 finished: ok" in log and "left 1 runs in flight for another worker" in log, log
    statuses = {r.run_id: r.status for r in durable.list_runs(db=postgres_url)}
    # PENDING, or already re-enqueued by a live worker that saw its heartbeat marked stale
    assert statuses["d0"] == "finished" and statuses["slowd1"] in ("running", "enqueued")
    assert Counter((s, r) for s, r, _ in _effects(effects) if r == "d0") == {(s, "d0"): 1 for s in STEPS}
    # the next worker on the queue takes the run up from its journal (it, or any live worker,
    # found the first one's heartbeat stale and re-enqueued the run)
    other = workers([WORK], postgres_url, queue, effects, 0.005)
    left = len(_effects(effects))
    assert _finished(postgres_url, "slowd1") == _expected("slowd1")
    assert {pid for _, _, pid in _effects(effects)[left:]} == {other.pid}
    counts = Counter((s, r) for s, r, _ in _effects(effects) if r == "slowd1")
    assert set(counts) == {(s, "slowd1") for s in STEPS} and sum(counts.values()) <= 4  # one may have been in flight
    assert other.stop() == 0


def test_a_run_of_another_spec_version_waits_for_a_worker_of_that_version(
    fleet: Fleet, workers: Callable[..., Worker], mcec_in_process: Any, tmp_path: Path
) -> None:
    newer = WORK.parent / f"work_v2_{uuid.uuid4().hex[:6]}.mce"  # beside work.mce: its imports resolve the same
    newer.write_text(WORK.read_text(encoding="utf-8").replace("first >>= second >>= third", "first >>= third"),
                     encoding="utf-8")
    try:
        queued = durable.enqueue(newer, "work", '"v2"', queue=SHARED, run_id="v2", db=fleet.db)
        assert queued["status"] == "enqueued"
        _enqueue(fleet.db, SHARED, ["v1"])
        assert _finished(fleet.db, "v1") == _expected("v1")
        time.sleep(0.5)  # a few more polls of the fleet
        listed = mcec_in_process("runs", "list", "--db", fleet.db, "--format", "json", cwd=tmp_path)
        assert {r["run_id"]: r["status"] for r in json.loads(listed.stdout)}["v2"] == "enqueued"
        shown = mcec_in_process("runs", "show", "v2", "--db", fleet.db, cwd=tmp_path)
        assert shown.returncode == 0 and "(enqueued" in shown.stdout, shown
        assert durable.result("v2", db=fleet.db, wait=False) is None
        new = workers([newer], fleet.db, SHARED, fleet.effects, 0.0)
        outcome = _finished(fleet.db, "v2")
        assert outcome["ok"] and outcome["value"] == "v2.first.third"
        assert {pid for _, run, pid in fleet.effects_of("v2")} == {new.pid}
        assert new.stop() == 0
        # its queue is known now, and still no worker of the old version takes a run from it
        durable.enqueue(newer, "work", '"v3"', queue=SHARED, run_id="v3", db=fleet.db)
        time.sleep(1.5)  # the fleet looks for new queues every second
        assert {r.run_id: r.status for r in durable.list_runs(db=fleet.db)}["v3"] == "enqueued"
    finally:
        newer.unlink()


def test_run_queue_enqueues_and_wait_prints_the_outcome(fleet: Fleet, tmp_path: Path) -> None:
    env = _env(tmp_path / "not-here.txt", 0.0)
    run = [sys.executable, "-m", "mcec", "run", str(WORK), "work", "--durable", "--db", fleet.db, "--queue", SHARED]
    waited = subprocess.run([*run, "--input", '"c1"', "--wait"], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=120)
    assert waited.returncode == 0, waited.stderr
    payload = json.loads(waited.stdout)
    assert payload.pop("run_id") and payload == _expected("c1")
    assert not (tmp_path / "not-here.txt").exists()  # the run ran in a worker, not in that process
    assert {pid for _, _, pid in fleet.effects_of("c1")} <= fleet.pids


def test_bad_input_is_a_message_and_exit_status_2(tmp_path: Path, postgres_url: str, mcec_in_process: Any) -> None:  # noqa: F811
    broken = tmp_path / "broken.mce"
    broken.write_text("pipeline p : str -> str = nowhere;\n", encoding="utf-8")
    work, db = str(WORK), postgres_url
    unreachable = "postgresql://me:secret@127.0.0.1:1/runs"
    cases: list[tuple[list[str], dict[str, str], str]] = [
        (["worker", "missing.mce", "--db", db], {}, "mcec worker: no spec missing.mce"),
        (["worker", str(broken), "--db", db], {}, "does not check"),
        (["worker", work], {"MCEC_DB": unreachable}, "cannot open the run database postgresql://me@127.0.0.1:1/runs"),
        (["worker", work, "--db", db, "--concurrency", "0"], {}, "--concurrency: 0: give a number more than 0"),
        (["worker", work, "--db", db, "--concurrency", "many"], {}, "--concurrency: 'many' is not a number"),
        (["worker", work, "--db", db, "--queue", "a b"], {}, "bad queue name 'a b'"),
        (["worker", work, "--db", db, "--heartbeat-seconds", "1", "--stale-after", "1.5"], {}, "more than two heartbeats"),
        (["run", work, "work", "--input", '"x"', "--queue", "q"], {}, "go with --durable"),
        (["run", work, "work", "--input", '"x"', "--durable", "--wait", "--db", db], {}, "--wait goes with --queue"),
        (["run", work, "work", "--input", "3", "--durable", "--queue", "q", "--db", db, "--run-id", "bad-input"], {},
         "mcec run: "),
        (["run", work, "work", "--input", '"x"', "--durable", "--queue", "q"], {"MCEC_DB": unreachable},
         "cannot open the run database"),
    ]
    for args, env, message in cases:
        done = mcec_in_process(*args, cwd=tmp_path, env=env)
        assert done.returncode == 2 and message in done.stderr, (args, done)
        assert "Traceback" not in done.stderr and "secret" not in done.stderr
    assert "bad-input" not in {r.run_id for r in durable.list_runs(db=db)}  # bad input: nothing was enqueued
    # and as a process: the status the shell sees, no traceback
    done = subprocess.run([sys.executable, "-m", "mcec", "worker", "missing.mce", "--db", db], capture_output=True,
                          text=True, env=_env(tmp_path / "effects.txt", 0.0), cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and done.stderr == "mcec worker: no spec missing.mce\n", done


def test_a_run_resumed_by_hand_runs_in_the_resuming_process_not_in_a_worker(
    fleet: Fleet, mcec_in_process: Any, tmp_path: Path
) -> None:
    # enqueued where no worker listens, cancelled, then resumed by hand: DBOS puts a resumed run
    # on its internal queue, which every process polls; the workers leave it to the resumer (an
    # answer to a waiting run, say, lives in the resumer's memory only)
    durable.enqueue(WORK, "work", '"h0"', queue="nobody", run_id="h0", db=fleet.db)
    durable.cancel("h0", db=fleet.db)
    effects = tmp_path / "effects.txt"
    resumed = mcec_in_process("runs", "resume", "h0", "--db", fleet.db, cwd=tmp_path,
                              env={"MCEC_EFFECTS": str(effects), "MCEC_PACE": "0"})
    assert resumed.returncode == 0, resumed.stderr
    payload = json.loads(resumed.stdout)
    assert payload.pop("run_id") == "h0" and payload == _expected("h0")
    assert {pid for _, _, pid in _effects(effects)} == {str(os.getpid())}
    assert not fleet.effects_of("h0")
