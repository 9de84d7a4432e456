"""``mcec run --durable --trace``: the run's tree from its records, as ``mcec run --trace`` draws a
plain run, with every segment of a resumed run (the effects before a crash included)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.durable.processes import mcec_with

NOTES = Path(__file__).parent / "flowbox" / "notes.mce"


def test_a_resumed_durable_run_traces_every_segment(tmp_path: Path) -> None:
    run = ["run", str(NOTES), "note", "--input", '"x"', "--durable", "--run-id", "r1"]
    died = mcec_with(run, tmp_path, MCEC_DIE="x.")  # the second jot kills the process
    assert died.returncode in (-9, 9), died.stderr
    resumed = mcec_with([*run, "--trace"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["ok"] is True
    jots = [line for line in resumed.stderr.splitlines() if "jot" in line]
    # the jot recorded before the crash and the one run after it, each at its .mce line
    assert len(jots) == 2 and all("notes.mce:9" in line and " ok " in line for line in jots), resumed.stderr
    as_json = mcec_with([*run, "--trace", "json"], tmp_path)  # finished: its recorded outcome and tree
    tree = json.loads(as_json.stderr)["trace"]
    assert [node["name"] for node in tree[0]["children"]] == ["jot", "jot"], tree
