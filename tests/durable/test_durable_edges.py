"""Small edges of the durable commands (docs/language.md §13), each a one-line message with exit
status 2 rather than a traceback, a leaked secret or a wrong answer: an answer nested too deeply,
a database URL's password (in its user part or its query), cancelling a run that has ended, an
input that is another JSON value than the run's, a run id with control characters, and the
`sqlite:///` URL forms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.durable.processes import mcec_with

CHAIN = Path(__file__).parent / "syncbox" / "chain.mce"


def _one(tmp: Path, db: str, run_id: str, value: str = "1") -> tuple[int, str, str]:
    done = mcec_with(["run", str(CHAIN), "one", "--input", value, "--durable", "--run-id", run_id, "--db", db], tmp)
    return done.returncode, done.stdout, done.stderr


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "internal compiler error" not in stderr and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.parametrize("url", [
    "postgresql://127.0.0.1:1/runs?user=mcec&password=S3CRETpw",
    "postgresql://mcec:S3CRETpw@127.0.0.1:1/runs",
    "postgresql://mcec:S3C@RETpw@127.0.0.1:1/runs",
])
def test_an_unreachable_database_never_shows_its_password(tmp_path: Path, url: str) -> None:
    for args in (["runs", "list", "--db", url], ["run", str(CHAIN), "one", "--input", "1", "--durable", "--db", url]):
        done = mcec_with(args, tmp_path)
        assert done.returncode == 2
        line = _one_line(done.stderr)  # DBOS's own "Could not connect …" warning is not printed first
        assert "S3C" not in done.stderr and "RETpw" not in done.stderr and "S3C" not in done.stdout, done.stderr
        assert line.startswith("mcec") and "cannot open the run database" in line, line


def test_an_answer_nested_too_deeply_is_a_message(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    deep = "[" * 20000 + "]" * 20000
    done = mcec_with(["runs", "answer", "nope", "approve", "--value", deep, "--db", db], tmp_path)
    assert done.returncode == 2 and "no durable run" in _one_line(done.stderr)
    # a real waiting run: the answer is refused before anything is recorded
    from tests.durable.test_resumable_failures import _project, _waiting_run

    project, elsewhere, db = _project(tmp_path)
    _waiting_run(project, db, tmp_path / "effects.txt")
    done = mcec_with(["runs", "answer", "r1", "approve", "--value", deep, "--db", db], project,
                     MCEC_EFFECTS=str(tmp_path / "effects.txt"))
    assert done.returncode == 2 and "nested too deeply" in _one_line(done.stderr)
    waiting = json.loads(mcec_with(["runs", "waiting", "--db", db], project).stdout)
    assert [q["name"] for q in waiting] == ["approve"]


def test_cancelling_a_finished_run_says_it_has_ended(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert _one(tmp_path, db, "r1")[0] == 0
    done = mcec_with(["runs", "cancel", "r1", "--db", db], tmp_path)
    assert done.returncode == 2 and "already ended (finished)" in _one_line(done.stderr)
    listed = json.loads(mcec_with(["runs", "list", "--format", "json", "--db", db], tmp_path).stdout)
    assert [r["status"] for r in listed] == ["finished"]


def test_another_json_value_is_another_input(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert _one(tmp_path, db, "r1", "1")[0] == 0
    status, _, stderr = _one(tmp_path, db, "r1", "true")
    assert status == 2 and "exists with another input" in _one_line(stderr)
    status, stdout, _ = _one(tmp_path, db, "r1", " 1 ")
    assert status == 0 and json.loads(stdout)["value"] == 2


@pytest.mark.parametrize("run_id", ["r1\nr2  finished", "r\x1b[2J", "", "a b", "x" * 201])
def test_a_run_id_must_be_printable(tmp_path: Path, run_id: str) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    status, _, stderr = _one(tmp_path, db, run_id)
    assert status == 2 and "bad run id" in _one_line(stderr)
    for args in (["enqueue"],):
        done = mcec_with(["run", str(CHAIN), "one", "--input", "1", "--durable", "--queue", "q", "--run-id", run_id,
                          "--db", db], tmp_path)
        assert done.returncode == 2 and "bad run id" in _one_line(done.stderr), args


def test_the_sqlite_url_forms(tmp_path: Path) -> None:
    absolute = tmp_path / "abs.sqlite"
    # `sqlite:///PATH` with PATH absolute (no such folder under the current one): the file the user meant
    assert _one(tmp_path, f"sqlite://{absolute}", "r1")[0] == 0
    assert absolute.exists()
    for form in (f"sqlite:///{absolute}", str(absolute)):
        listed = mcec_with(["runs", "list", "--format", "json", "--db", form], tmp_path / "..")
        assert [r["run_id"] for r in json.loads(listed.stdout)] == ["r1"], form
    # relative: from the current folder, the same file whichever folder a later command runs in
    assert _one(tmp_path, "sqlite:///rel.sqlite", "r2")[0] == 0
    assert (tmp_path / "rel.sqlite").exists()
