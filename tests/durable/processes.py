"""``mcec`` as a subprocess for the durable-run tests: the environment the spec helpers read
(``MCEC_EFFECTS``: the file a step appends a line to per call; ``MCEC_PACE``: its pause) and the
lines that file holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def environment(**variables: str) -> dict[str, str]:
    """This environment, with the repository importable, ``variables`` set, and no ``MCEC_DB``
    (each test names its database)."""
    found = {**os.environ, "PYTHONPATH": str(ROOT), **variables}
    found.pop("MCEC_DB", None)
    return found


def env(effects: Path, pace: float = 0) -> dict[str, str]:
    """:func:`environment` with the effects file and the pace set."""
    return environment(MCEC_EFFECTS=str(effects), MCEC_PACE=str(pace))


def mcec_with(args: list[str], cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """``mcec ARGS`` in ``cwd``, in :func:`environment` with ``variables``."""
    return subprocess.run([sys.executable, "-m", "mcec", *args], capture_output=True, text=True, cwd=cwd,
                          env=environment(**variables), timeout=120)


def mcec(args: list[str], cwd: Path, effects: Path, pace: float = 0) -> subprocess.CompletedProcess[str]:
    """``mcec ARGS`` in ``cwd``, its steps noting their calls in ``effects`` (after ``pace`` seconds)."""
    return mcec_with(args, cwd, MCEC_EFFECTS=str(effects), MCEC_PACE=str(pace))


def lines(path: Path) -> list[str]:
    """The lines of ``path`` (none when it does not exist)."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
