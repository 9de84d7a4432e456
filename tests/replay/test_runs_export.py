"""``mcec runs export ID -o FILE`` (docs/language.md §17): a durable run that ended, as a recording.
The durable journal and a recorded run keep the same records: the export of a durable run of the
ReAct example holds exactly the effects and the Outcome of ``mcec run --record`` of the same run,
and replays offline to the same Outcome; an unknown run is one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RUN = ["examples/research/research.mce", "react", "--input", '"what is a monad and 2 plus 40"',
       "--model", "planner=py:examples.research.planner:plan"]


def _mcec(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI") and k != "MCEC_DB"}
    return subprocess.run([sys.executable, "-m", "mcec", *args], cwd=ROOT, capture_output=True, text=True, timeout=180,
                          env=env)


def test_an_exported_durable_run_is_the_recording_of_the_same_run_and_replays(tmp_path: Path) -> None:
    db = str(tmp_path / "runs.sqlite")
    durable = _mcec("run", *RUN, "--durable", "--db", db, "--run-id", "r1")
    assert durable.returncode == 0, durable.stdout + durable.stderr
    exported = _mcec("runs", "export", "r1", "-o", str(tmp_path / "r1.mcerun.json"), "--db", db)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert json.loads(exported.stdout) == {"run_id": "r1", "recording": str(tmp_path / "r1.mcerun.json"), "effects": 8}

    recorded = _mcec("run", *RUN, "--record", str(tmp_path / "recorded.mcerun.json"))
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    export = json.loads((tmp_path / "r1.mcerun.json").read_text())
    record = json.loads((tmp_path / "recorded.mcerun.json").read_text())
    assert export == record  # the same spec, input, state, effects (identities, sites, typed values) and Outcome

    replayed = _mcec("replay", str(tmp_path / "r1.mcerun.json"))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["outcome"] == export["outcome"]


def test_exporting_an_unknown_run_is_one_line(tmp_path: Path) -> None:
    done = _mcec("runs", "export", "nope", "-o", str(tmp_path / "x.mcerun.json"), "--db", str(tmp_path / "runs.sqlite"))
    assert done.returncode == 2 and done.stderr.startswith("mcec runs export: no durable run 'nope'"), done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "x.mcerun.json").exists()
