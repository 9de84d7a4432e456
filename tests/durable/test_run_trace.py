"""``mcec run --durable --trace``: the run's tree from its records, as ``mcec run --trace`` draws a
plain run, with every segment of a resumed run (the effects before a crash included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTES = Path(__file__).parent / "flowbox" / "notes.mce"


def _mcec(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environment.pop("MCEC_DB", None)
    return subprocess.run([sys.executable, "-m", "mcec", *args], capture_output=True, text=True, cwd=cwd,
                          env=environment, timeout=120)


def test_a_resumed_durable_run_traces_every_segment(tmp_path: Path) -> None:
    run = ["run", str(NOTES), "note", "--input", '"x"', "--durable", "--run-id", "r1"]
    died = _mcec(run, tmp_path, MCEC_DIE="x.")  # the second jot kills the process
    assert died.returncode in (-9, 9), died.stderr
    resumed = _mcec([*run, "--trace"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["ok"] is True
    jots = [line for line in resumed.stderr.splitlines() if "jot" in line]
    # the jot recorded before the crash and the one run after it, each at its .mce line
    assert len(jots) == 2 and all("notes.mce:9" in line and " ok " in line for line in jots), resumed.stderr
    as_json = _mcec([*run, "--trace", "json"], tmp_path)  # finished: its recorded outcome and tree
    tree = json.loads(as_json.stderr)["trace"]
    assert [node["name"] for node in tree[0]["children"]] == ["jot", "jot"], tree
