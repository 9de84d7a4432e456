"""Smoke run of the benchmark harness: ``check_bench`` (``mcec check``, ``check --fast`` and plain
mypy on the smallest example, as real subprocesses; see test_bench_smoke.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke_support import smoke

pytest.importorskip("benchmarks.run")


def test_harness_smoke_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("check", tmp_path, monkeypatch)
