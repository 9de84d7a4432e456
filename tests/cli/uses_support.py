"""Shared by the tests of specs that use each other's pipelines through the command line
(tests/cli/test_cli_uses*.py): the ``mcec`` subprocess and the temporary project made of
tests/check/uses_cases."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "check" / "uses_cases"


def mcec(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m mcec ARGS`` in ``project``, which is on ``PYTHONPATH``."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    return subprocess.run([sys.executable, "-m", "mcec", *args], cwd=project, capture_output=True, text=True, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project: ``specs/`` (research.mce and its Python side) and ``main.mce``, which uses it."""
    (tmp_path / "specs").mkdir()
    for name in ("__init__.py", "models.py", "impl.py", "research.mce"):
        shutil.copy(CASES / "specs" / name, tmp_path / "specs" / name)
    shutil.copy(CASES / "ok_uses.mce", tmp_path / "main.mce")
    return tmp_path
