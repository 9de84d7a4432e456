"""Smoke run of ``benchmarks.startup_bench`` (issue 43: start-up of a compiled run): one round, so
a benchmark that no longer runs fails the suite. No figure is judged here (benchmarks/README.md)."""

from __future__ import annotations

import sys


def test_startup_bench_runs_one_round() -> None:
    from benchmarks import startup_bench

    figures = startup_bench.measure(sys.executable, rounds=1)
    assert set(figures) == {"agentmonad run", "python -c pass", "import pydantic"}
    assert all(wall > 0 and cpu > 0 for wall, cpu in figures.values())
