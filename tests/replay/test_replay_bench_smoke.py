"""``python -m benchmarks.replay_bench --smoke`` runs (benchmarks/README.md, "Recorded runs"): the
recorded run's recording replays with no effect performed, and the JSON carries every figure. No
wall-clock assertion: a smoke run's figures on a busy machine mean nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_replay_benchmark_runs(tmp_path: Path) -> None:
    out = tmp_path / "replay.json"
    done = subprocess.run([sys.executable, "-m", "benchmarks.replay_bench", "--smoke", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    figures = json.loads(out.read_text())
    for system in ("plain", "recorded", "plain_again", "replay"):
        assert set(figures[system]) == {"wall_ms", "cpu_ms"}
    assert {"record_cpu_ratio", "record_cpu_ratio_aa", "replay_speedup", "record_within_5pct", "replay_10x"} <= set(figures)
