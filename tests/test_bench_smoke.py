"""Smoke run of the benchmark harness (``python -m benchmarks``) at tiny sizes: the front
end, checker, scaling, codegen and control benchmarks (the others:
test_bench_smoke_peers.py, test_bench_smoke_check.py, test_bench_smoke_models.py; the shared checks:
bench_smoke_support.py), and the fuzzer.

Checks that every benchmark runs and that the summary table and the JSON carry the
expected keys. No wall-clock assertions: the figures of a smoke run on a busy machine
mean nothing.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from bench_smoke_support import GROUPS, smoke

run = pytest.importorskip("benchmarks.run")


def test_the_smoke_groups_cover_every_benchmark_once() -> None:
    """A benchmark added to the harness must be added to one smoke group, or CI would not run it."""
    grouped = [name for names in GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(run.BENCHMARKS)


def test_harness_smoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("front", tmp_path, monkeypatch)


def test_the_fuzzer_runs() -> None:
    """benchmarks/fuzz.py (mutated, generated, random and deep specs through the whole compiler)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "benchmarks/fuzz.py", "--seconds", "3", "--seed", "1"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout[done.stdout.index("{") :])["findings"] == 0


def test_the_checker_benchmark_times_the_check_as_the_compiler_runs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """checker_bench times ``check`` with the cycle collector paused, as mcec.compiler runs it
    (mcec/gcpause.py). Unpaused, each timed check paid for full collections over everything the
    harness process held (the benchmarks before it): 246× growth per 10× in the full run, a
    figure of the harness's heap, not of the checker (issue 36)."""
    from benchmarks import checker_bench

    real = checker_bench.check
    collector_on: list[bool] = []

    def recording(*args: object, **kwargs: object) -> object:
        collector_on.append(gc.isenabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(checker_bench, "check", recording)
    module, source = checker_bench._parse(checker_bench.chain(10))
    assert checker_bench._time_check(module, source, repeat=2) > 0
    assert collector_on == [False, False]
    assert gc.isenabled()
