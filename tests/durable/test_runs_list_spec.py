"""``mcec runs list`` and ``mcec runs show`` name a run's spec by its absolute path, as the run
recorded it, whatever folder they are run from (issue 47 item 11: not ``../../../…`` relative to
the current folder)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.durable.processes import mcec_with

NOTES = Path(__file__).parent / "flowbox" / "notes.mce"


def test_runs_list_names_the_spec_by_its_absolute_path(tmp_path: Path) -> None:
    specs, elsewhere = tmp_path / "specs", tmp_path / "a" / "b" / "c"
    specs.mkdir()
    elsewhere.mkdir(parents=True)
    spec = specs / "notes.mce"
    shutil.copy(NOTES, spec)
    db = str(tmp_path / "runs.sqlite")
    ran = mcec_with(["run", "notes.mce", "note", "--input", '"x"', "--durable", "--run-id", "r1", "--db", db], specs)
    assert ran.returncode == 0, ran.stderr
    listed = mcec_with(["runs", "list", "--db", db], elsewhere)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["run", "id", "spec", "pipeline", "status", "started", "last", "step"]
    assert row.split()[:4] == ["r1", str(spec), "note", "finished"]
    as_json = json.loads(mcec_with(["runs", "list", "--db", db, "--format", "json"], elsewhere).stdout)
    assert [r["spec"] for r in as_json] == [str(spec)]
    shown = mcec_with(["runs", "show", "r1", "--db", db], elsewhere)
    assert shown.stdout.startswith(f"run r1: note of {spec} (finished, started "), shown.stdout
