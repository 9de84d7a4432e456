"""The kill-point property (tests/durable/test_kill.py) extended to the races of durable runs
(docs/language.md §13, "One process runs a run at a time"; issue 42): two processes act on one
run — or on one database — and hypothesis draws when the second acts, so that the race lands
anywhere that matters. In every example:

- **a resume racing a worker**: ``mcec runs resume`` of a run enqueued for a worker, before the
  worker takes it, while it runs it, or after it finished. The resume is either refused in one
  line (exit 2: the run is on the workers' queue, or a worker runs it, or it does not exist yet)
  or gives the run's Outcome; the run ends with the Outcome of an uninterrupted run, with no
  further resume, and each of its effects ran once, in one process.
- **an answer racing an unrelated durable run**: ``mcec runs answer`` of a waiting run while
  another process of the same database starts or runs a run of its own. The answer exits 0 with
  the answered run's Outcome (the answer is never lost), and the answered run's effect ran once,
  in the answering process — never in the unrelated one.
- **a cancel during a step**: ``mcec runs cancel`` anywhere in a run of twenty sync steps, or as
  it ends. Once it returned no effect starts; the run ends ``cancelled``; one ``runs resume``
  finishes it with the Outcome of an uninterrupted run, no completed step run twice (the step in
  flight when the cancel came is recorded). A cancel that comes too late is refused in one line,
  and the run ends as an uninterrupted one.
- **a lock lost** (Postgres): the connection of the run's advisory lock is ended by the server
  (``pg_terminate_backend``) anywhere in the run, and ``runs resume`` is started — while the
  first process may still be inside a step, or after it ended. The first process stops before
  its next effect with one line (exit 2), the resume finishes the run with the right Outcome, and
  only the step in flight when the lock went may have run twice. On SQLite the run lock is a row
  naming its holder (:mod:`agentmonad.durable.locks`), taken over only once the holder's process
  is gone: a living process cannot lose it, so its counterpart there is the holder's death, the
  kill-point property itself.

A refused action is always one line and exit status 2, never a traceback. Every process is
forked from a warmed-up parent (:class:`Zygote`), a process of its own with its own DBOS launch,
connections and lock, so that ``MCEC_RACE_EXAMPLES`` (22 unless told) examples per race and
database — enough to find a race that breaks one run in ten with a probability of 90 % — fit
in CI. Each example uses fresh run ids."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from agentmonad.durable.runs import result
from tests.durable.processes import Child, Zygote, lines, until

FOLDER = Path(__file__).parent
CHAIN = FOLDER / "syncbox" / "chain.mce"
WORK = FOLDER / "workerbox" / "work.mce"
CLAIMS = FOLDER / "answerbox" / "claims.mce"
#: The queue the races' worker serves.
QUEUE = "races"

#: Examples per race and database (``MCEC_RACE_EXAMPLES`` to change it): 22 finds a timing that
#: breaks one run in ten with a probability of 90 %.
EXAMPLES = int(os.environ.get("MCEC_RACE_EXAMPLES", "22"))

#: The pause of each step of the worker's runs (three steps).
WORKER_PACE = 0.05
#: The pause of each step of ``twenty`` (chain.mce), in the cancel and lock races.
CHAIN_PACE = 0.02
#: The same in the lock race: a step long enough for a resume to take the run up while the process
#: that lost the lock is still inside it.
LOCK_PACE = 0.2
#: The pause of each step of the unrelated run in the answer race: it runs all along the answer.
OTHER_PACE = 0.05


def seconds(low: float, high: float) -> st.SearchStrategy[float]:
    """A delay from ``low`` to ``high`` seconds, by the millisecond: spread over the range (drawn
    floats crowd near zero, where most of these races have nothing to land on)."""
    return st.integers(round(low * 1000), round(high * 1000)).map(lambda ms: ms / 1000)


race = settings(max_examples=EXAMPLES, deadline=None, phases=(Phase.explicit, Phase.generate),
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """The module's ``mcec`` processes (workers too) start warm: each is a process of its own."""
    forked = Zygote([CHAIN, WORK, CLAIMS], tmp_path_factory.mktemp("zygote"))
    yield forked
    forked.close()


