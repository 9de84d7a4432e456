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


def test_the_mypy_floor_of_a_spec_that_uses_another(tmp_path: Path, shared_mypy_cache: Path) -> None:
    """The check benchmark's plain-mypy floor on examples/meta/meta.mce, whose generated module
    imports ``examples.meta.specialists_mce``: the benchmark writes the used specs' modules
    first, as a user's build would (before, mypy failed on the missing import, an error row in
    the full run; ``mcec check`` gives mypy its own copies and never saw it)."""
    from benchmarks import check_bench
    from mcec.check.pyindex import package_root

    workspace = check_bench._workspace(tmp_path)
    spec = Path("examples/meta/meta.mce")
    generated = workspace / "generated" / "meta"
    check_bench._run(workspace, "-m", "mcec", "compile", "--no-mypy", "-o", str(generated), str(spec))
    [module] = generated.glob("*_mce.py")
    check_bench._generate_used(workspace, spec)
    root = package_root(workspace / spec)
    # the session's warm cache (tests/conftest.py), not the benchmark's cold one: what is under test
    # is that the import is found, and a module with errors is never taken from a cache
    check_bench._run(
        workspace, "-m", "mypy", *check_bench.MYPY_FLAGS, "--cache-dir", str(shared_mypy_cache), str(module), mypypath=root
    )
