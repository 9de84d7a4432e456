"""Durable waiting, the parts beyond answering (docs/language.md §13, §15), end to end from
``.mce`` specs in real processes: an ask's deadline (``within S``) while the run waits (``runs
waiting`` shows it and whether it expired, ``runs answer`` refuses a late answer, ``runs resume``
and ``runs expire`` record ``NoAnswer`` and go on); ``runs cancel`` on a waiting run; and two
processes answering one run at once, on SQLite and on Postgres (one runs it at a time: the other
waits, then applies its answer)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from pgserver import postgres_url  # noqa: F401  (the fixture)

from mcec import durable
from tests.durable.processes import env, lines, mcec

ASKBOX = Path(__file__).parent / "askbox"
DESK = ASKBOX / "desk.mce"
#: `approve` there is `within 2`: a late answer is refused, a resume goes on with NoAnswer.
DEADLINE = ASKBOX / "deadline.mce"


def _statuses(db: str) -> dict[str, str]:
    return {r.run_id: r.status for r in durable.list_runs(db=db)}


def test_a_deadline_passes_while_the_run_waits(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    url = f"sqlite:///{tmp_path / db}"
    started = mcec(["run", str(DEADLINE), "settle", "--input", '"A-1:120"', "--durable", "--run-id", "late",
                     "--db", db], tmp_path, effects)
    assert started.returncode == 0, started.stderr
    [asked] = json.loads(started.stdout)["questions"]
    assert asked["within"] == 2
    deadline = datetime.fromisoformat(asked["deadline"]).timestamp()
    assert deadline == datetime.fromisoformat(asked["asked"]).timestamp() + 2
    [shown] = durable.waiting(db=url)
    assert (shown["deadline"], shown["expired"]) == (asked["deadline"], time.time() >= deadline)
    while time.time() < deadline:
        time.sleep(0.1)
    listed = mcec(["runs", "waiting", "--db", db], tmp_path, effects)
    [expired] = json.loads(listed.stdout)
    assert (expired["run_id"], expired["deadline"], expired["expired"]) == ("late", asked["deadline"], True)
    late = mcec(["runs", "answer", "late", "approve", "--value", '{"ok": true}', "--db", db], tmp_path, effects)
    assert late.returncode == 2 and "Traceback" not in late.stderr
    assert late.stderr == (f"mcec runs answer: the question approve of run late expired at {asked['deadline']} "
                           "(within 2 s): the answer is refused; `mcec runs resume late` (or `mcec runs expire`) "
                           'goes on with NoAnswer(reason="deadline")\n')
    assert _statuses(url) == {"late": "waiting"}
    resumed = mcec(["runs", "resume", "late", "--db", db], tmp_path, effects)
    assert resumed.returncode == 1, resumed.stderr
    error = json.loads(resumed.stdout)["error"]
    assert error["type"] == "NoAnswer" and "no answer to approve within 2.0 s" in error["message"]
    assert _statuses(url) == {"late": "finished"} and lines(effects) == []  # ended, with its error
    [*_, record] = durable.show("late", db=url)["effects"]
    assert (record["key"], record["kind"], record["outcome"]) == ("0.0/0", "human", "err")
    assert durable.resume("late", db=url) == json.loads(resumed.stdout)  # its recorded outcome


def test_runs_expire_resumes_the_runs_whose_questions_expired(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    for run_id, spec, pipeline in (("skip", DEADLINE, "settle_or_skip"), ("patient", DESK, "settle")):
        started = mcec(["run", str(spec), pipeline, "--input", '"A-1:120,B-2:80"', "--durable", "--run-id", run_id,
                         "--db", db], tmp_path, effects)
        assert json.loads(started.stdout)["status"] == "waiting", started.stderr
    url = f"sqlite:///{tmp_path / db}"
    deadline = max(datetime.fromisoformat(q["deadline"]).timestamp() for q in durable.waiting(db=url) if q["deadline"])
    while time.time() < deadline:
        time.sleep(0.1)
    expired = mcec(["runs", "expire", "--db", db], tmp_path, effects)
    assert expired.returncode == 0, expired.stderr
    status, outcome = expired.stdout.splitlines()  # its status, then its Outcome (issue 47 item 11)
    assert status == "resumed run skip: finished"
    assert json.loads(outcome) == {"ok": True, "value": ["skipped A-1", "skipped B-2"], "state": {"paid": 0},
                                   "run_id": "skip"}
    assert durable.resume("skip", db=url) == json.loads(outcome)
    assert _statuses(url) == {"skip": "finished", "patient": "waiting"}  # no deadline: it waits on
    assert durable.resume_expired(db=url) == []


def test_a_waiting_run_that_is_cancelled_takes_no_answer_until_resumed(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    url = f"sqlite:///{tmp_path / db}"
    started = mcec(["run", str(DESK), "settle", "--input", '"A-1:120"', "--durable", "--run-id", "c1", "--db", db],
                    tmp_path, effects)
    assert json.loads(started.stdout)["status"] == "waiting", started.stderr
    cancelled = mcec(["runs", "cancel", "c1", "--db", db], tmp_path, effects)
    assert (cancelled.returncode, cancelled.stdout, cancelled.stderr) == (0, "cancelled run c1\n", "")
    assert _statuses(url) == {"c1": "cancelled"} and durable.waiting(db=url) == []
    assert durable.show("c1", db=url)["status"] == "cancelled"
    answered = mcec(["runs", "answer", "c1", "approve", "--value", '{"ok": true}', "--db", db], tmp_path, effects)
    assert answered.returncode == 2
    assert answered.stderr.startswith("mcec runs answer: run c1 was cancelled: it takes no answer")
    resumed = mcec(["runs", "resume", "c1", "--db", db], tmp_path, effects)  # taken up again: it waits again
    assert resumed.returncode == 0, resumed.stderr
    assert [q["name"] for q in json.loads(resumed.stdout)["questions"]] == ["approve"]
    assert _statuses(url) == {"c1": "waiting"}
    done = mcec(["runs", "answer", "c1", "approve", "--value", '{"ok": true}', "--db", db], tmp_path, effects)
    assert json.loads(done.stdout) == {"ok": True, "value": ["paid"], "state": {"paid": 1}, "run_id": "c1"}
    assert lines(effects) == ["pay True"]


def _answers_race(tmp_path: Path, db: str) -> None:
    """Two processes answer the two questions of one run at the same moment, each paying slowly."""
    effects, race = tmp_path / "effects.txt", f"race-{tmp_path.name}"  # a Postgres database is shared by the session
    started = mcec(["run", str(DESK), "settle", "--input", '"A-1:120,B-2:80"', "--durable", "--run-id", race,
                     "--db", db], tmp_path, effects)
    assert json.loads(started.stdout)["status"] == "waiting", started.stderr
    answering = [
        subprocess.Popen([sys.executable, "-m", "mcec", "runs", "answer", race, "approve", "--index", str(i), "--value",
                          value, "--db", db], cwd=tmp_path, env=env(effects, pace=1.5), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for i, value in ((0, '{"ok": true}'), (1, '{"ok": false, "note": "no receipt"}'))
    ]
    ended = [process.communicate(timeout=120) for process in answering]
    assert [process.returncode for process in answering] == [0, 0], [err for _, err in ended]
    outcomes = sorted((json.loads(out) for out, _ in ended), key=lambda o: o.get("status") != "waiting")
    assert outcomes[0]["status"] == "waiting"  # the first one answered, paid, and waited for the other question
    assert outcomes[1] == {"ok": True, "value": ["paid", "refused: no receipt"], "state": {"paid": 1}, "run_id": race}
    assert sorted(lines(effects)) == ["pay False", "pay True"]  # each paid once: never run twice at once
    assert durable.resume(race, db=db if "://" in db else f"sqlite:///{tmp_path / db}")["ok"] is True


def test_two_processes_answering_at_once_take_turns_on_sqlite(tmp_path: Path) -> None:
    _answers_race(tmp_path, "runs.sqlite")


def test_two_processes_answering_at_once_take_turns_on_postgres(tmp_path: Path, postgres_url: str) -> None:  # noqa: F811
    _answers_race(tmp_path, postgres_url)


def _busy(url: str) -> str:
    """What a second holder of the run's lock is told while the first holds it."""
    from mcec.durable.locks import LockBusy, run_lock

    with run_lock(url, "held", wait=5):
        with pytest.raises(LockBusy) as busy, run_lock(url, "held", wait=0.2):
            pass
        with run_lock(url, "other", wait=0):  # another run's lock is another lock
            pass
    with run_lock(url, "held", wait=0):  # let go: taken at once
        pass
    return str(busy.value)


def test_a_held_run_lock_is_waited_for_then_refused_with_who_holds_it(tmp_path: Path, postgres_url: str) -> None:  # noqa: F811
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert _busy(url) == (f"run held is being run by another process (process {os.getpid()} on {socket.gethostname()}) "
                          "and was still after 0.2 s; try again when it waits or ends (`mcec runs list`)")
    assert _busy(postgres_url).startswith("run held is being run by another process (a process holding its lock)")
    # a row left by a process that is gone (killed) is taken over
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        connection.execute("insert into mcec_run_locks values ('held', ?, 0)", (f"{socket.gethostname()}:{gone.stdout.strip()}",))
    from mcec.durable.locks import run_lock

    with run_lock(url, "held", wait=1):
        pass
