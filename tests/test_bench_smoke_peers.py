"""Smoke run of the benchmark harness: ``peers`` (chains, depth, and the fan-out and
fail-fast groups at their full width; see test_bench_smoke.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke_support import smoke

pytest.importorskip("benchmarks.run")


def test_harness_smoke_peers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("peers", tmp_path, monkeypatch)
