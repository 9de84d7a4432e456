"""Durable runs that wait for people, end to end from a ``.mce`` spec on DBOS (docs/language.md
§13): ``mcec run --durable`` returns ``"status": "waiting"`` with the open questions and its
process exits; the run is listed as ``waiting``; answered from other processes (``mcec runs
answer``), a bad answer is refused with pydantic's errors and the run keeps waiting; the right one
resumes it and it finishes. Two questions open at once (``each``) are answered independently
through the Python API (:func:`mcec.durable.answer`, :func:`mcec.durable.waiting`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcec import durable

ROOT = Path(__file__).resolve().parents[2]
REFUNDS = Path(__file__).parent / "askbox" / "refunds.mce"


def _mcec(args: list[str], cwd: Path, effects: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCEC_EFFECTS": str(effects)}
    env.pop("MCEC_DB", None)
    return subprocess.run([sys.executable, "-m", "mcec", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_a_waiting_run_is_answered_from_other_processes_and_finishes(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    started = _mcec(["run", str(REFUNDS), "settle", "--input", '"A-1:120"', "--durable", "--run-id", "r1", "--db", db],
                    tmp_path, effects)
    assert started.returncode == 0, started.stderr
    payload = json.loads(started.stdout)
    assert payload["status"] == "waiting" and payload["run_id"] == "r1"
    [question] = payload["questions"]
    assert (question["name"], question["index"], question["question"]) == ("approve", [0], {"order": "A-1", "amount": 120.0})
    assert question["schema"]["required"] == ["ok"] and question["prompt"] == "Refund 120.0 for A-1?"
    assert "Traceback" not in started.stderr and started.stderr == ""
    # the process is gone; the run is in the database only
    listed = _mcec(["runs", "list", "--db", db, "--format", "json"], tmp_path, effects)
    assert [(r["run_id"], r["status"]) for r in json.loads(listed.stdout)] == [("r1", "waiting")]
    open_ = _mcec(["runs", "waiting", "--db", db], tmp_path, effects)
    assert [(q["run_id"], q["name"], q["question"]) for q in json.loads(open_.stdout)] == [
        ("r1", "approve", {"order": "A-1", "amount": 120.0})
    ]
    bad = _mcec(["runs", "answer", "r1", "approve", "--value", '{"ok": "perhaps"}', "--db", db], tmp_path, effects)
    assert bad.returncode == 2
    assert bad.stderr == ("mcec runs answer: bad answer to approve: ok: Input should be a valid boolean, unable to "
                          "interpret input (the run keeps waiting)\n")
    listed = _mcec(["runs", "list", "--db", db, "--format", "json"], tmp_path, effects)
    assert [r["status"] for r in json.loads(listed.stdout)] == ["waiting"]
    good = _mcec(["runs", "answer", "r1", "approve", "--value", '{"ok": true}', "--db", db], tmp_path, effects)
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout) == {"ok": True, "value": ["paid"], "state": {"paid": 1}, "run_id": "r1"}
    assert _lines(effects).count("pay True") == 1  # paid once, after the answer
    again = _mcec(["runs", "answer", "r1", "approve", "--value", '{"ok": true}', "--db", db], tmp_path, effects)
    assert again.returncode == 2 and "run r1 is not waiting for an answer (it is finished)" in again.stderr


def _questions(db: str) -> list[tuple[str, list[int], str]]:
    return [(q["run_id"], q["index"], q["question"]["order"]) for q in durable.waiting(db=db)]


def test_two_questions_open_at_once_are_answered_independently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    payload: dict[str, Any] = durable.run(REFUNDS, "settle", '"A-1:120,B-2:80"', run_id="two", db=db)
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
