"""`mcec runs cancel` of a run while one of its steps runs (docs/language.md §13): the step
completes and is recorded, the run stops before its next effect, the command returns once it has,
and a resume runs no completed step again."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from tests.durable.processes import env, lines, mcec

CHAIN = Path(__file__).parent / "syncbox" / "chain.mce"


def _cancel_mid_step(tmp: Path, db: str) -> None:
    effects = tmp / "effects.txt"
    args = ["run", str(CHAIN), "chain", "--input", "0", "--durable", "--run-id", "c1", "--db", db]
    running = subprocess.Popen([sys.executable, "-m", "mcec", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env(effects, 1.0), cwd=tmp)
    deadline = time.monotonic() + 120
    while len(lines(effects)) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    # step 2 has just started (it sleeps 1 s before its effect)
    cancelled = mcec(["runs", "cancel", "c1", "--db", db], tmp, effects, 1.0)
    assert cancelled.returncode == 0, cancelled.stderr
    after_cancel = lines(effects)
    out, err = running.communicate(timeout=120)
    assert lines(effects) == after_cancel, "an effect ran after `runs cancel` returned"
    listed = json.loads(mcec(["runs", "list", "--format", "json", "--db", db], tmp, effects).stdout)
    assert [r["status"] for r in listed] == ["cancelled"], (out, err)
    shown = json.loads(mcec(["runs", "show", "c1", "--format", "json", "--db", db], tmp, effects).stdout)
    recorded = [e for e in shown["effects"] if e["kind"] == "step"]
    assert len(recorded) == len(after_cancel) >= 2, (recorded, after_cancel)  # the step in flight too
    resumed = mcec(["runs", "resume", "c1", "--db", db], tmp, effects, 0)
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["value"] == 60, resumed.stderr
    assert Counter(lines(effects)) == Counter(f"bump {i}" for i in range(60)), "a completed step ran again"


def test_cancel_during_a_step_records_it_and_stops_before_the_next_on_sqlite(tmp_path: Path) -> None:
    _cancel_mid_step(tmp_path, f"sqlite:///{tmp_path / 'runs.sqlite'}")


def test_cancel_during_a_step_records_it_and_stops_before_the_next_on_postgres(
    tmp_path: Path, postgres_url: str  # noqa: F811  (the fixture)
) -> None:
    _cancel_mid_step(tmp_path, postgres_url)
