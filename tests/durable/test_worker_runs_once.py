"""A run a live worker is running is run by that worker alone (docs/language.md "Workers"):
`mcec runs resume` of it is a one-line message naming the worker, and every step runs once."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from tests.durable.processes import lines
from tests.durable.test_workers import WORK, Worker, _env


def test_resume_refuses_a_run_a_live_worker_runs(tmp_path: Path, postgres_url: str) -> None:  # noqa: F811
    effects = tmp_path / "effects.txt"
    worker = Worker(tmp_path, [WORK], postgres_url, "solo", effects, 1.5)
    try:
        worker.wait_for("serving mcec.solo.")
        queued = subprocess.run([sys.executable, "-m", "mcec", "run", str(WORK), "work", "--input", '"w1"', "--durable",
                                 "--queue", "solo", "--run-id", "w1", "--db", postgres_url], capture_output=True,
                                text=True, env=_env(effects, 0), cwd=tmp_path, timeout=120)
        assert queued.returncode == 0, queued.stderr
        deadline = time.monotonic() + 120
        while not lines(effects) and time.monotonic() < deadline:
            time.sleep(0.01)
        resumed = subprocess.run([sys.executable, "-m", "mcec", "runs", "resume", "w1", "--db", postgres_url],
                                 capture_output=True, text=True, env=_env(effects, 0), cwd=tmp_path, timeout=120)
        assert resumed.returncode == 2, (resumed.stdout, resumed.stderr)
        message = resumed.stderr.strip()
        assert len(message.splitlines()) == 1 and "is being run by worker" in message, message
        worker.wait_for("run w1 finished", timeout=120)
        steps = Counter(line.split()[0] for line in lines(effects))
        assert steps == Counter({"first": 1, "second": 1, "third": 1}), lines(effects)
        shown = subprocess.run([sys.executable, "-m", "mcec", "runs", "resume", "w1", "--db", postgres_url],
                               capture_output=True, text=True, env=_env(effects, 0), cwd=tmp_path, timeout=120)
        assert shown.returncode == 0 and json.loads(shown.stdout)["ok"] is True, shown.stderr
    finally:
        worker.stop()
