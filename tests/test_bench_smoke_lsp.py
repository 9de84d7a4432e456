"""Smoke run of ``lsp_bench`` (issue 34) through the harness: a re-check after an edit against a
cold check per spec, and keystroke to diagnostics against a real ``mcec lsp`` over stdio (see
test_bench_smoke.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke_support import smoke

pytest.importorskip("benchmarks.run")


def test_harness_smoke_lsp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("lsp", tmp_path, monkeypatch)