def _fresh(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns()}"


def _refused(done: subprocess.CompletedProcess[str], *reasons: str) -> None:
    """``done`` is a refusal: exit status 2 and one line saying one of ``reasons``."""
    message = done.stderr.strip()
    assert done.returncode == 2 and len(message.splitlines()) == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in message and "internal compiler error" not in message, message
    assert any(reason in message for reason in reasons), message


def _outcome(stdout: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(stdout)
    payload.pop("run_id", None)
    return payload


# ----------------------------------------------------------------------------- a resume racing a worker


@dataclass(frozen=True)
class Served:
    """A worker of work.mce serving :data:`QUEUE` of ``db``, its steps' lines in ``effects``
    (``STEP RUN PID``)."""

    child: Child
    db: str
    effects: Path


def _serve(zygote: Zygote, folder: Path, db: str) -> Served:
    effects = folder / "worker-effects.txt"
    child = zygote.start(["worker", str(WORK), "--db", db, "--queue", QUEUE, "--poll-seconds", "0.05"], folder,
                         MCEC_EFFECTS=str(effects), MCEC_PACE=str(WORKER_PACE))
    until(lambda: "serving" in child.stderr_so_far() or child.poll() is not None, "the worker to serve")
    assert child.poll() is None, child.stderr_so_far()
    return Served(child, db, effects)


def _stop(served: Served) -> None:
    """SIGTERM: the worker drains and exits 0, having logged no traceback."""
    served.child.kill(signal.SIGTERM)
    ended = served.child.wait(60)
    assert ended.returncode == 0 and "Traceback" not in ended.stderr, ended.stderr


@pytest.fixture(scope="module")
def sqlite_worker(zygote: Zygote, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A worker on an SQLite file of the module's own."""
    folder = tmp_path_factory.mktemp("sqlite-worker")
    served = _serve(zygote, folder, f"sqlite:///{folder / 'runs.sqlite'}")
    yield served
    _stop(served)


@pytest.fixture(scope="module")
def postgres_worker(zygote: Zygote, tmp_path_factory: pytest.TempPathFactory,
                    postgres_url: str) -> Iterator[Served]:  # noqa: F811  (the fixture)
    """A worker on the real Postgres server."""
    served = _serve(zygote, tmp_path_factory.mktemp("postgres-worker"), postgres_url)
    yield served
    _stop(served)


def _resume_racing_a_worker(zygote: Zygote, served: Served, tmp: Path, resume_lead: float) -> None:
    """Enqueue a run for the worker (a process that starts as the resuming one does) and resume
    it ``resume_lead`` seconds after: the resume looks at the run before it exists, while it is on
    the queue, while the worker runs it, or once it has ended."""
    run_id, db = _fresh("rw"), served.db
    enqueuing = zygote.start(["run", str(WORK), "work", "--input", json.dumps(run_id), "--durable", "--queue", QUEUE,
                              "--run-id", run_id, "--db", db], tmp)
    time.sleep(resume_lead)
    resumed = zygote.run(["runs", "resume", run_id, "--db", db], tmp, MCEC_EFFECTS=str(served.effects),
                         MCEC_PACE=str(WORKER_PACE))
    enqueued = enqueuing.wait()
    assert enqueued.returncode == 0, enqueued.stderr
    expected = {"ok": True, "value": f"{run_id}.first.second.third", "state": {"done": ["first", "second", "third"]}}
    if resumed.returncode == 0:  # the worker had ended it: its outcome
        assert _outcome(resumed.stdout) == expected
    else:  # the worker runs it or is about to, or the resume came before the run existed
        _refused(resumed, "is being run by worker", "is enqueued for a worker", f"no durable run '{run_id}'")
    # the run ends with an uninterrupted run's Outcome (no further resume needed), its steps once each
    ended = result(run_id, db=db, wait=True, timeout=60)
    assert ended is not None and ended.pop("run_id") == run_id and ended == expected, ended

    def worker_done() -> bool:
        log = served.child.stderr_so_far()
        return log.count(f"run {run_id} started") == log.count(f"run {run_id} finished") + log.count(f"run {run_id} stopped")

    until(worker_done, "the worker to end the run")
    ran = [line.split() for line in lines(served.effects) if f" {run_id} " in line]
    assert len({pid for _, _, pid in ran}) == 1, f"two processes ran {run_id}: {ran}"
    assert Counter(step for step, _, _ in ran) == Counter({"first": 1, "second": 1, "third": 1}), ran
    assert f"run {run_id} stopped" not in served.child.stderr_so_far(), served.child.stderr_so_far()


@race
@given(resume_lead=seconds(0, 0.45))
@example(resume_lead=0.2)  # the example test this replaced (test_worker_runs_once.py): the resume while the worker runs the run
def test_a_resume_racing_a_worker_never_runs_the_run_twice_on_sqlite(
    zygote: Zygote, sqlite_worker: Served, tmp_path: Path, resume_lead: float
) -> None:
    _resume_racing_a_worker(zygote, sqlite_worker, tmp_path, resume_lead)


@race
@given(resume_lead=seconds(0, 0.45))
@example(resume_lead=0.2)
def test_a_resume_racing_a_worker_never_runs_the_run_twice_on_postgres(
    zygote: Zygote, postgres_worker: Served, tmp_path: Path, resume_lead: float
) -> None:
    _resume_racing_a_worker(zygote, postgres_worker, tmp_path, resume_lead)


# ----------------------------------------------------------------------------- an answer racing an unrelated run


def _answer_racing_another_run(zygote: Zygote, tmp: Path, db: str, other_lead: float) -> None:
    """A run waits for an answer; an unrelated durable run (sixty slow steps) starts
    ``other_lead`` seconds before the answer is given (after it, when negative): the answer
    lands while the other process launches DBOS, polls its queues or runs its steps."""
    run_id, other_id = _fresh("ra"), _fresh("other")
    effects, other_effects = tmp / f"{run_id}.txt", tmp / f"{other_id}.txt"
    waiting = zygote.run(["run", str(CLAIMS), "settle", "--input", '"E1"', "--durable", "--run-id", run_id,
                          "--db", db], tmp, MCEC_EFFECTS=str(effects))
    assert waiting.returncode == 0 and json.loads(waiting.stdout)["status"] == "waiting", waiting
    other_args = ["run", str(CHAIN), "chain", "--input", "0", "--durable", "--run-id", other_id, "--db", db]
    answer_args = ["runs", "answer", run_id, "approve", "--value", "true", "--db", db]

    def start_other() -> Child:
        return zygote.start(other_args, tmp, MCEC_EFFECTS=str(other_effects), MCEC_PACE=str(OTHER_PACE))

    other = start_other() if other_lead >= 0 else None
    time.sleep(max(other_lead, 0))
    answering = zygote.start(answer_args, tmp, MCEC_EFFECTS=str(effects))
    if other is None:
        time.sleep(-other_lead)
        other = start_other()
    answered = answering.wait()
    try:
        # the answer is kept and applied: the run's Outcome, its one effect run once, here
        assert answered.returncode == 0, answered.stderr
        assert _outcome(answered.stdout) == {"ok": True, "value": ["paid"], "state": {"noted": 1}}, answered.stdout
        assert [line.split() for line in lines(effects)] == [["noted", "True", str(answering.pid)]]
        assert other.poll() is None, "the other run ended before the answer did: it raced nothing"
    finally:
        other.kill()
        other.wait()


@race
@given(other_lead=seconds(-0.2, 0.5))
# the example test this replaced (test_answers_kept.py): the answer while the other run runs its steps
@example(other_lead=0.4)
def test_an_answer_racing_an_unrelated_run_is_kept_and_applied_by_its_process_on_sqlite(
    zygote: Zygote, tmp_path: Path, other_lead: float
) -> None:
    _answer_racing_another_run(zygote, tmp_path, f"sqlite:///{tmp_path / 'runs.sqlite'}", other_lead)


@race
@given(other_lead=seconds(-0.2, 0.5))
@example(other_lead=0.4)
def test_an_answer_racing_an_unrelated_run_is_kept_and_applied_by_its_process_on_postgres(
    zygote: Zygote, tmp_path: Path, postgres_url: str, other_lead: float  # noqa: F811  (the fixture)
) -> None:
    _answer_racing_another_run(zygote, tmp_path, postgres_url, other_lead)


# ----------------------------------------------------------------------------- a cancel during a step

#: Steps of the pipeline ``twenty`` of chain.mce, and what an uninterrupted run of it gives.
STEPS = 20
CHAINED = {"ok": True, "value": STEPS, "state": {"done": STEPS}}


def _chain(tmp: Path, run_id: str, db: str) -> tuple[list[str], Path]:
    """The command that runs ``twenty`` as the run ``run_id``, and its effects file."""
    return (["run", str(CHAIN), "twenty", "--input", "0", "--durable", "--run-id", run_id, "--db", db],
            tmp / f"{run_id}.txt")


def _each_step_once(effects: Path) -> None:
    assert Counter(lines(effects)) == Counter(f"bump {i}" for i in range(STEPS)), "a completed step ran again"


def _cancel_during_a_step(zygote: Zygote, tmp: Path, db: str, cancel_after: float) -> None:
    """Cancel a run of twenty sync steps ``cancel_after`` seconds after its first effect: inside
    a step, between two, or once it ended."""
    run_id = _fresh("rc")
    args, effects = _chain(tmp, run_id, db)
    running = zygote.start(args, tmp, MCEC_EFFECTS=str(effects), MCEC_PACE=str(CHAIN_PACE))
    until(lambda: bool(lines(effects)) or running.poll() is not None, "the run's first effect")
    time.sleep(cancel_after)
    cancelled = zygote.run(["runs", "cancel", run_id, "--db", db], tmp)
    after_cancel = lines(effects)
    ran = running.wait()
    if cancelled.returncode != 0:  # it came too late: the run had ended, as an uninterrupted one does
        _refused(cancelled, f"run {run_id} has already ended (finished)")
        assert ran.returncode == 0 and _outcome(ran.stdout) == CHAINED, (ran.stdout, ran.stderr)
        _each_step_once(effects)
        return
    # once the cancel returned, no effect started: the run ended cancelled where it was
    assert lines(effects) == after_cancel, "an effect ran after `runs cancel` returned"
    assert ran.returncode == 1 and _outcome(ran.stdout) == {"ok": None, "status": "cancelled"}, (ran.stdout, ran.stderr)
    assert ran.stderr == "", ran.stderr
    # one resume finishes it; every completed step ran once (the one in flight at the cancel was recorded)
    resumed = zygote.run(["runs", "resume", run_id, "--db", db], tmp, MCEC_EFFECTS=str(effects))
    assert resumed.returncode == 0 and _outcome(resumed.stdout) == CHAINED, resumed.stderr
    _each_step_once(effects)


@race
@given(cancel_after=seconds(0, 0.45))
@example(cancel_after=CHAIN_PACE * 1.5)  # the example test this replaced (test_cancel_during_step.py): during the second step
def test_a_cancel_during_a_step_stops_the_run_before_its_next_effect_on_sqlite(
    zygote: Zygote, tmp_path: Path, cancel_after: float
) -> None:
    _cancel_during_a_step(zygote, tmp_path, f"sqlite:///{tmp_path / 'runs.sqlite'}", cancel_after)


@race
@given(cancel_after=seconds(0, 0.45))
@example(cancel_after=CHAIN_PACE * 1.5)
def test_a_cancel_during_a_step_stops_the_run_before_its_next_effect_on_postgres(
    zygote: Zygote, tmp_path: Path, postgres_url: str, cancel_after: float  # noqa: F811  (the fixture)
) -> None:
    _cancel_during_a_step(zygote, tmp_path, postgres_url, cancel_after)


# ----------------------------------------------------------------------------- a lock lost (Postgres)


def _lock_holder(url: str, run_id: str) -> int | None:
    """The server process of the connection holding the run's advisory lock (mcec's, not one of
    DBOS's own): None while no process holds it."""
    with psycopg.connect(url, autocommit=True) as connection:
        holders = [row[0] for row in connection.execute(
            "select pid from pg_locks where locktype = 'advisory' and granted and "
            "((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)", (f"mcec.run:{run_id}",))]
    assert len(holders) <= 1, holders
    return holders[0] if holders else None


@race
@given(lose_after=seconds(0, 0.4), resume_lead=st.none() | seconds(-0.3, 0.3))
# the example test this replaced (test_lock_lost.py): the lock lost during the second step, the resume once the process stopped
@example(lose_after=LOCK_PACE * 1.5, resume_lead=None)
@example(lose_after=0.347, resume_lead=-0.236)  # a resume waiting for the lock: it ran when the lock went
@example(lose_after=0.022, resume_lead=0.022)  # once: the first process's stop landed on the resume (1 in ~50)
def test_a_process_that_lost_the_run_lock_stops_before_its_next_effect_on_postgres(
    zygote: Zygote, tmp_path: Path, postgres_url: str, lose_after: float, resume_lead: float | None,  # noqa: F811
) -> None:
    """The lock's connection is ended ``lose_after`` seconds after the run's first effect; ``runs
    resume`` starts ``resume_lead`` seconds after that (before, when negative: it waits for the
    lock), so that it takes the run up while the first process is still inside its step, or once
    the first process ended (None)."""
    run_id = _fresh("rl")
    args, effects = _chain(tmp_path, run_id, postgres_url)
    running = zygote.start(args, tmp_path, MCEC_EFFECTS=str(effects), MCEC_PACE=str(LOCK_PACE))
    until(lambda: bool(lines(effects)) or running.poll() is not None, "the run's first effect")
    resume = ["runs", "resume", run_id, "--db", postgres_url]
    resuming = None
    if resume_lead is not None and resume_lead < 0:
        time.sleep(max(lose_after + resume_lead, 0))
        resuming = zygote.start(resume, tmp_path, MCEC_EFFECTS=str(effects))
        time.sleep(min(-resume_lead, lose_after))
    else:
        time.sleep(lose_after)
    holder = _lock_holder(postgres_url, run_id)
    assert holder is not None and running.poll() is None, "the run ended before its lock was lost"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("select pg_terminate_backend(%s)", (holder,))
    if resume_lead is None:
        stopped = running.wait()
        resuming = zygote.start(resume, tmp_path, MCEC_EFFECTS=str(effects))
    else:
        if resuming is None:
            time.sleep(resume_lead)
            resuming = zygote.start(resume, tmp_path, MCEC_EFFECTS=str(effects))
        stopped = running.wait()
    resumed = resuming.wait()
    _refused(stopped, "lost the run's lock")
    assert resumed.returncode == 0 and _outcome(resumed.stdout) == CHAINED, resumed.stderr
    ran = Counter(lines(effects))
    assert set(ran) == {f"bump {i}" for i in range(STEPS)}, ran
    # a completed step ran once; the one in flight when the lock went may have run again, in the
    # resuming process — only when that started before the first process had stopped
    twice = sum(ran.values()) - STEPS
    assert twice == 0 or (resume_lead is not None and twice == 1), ran
