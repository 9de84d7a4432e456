"""``mcec check --durable`` and ``mcec compile --durable`` through real subprocesses (MCE033).

The cases are tests/check/durable_cases (copied, so that compile's output lands in a
temporary folder): the checker alone passes them, the durable check does not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "check" / "durable_cases"


def mcec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    shutil.copytree(CASES, tmp_path / "cases", ignore=shutil.ignore_patterns("*.txt", "*.json", "__pycache__"))
    return tmp_path / "cases"


def test_check_durable_reports_mce033(cases: Path) -> None:
    durable = mcec("check", "--fast", "--durable", "--format", "json", "mce033_not_recordable.mce", cwd=cases)
    assert durable.returncode == 1, durable.stdout + durable.stderr
    assert "Traceback" not in durable.stderr
    found = [json.loads(line) for line in durable.stdout.splitlines() if line.startswith("{") and '"code"' in line]
    assert {d["code"] for d in found} == {"MCE033"}
    assert any("`Hooked.on_done` is a `Callable`" in d["message"] for d in found)


def test_check_durable_of_named_pipelines_only(cases: Path) -> None:
    """`fine` reaches nothing that cannot be recorded: the only error is the unknown name."""
    done = mcec("check", "--fast", "--durable", "--pipeline", "fine", "--pipeline", "nope", "mce033_not_recordable.mce", cwd=cases)
    assert done.returncode == 1
    assert "MCE033" not in done.stdout
    assert "no pipeline `nope` in this spec (its pipelines: `fine`, `handle`" in done.stdout


def test_compile_durable_reports_mce033(cases: Path) -> None:
    done = mcec("compile", "--no-mypy", "--durable", "mce033_used_spec.mce", cwd=cases)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error[MCE033]: a durable run cannot record the state in specs/hooked.mce (used as `marked`)" in done.stdout
    # a module that cannot run durably is not what --durable asked for: nothing written, no "compiled"
    assert not list(cases.glob("mce033_used_spec*.py")), sorted(p.name for p in cases.iterdir())
    assert "compiled" not in done.stderr, done.stderr
