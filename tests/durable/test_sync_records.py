"""A completed sync effect is recorded before the next effect starts (docs/language.md §13): a
run of sixty sync steps killed among them has recorded every step that completed before the kill,
and the resume runs none of those again (only the one in flight at the kill may run twice)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from tests.durable.processes import env, lines, mcec

CHAIN = Path(__file__).parent / "syncbox" / "chain.mce"
#: The pause of every step (MCEC_PACE): long enough that the kill lands inside the chain.
PACE = 0.02
#: How many steps must have completed before the kill.
KILL_AT = 20


def _killed_then_resumed(tmp: Path, db: str) -> None:
    run_id = f"chain-{time.monotonic_ns()}"
    effects = tmp / f"{run_id}.txt"
    args = ["run", str(CHAIN), "chain", "--input", "0", "--durable", "--run-id", run_id, "--db", db]
    process = subprocess.Popen([sys.executable, "-m", "mcec", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env(effects, PACE), cwd=tmp)
    deadline = time.monotonic() + 120
    while len(lines(effects)) < KILL_AT and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    _, stderr = process.communicate()
    ran = lines(effects)
    assert KILL_AT <= len(ran) < 60, (len(ran), stderr)

    shown = mcec(["runs", "show", run_id, "--db", db, "--format", "json"], tmp, effects)
    assert shown.returncode == 0, shown.stderr
    recorded = [e for e in json.loads(shown.stdout)["effects"] if e["kind"] == "step"]
    # every call that completed is recorded, but the one the kill caught between its effect and its record
    assert len(recorded) >= len(ran) - 1, (len(recorded), len(ran))

    resumed = mcec(["runs", "resume", run_id, "--db", db], tmp, effects, 0)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["value"] == 60
    twice = {line: n for line, n in Counter(lines(effects)).items() if n > 1}
    assert len(twice) <= 1 and sorted(Counter(lines(effects))) == sorted(f"bump {i}" for i in range(60)), twice


def test_a_killed_chain_of_sync_steps_keeps_every_completed_step_on_sqlite(tmp_path: Path) -> None:
    _killed_then_resumed(tmp_path, f"sqlite:///{tmp_path / 'runs.sqlite'}")


def test_a_killed_chain_of_sync_steps_keeps_every_completed_step_on_postgres(
    tmp_path: Path, postgres_url: str  # noqa: F811  (the fixture)
) -> None:
    _killed_then_resumed(tmp_path, postgres_url)
