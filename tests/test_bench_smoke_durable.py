"""Smoke run of ``durable_bench`` (issue 31) through the harness: a durable step against a bare
DBOS step on the same SQLite database, recorded bytes per effect, the non-durable loop (see
test_bench_smoke.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke_support import smoke

pytest.importorskip("benchmarks.run")


def test_harness_smoke_durable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("durable", tmp_path, monkeypatch)
