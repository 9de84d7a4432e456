"""``mcec run --durable`` and ``mcec runs …`` on bad input: an unknown run, an unreachable
database, a spec changed since the run started — a message and exit status 2, never a traceback;
``--allow-changed-spec`` resumes anyway."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcec.cli import main
from tests.durable.processes import mcec_with

NOTES = Path(__file__).parent / "flowbox" / "notes.mce"


def test_an_unknown_run_is_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    for action in (["show", "nope"], ["resume", "nope"], ["cancel", "nope"]):
        assert main(["runs", *action, "--db", db]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"mcec runs {action[0]}: no durable run 'nope' in sqlite:///"), err
        assert "Traceback" not in err
    assert main(["runs", "list", "--db", db]) == 0
    assert capsys.readouterr().out.split() == ["run", "id", "spec", "pipeline", "status", "started", "last", "step"]


def test_an_unreachable_database_is_a_message_without_its_password(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "list", "--db", "postgresql://me:secret@127.0.0.1:1/runs"]) == 2
    err = capsys.readouterr().err
    assert "mcec runs list: cannot open the run database postgresql://me@127.0.0.1:1/runs" in err
    assert "secret" not in err and "Traceback" not in err


def test_durable_options_need_durable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(NOTES), "note", "--input", '"x"', "--run-id", "r"]) == 2
    assert "go with --durable" in capsys.readouterr().err


def test_a_changed_spec_is_refused_unless_allowed(tmp_path: Path) -> None:
    spec = tmp_path / "notes.mce"
    shutil.copy(NOTES, spec)
    died = mcec_with(["run", str(spec), "note", "--input", '"x"', "--durable", "--run-id", "r1"], tmp_path, MCEC_DIE="x.")
    assert died.returncode == -9 or died.returncode == 9, died.stderr  # the second jot killed the process
    assert (tmp_path / ".mcec" / "runs.sqlite").exists()  # the default database
    listed = mcec_with(["runs", "list", "--format", "json"], tmp_path)
    assert [(r["run_id"], r["status"], r["last_step"]) for r in json.loads(listed.stdout)] == [("r1", "running", "jot")]
    other = mcec_with(["run", str(spec), "note", "--input", '"y"', "--durable", "--run-id", "r1"], tmp_path)
    assert other.returncode == 2 and other.stderr.startswith('mcec run: run r1 exists with another input "x"'), other.stderr
    spec.write_text(spec.read_text(encoding="utf-8") + "pipeline again : str -> str = jot;\n", encoding="utf-8")
    refused = mcec_with(["runs", "resume", "r1"], tmp_path)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("mcec runs resume: run r1 cannot resume: "), refused.stderr
    assert "notes.mce" in refused.stderr and "--allow-changed-spec" in refused.stderr and "Traceback" not in refused.stderr
    resumed = mcec_with(["run", str(spec), "note", "--input", '"x"', "--durable", "--run-id", "r1", "--allow-changed-spec"],
                    tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout) == {"ok": True, "value": "x..", "state": {"written": ["x", "x."]}, "run_id": "r1"}
    shown = json.loads(mcec_with(["runs", "show", "r1", "--format", "json"], tmp_path).stdout)
    assert [(e["step"], e["outcome"], e["state_change"]) for e in shown["effects"]] == [
        ("jot", "ok", {"set": {"written": ["x"]}}), ("jot", "ok", {"fields": {"written": {"extend": ["x."]}}})
    ]
    assert shown["state"] == {"written": ["x", "x."]}
    assert shown["status"] == "finished"
