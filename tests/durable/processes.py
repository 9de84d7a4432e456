"""``mcec`` as a subprocess for the durable-run tests: the environment the spec helpers read
(``MCEC_EFFECTS``: the file a step appends a line to per call; ``MCEC_PACE``: its pause) and the
lines that file holds."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def env(effects: Path, pace: float = 0) -> dict[str, str]:
    """This environment, with the repository importable, the effects file and the pace set, and no
    ``MCEC_DB`` (each test names its database)."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "MCEC_EFFECTS": str(effects), "MCEC_PACE": str(pace)}
    environment.pop("MCEC_DB", None)
    return environment


def mcec(args: list[str], cwd: Path, effects: Path) -> subprocess.CompletedProcess[str]:
    """``mcec ARGS`` in ``cwd``, its steps noting their calls in ``effects``."""
    return subprocess.run([sys.executable, "-m", "mcec", *args], capture_output=True, text=True, cwd=cwd,
                          env=env(effects), timeout=120)


def lines(path: Path) -> list[str]:
    """The lines of ``path`` (none when it does not exist)."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
