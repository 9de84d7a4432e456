"""What goes wrong around a durable run outside the run itself leaves the run as it was
(docs/language.md §13): a resume that cannot start (a step module that fails to import) stops the
run with a one-line reason, resumable once the cause is fixed; the `runs` commands import the
spec's modules from the folder the run was started in, whatever folder they run in; and a row of
the run database in a serialization mcec never writes (DBOS's pickle) is refused, never decoded."""

from __future__ import annotations

import base64
import json
import os
import pickle
import sqlite3
from pathlib import Path

from tests.durable.processes import mcec_with

GATE_PY = '''\
"""The claim's types (their module is imported to check a resumed run's spec)."""
import os
from dataclasses import dataclass

if os.environ.get("GATE_TYPES_BROKEN"):
    raise RuntimeError("GATE_SCHEMA is not set")


@dataclass(frozen=True)
class Box:
    notes: int = 0


@dataclass(frozen=True)
class Claim:
    id: str


'''

STEPS_PY = '''\
"""A claim waits for a person's approval, then is noted (a line in MCEC_EFFECTS)."""
import os
from dataclasses import replace
from typing import NoReturn

from agentmonad import Ok, Outcome

from gate import Box, Claim

if os.environ.get("GATE_BROKEN"):
    raise RuntimeError("GATE_TOKEN is not set")


def claim(text: str) -> Claim:
    return Claim(text)


def said(yes: bool) -> str:
    return "approved" if yes else "refused"


async def note(state: Box, text: str) -> Outcome[Box, NoReturn, str]:
    with open(os.environ["MCEC_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(f"note {text}\\n")
    return Ok(text, replace(state, notes=state.notes + 1))
'''

GATE_MCE = '''\
from gate import Box, Claim
import steps as gate

state Box

fn claim : str -> Claim = gate.claim
fn said : bool -> str = gate.said
async step note : str -> str = gate.note
ask approve : Claim -> bool = "Approve claim {{ id }}?"

pipeline settle : str -> str ! NoOneToAsk | NoAnswer | BadAnswer = note >>= claim >>= approve >>= said >>= note;
'''


def _project(tmp: Path) -> tuple[Path, Path, str]:
    """The spec's folder (its module importable only from there), another folder, the database."""
    project = tmp / "project"
    project.mkdir()
    (project / "gate.py").write_text(GATE_PY, encoding="utf-8")
    (project / "steps.py").write_text(STEPS_PY, encoding="utf-8")
    (project / "gate.mce").write_text(GATE_MCE, encoding="utf-8")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return project, elsewhere, f"sqlite:///{tmp / 'runs.sqlite'}"


def _waiting_run(project: Path, db: str, effects: Path) -> None:
    started = mcec_with(["run", "gate.mce", "settle", "--input", '"E07"', "--durable", "--run-id", "r1", "--db", db],
                        project, MCEC_EFFECTS=str(effects))
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["status"] == "waiting"


def test_the_runs_commands_import_the_spec_modules_from_where_the_run_started(tmp_path: Path) -> None:
    project, elsewhere, db = _project(tmp_path)
    effects = tmp_path / "effects.txt"
    _waiting_run(project, db, effects)
    answered = mcec_with(["runs", "answer", "r1", "approve", "--value", "true", "--db", db], elsewhere,
                         MCEC_EFFECTS=str(effects))
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["value"] == "approved"
    assert effects.read_text(encoding="utf-8").splitlines() == ["note E07", "note approved"]


