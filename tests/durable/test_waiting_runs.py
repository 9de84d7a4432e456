"""Durable runs that wait for people, end to end from a ``.mce`` spec on DBOS (docs/language.md
§13): ``mcec run --durable`` returns ``"status": "waiting"`` with the open questions and its
process exits; the run is listed as ``waiting``; answered from other processes (``mcec runs
answer``), a bad answer is refused with pydantic's errors and the run keeps waiting; the right one
resumes it and it finishes. Two questions open at once (``each``) are answered independently
through the Python API (:func:`mcec.durable.answer`, :func:`mcec.durable.waiting`)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcec import durable
from tests.durable.processes import env, lines, mcec

DESK = Path(__file__).parent / "askbox" / "desk.mce"
#: The same with a Python step that asks (its question is asked inside the step's own call).
REFUNDS = Path(__file__).parent / "askbox" / "refunds.mce"


def test_a_waiting_run_is_answered_from_other_processes_and_finishes(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    started = mcec(["run", str(DESK), "settle", "--input", '"A-1:120"', "--durable", "--run-id", "r1", "--db", db],
                    tmp_path, effects)
    assert started.returncode == 0, started.stderr
    payload = json.loads(started.stdout)
    assert payload["status"] == "waiting" and payload["run_id"] == "r1"
    [question] = payload["questions"]
    assert (question["name"], question["index"], question["question"]) == ("approve", [0], {"order": "A-1", "amount": 120.0})
    assert question["site"] == "desk.mce:9:1 (approve)"
    assert question["schema"]["required"] == ["ok"] and question["prompt"] == "Refund 120.0 for A-1?"
    assert "Traceback" not in started.stderr and started.stderr == ""
    # the process is gone; the run is in the database only
    url = f"sqlite:///{tmp_path / db}"
    assert [(r.run_id, r.status) for r in durable.list_runs(db=url)] == [("r1", "waiting")]
    open_ = mcec(["runs", "waiting", "--db", db], tmp_path, effects)
    assert [(q["run_id"], q["name"], q["question"]) for q in json.loads(open_.stdout)] == [
        ("r1", "approve", {"order": "A-1", "amount": 120.0})
    ]
    bad = mcec(["runs", "answer", "r1", "approve", "--value", '{"ok": "perhaps"}', "--db", db], tmp_path, effects)
    assert bad.returncode == 2
    assert bad.stderr == ("mcec runs answer: bad answer to approve: ok: Input should be a valid boolean, unable to "
                          "interpret input (the run keeps waiting)\n")
    assert [r.status for r in durable.list_runs(db=url)] == ["waiting"]
    # answered from a process killed while it pays: the answer was recorded, the run resumes past it
    answering = subprocess.Popen([sys.executable, "-m", "mcec", "runs", "answer", "r1", "approve", "--value",
                                  '{"ok": true}', "--db", db], cwd=tmp_path, env=env(effects, pace=60),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _recorded(tmp_path / db, "0.0/0"):
        time.sleep(0.05)
    answering.send_signal(signal.SIGKILL)
    answering.communicate()
    assert lines(effects) == []  # killed before it paid
    assert [r.status for r in durable.list_runs(db=url)] == ["running"]  # interrupted, no longer waiting
    resumed = mcec(["runs", "resume", "r1", "--db", db], tmp_path, effects)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"ok": True, "value": ["paid"], "state": {"paid": 1}, "run_id": "r1"}
    assert lines(effects) == ["pay True"]  # paid once, after the answer
    with pytest.raises(durable.DurableError, match=r"run r1 is not waiting for an answer \(it is finished\)"):
        durable.answer("r1", "approve", '{"ok": true}', db=url)


def _recorded(db: Path, key: str) -> bool:
    """Whether the effect ``key`` is recorded in the SQLite run database ``db`` (read directly: cheap to poll)."""
    with sqlite3.connect(db) as connection:
        return bool(connection.execute("select count(*) from operation_outputs where function_name = ?", (key,)).fetchone()[0])


def _questions(db: str) -> list[tuple[str, list[int], str]]:
    return [(q["run_id"], q["index"], q["question"]["order"]) for q in durable.waiting(db=db)]


def test_two_questions_open_at_once_are_answered_independently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    payload: dict[str, Any] = durable.run(DESK, "settle", '"A-1:120,B-2:80"', run_id="two", db=db)
    assert payload["status"] == "waiting"
    assert [(q["index"], q["question"]["order"]) for q in payload["questions"]] == [([0], "A-1"), ([1], "B-2")]
    assert _questions(db) == [("two", [0], "A-1"), ("two", [1], "B-2")]
    with pytest.raises(durable.DurableError, match="asks 'approve' 2 times: say which with --index"):
        durable.answer("two", "approve", '{"ok": true}', db=db)
    second = durable.answer("two", "approve", '{"ok": false, "note": "no receipt"}', index=[1], db=db)
    assert second["status"] == "waiting" and _questions(db) == [("two", [0], "A-1")]
    first = durable.answer("two", "approve", '{"ok": true}', index=[0], db=db)
    assert first == {"ok": True, "value": ["paid", "refused: no receipt"], "state": {"paid": 1}, "run_id": "two"}
    assert _questions(db) == []


def test_a_step_that_asks_waits_and_runs_again_up_to_its_question(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    effects = tmp_path / "effects.txt"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    payload = durable.run(REFUNDS, "settle", '"A-1:120"', run_id="nested", db=db)
    assert payload["status"] == "waiting" and [q["key"] for q in payload["questions"]] == ["0.0/0/0"]
    done = durable.answer("nested", "approve", '{"ok": true}', db=db)
    assert done == {"ok": True, "value": ["paid"], "state": {"paid": 1}, "run_id": "nested"}
    assert lines(effects) == ["asking A-1", "asking A-1", "pay True"]  # the step ran again up to its question


#: One branch asks; its sibling goes through 400 pure `each(limit=1)` elements, then notes an effect.
SIBLING = Path(__file__).parent / "askbox" / "sibling.mce"


def test_a_run_waits_only_once_a_sibling_doing_pure_work_reaches_its_effect(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    started = mcec(["run", str(SIBLING), "busy", "--input", '"A-1:120"', "--durable", "--run-id", "s1", "--db",
                     "runs.sqlite"], tmp_path, effects)
    assert started.returncode == 0, started.stderr
    assert [q["name"] for q in json.loads(started.stdout)["questions"]] == ["approve"]
    assert lines(effects) == ["note total 159600"]  # the sibling's work was done before the run waited
    done = mcec(["runs", "answer", "s1", "approve", "--value", '{"ok": true}', "--db", "runs.sqlite"], tmp_path, effects)
    assert json.loads(done.stdout) == {"ok": True, "value": ["paid", "total 159600"], "state": {"paid": 1}, "run_id": "s1"}
    assert lines(effects) == ["note total 159600", "pay True"]  # the note was recorded: not run again
