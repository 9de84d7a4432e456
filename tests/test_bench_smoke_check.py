"""Smoke run of the benchmark harness: ``check_bench`` (``mcec check``, ``check --fast`` and plain
mypy on the smallest example, as real subprocesses; see test_bench_smoke.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench_smoke_support import smoke

pytest.importorskip("benchmarks.run")


def test_harness_smoke_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("check", tmp_path, monkeypatch)


def test_every_example_checks_with_and_without_class_knowledge(tmp_path: Path) -> None:
    """The check benchmark's front ends on every example, not only the smoke run's smallest:
    in-process with and without class knowledge (milliseconds each), and ``--fast`` without
    it as the benchmark runs it (a subprocess, griffe stubbed) on examples/meta/meta.mce, the
    example that uses other specs' pipelines (its sub-agents were two false MCE030s without
    class knowledge, an error row in the full run)."""
    from benchmarks import check_bench

    workspace = check_bench._workspace(tmp_path)
    specs = check_bench.example_specs()
    assert Path("examples/meta/meta.mce") in specs
    for spec in specs:
        for classes in (True, False):
            check_bench._front_end(workspace, spec, classes=classes)
    done = check_bench._run(workspace, "-c", check_bench.WITHOUT_CLASSES, "examples/meta/meta.mce")
    assert done.returncode == 0