def test_a_resume_whose_spec_modules_fail_to_import_is_a_message_and_leaves_the_run(tmp_path: Path) -> None:
    project, elsewhere, db = _project(tmp_path)
    effects = tmp_path / "effects.txt"
    _waiting_run(project, db, effects)
    for action in (["resume", "r1"], ["answer", "r1", "approve", "--value", "true"]):
        broken = mcec_with(["runs", *action, "--db", db], elsewhere, MCEC_EFFECTS=str(effects), GATE_TYPES_BROKEN="1")
        assert broken.returncode == 2, (broken.stdout, broken.stderr)
        assert len(broken.stderr.strip().splitlines()) == 1 and "GATE_SCHEMA is not set" in broken.stderr
    listed = json.loads(mcec_with(["runs", "list", "--format", "json", "--db", db], elsewhere).stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [("r1", "waiting")]


def test_a_resume_that_cannot_start_stops_the_run_resumable(tmp_path: Path) -> None:
    project, elsewhere, db = _project(tmp_path)
    effects = tmp_path / "effects.txt"
    _waiting_run(project, db, effects)
    broken = mcec_with(["runs", "resume", "r1", "--db", db], elsewhere, MCEC_EFFECTS=str(effects), GATE_BROKEN="1")
    assert broken.returncode == 2, (broken.stdout, broken.stderr)
    message = broken.stderr.strip()
    assert len(message.splitlines()) == 1 and "GATE_TOKEN is not set" in message, message
    assert "mcec runs resume r1" in message and "internal compiler error" not in message
    listed = json.loads(mcec_with(["runs", "list", "--format", "json", "--db", db], elsewhere).stdout)
    assert [(r["run_id"], r["status"]) for r in listed] == [("r1", "stopped")]
    # the cause fixed, the run goes on from where it was: it asks again, takes its answer, and ends
    again = mcec_with(["runs", "resume", "r1", "--db", db], elsewhere, MCEC_EFFECTS=str(effects))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "waiting"
    answered = mcec_with(["runs", "answer", "r1", "approve", "--value", "false", "--db", db], elsewhere,
                         MCEC_EFFECTS=str(effects))
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["value"] == "refused"
    assert effects.read_text(encoding="utf-8").splitlines() == ["note E07", "note refused"]


class _Planted:
    """What an attacker writes into a row: unpickling it makes a folder (it runs os.mkdir)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.mkdir, (str(self.marker),)


def test_a_pickled_row_is_refused_never_decoded(tmp_path: Path) -> None:
    project, elsewhere, db = _project(tmp_path)
    effects = tmp_path / "effects.txt"
    _waiting_run(project, db, effects)
    marker = tmp_path / "pwned"
    planted = base64.b64encode(pickle.dumps(_Planted(marker))).decode()
    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        changed = connection.execute("update operation_outputs set output = ?, serialization = 'py_pickle' "
                                     "where workflow_uuid = 'r1'", (planted,)).rowcount
        connection.execute("update workflow_status set output = ?, serialization = 'py_pickle' "
                           "where workflow_uuid = 'r1'", (planted,))
    assert changed >= 1
    for args in (["runs", "list"], ["runs", "show", "r1"], ["runs", "show", "r1", "--format", "json"],
                 ["runs", "waiting"], ["runs", "resume", "r1"]):
        done = mcec_with([*args, "--db", db], elsewhere, MCEC_EFFECTS=str(effects))
        assert not marker.exists(), f"`mcec {' '.join(args)}` unpickled a row"
        assert "internal compiler error" not in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)


def test_a_journal_row_of_another_shape_is_refused_with_a_line(tmp_path: Path) -> None:
    # a row in mcec's own serialization whose record is not one (its key a number): every command
    # that reads the run says so in a line and exits 2; a resume runs nothing
    project, elsewhere, db = _project(tmp_path)
    effects = tmp_path / "effects.txt"
    _waiting_run(project, db, effects)
    before = effects.read_text() if effects.exists() else ""
    with sqlite3.connect(tmp_path / "runs.sqlite") as connection:
        changed = connection.execute("update operation_outputs set output = ? where workflow_uuid = 'r1' "
                                     "and serialization = 'mcec_json'",
                                     (json.dumps({"key": 7, "kind": "step", "result": {"ok": 1}}),)).rowcount
    assert changed >= 1
    for args in (["runs", "show", "r1"], ["runs", "waiting"], ["runs", "resume", "r1"]):
        done = mcec_with([*args, "--db", db], elsewhere, MCEC_EFFECTS=str(effects))
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "a journal row is not a record" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert (effects.read_text() if effects.exists() else "") == before
