"""The pytest plugin collects a folder of recordings as tests (docs/language.md §17): one item per
``*.mcerun.json`` file, named by the file's name, that replays it offline; a failing replay shows
mcec's diagnostic at the spec line (no traceback), an Outcome that differs shows the difference.
In a temporary project, run by a real pytest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_runs import QUIET

SPEC = """\
from app.impl import Log
import app.impl as impl

state Log

step fetch : str -> int = impl.fetch
step twice : int -> int = impl.twice
fn show    : int -> str = impl.show

pipeline run : str -> str = fetch >>= twice >>= show;
"""

IMPL = """\
from dataclasses import dataclass, replace

from agentmonad import Ok


@dataclass(frozen=True)
class Log:
    n: int = 0


def fetch(state: Log, value: str) -> Ok[Log, int]:
    return Ok(len(value), replace(state, n=state.n + 1))


def twice(state: Log, value: int) -> Ok[Log, int]:
    return Ok(2 * value, state)


def show(value: int) -> str:
    return str(value)
"""


def _run(root: Path, *args: str, module: str = "mcec") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", module, *args], cwd=root, capture_output=True, text=True, timeout=300)


def test_a_folder_of_recordings_is_collected_one_test_per_file(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "impl.py").write_text(IMPL)
    (root / "app" / "flow.mce").write_text(SPEC)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\nmce = true\n")
    runs = root / "recordings"
    runs.mkdir()
    for name, value in (("abc", '"abc"'), ("longer", '"a longer one"')):
        done = _run(root, "run", "app/flow.mce", "run", "--input", value, "--record", f"recordings/{name}.mcerun.json")
        assert done.returncode == 0, done.stdout + done.stderr
    # one recorded run whose second effect was made by another step: the spec changed before it
    changed = json.loads((runs / "abc.mcerun.json").read_text())
    changed["effects"][1]["step"] = "triple"
    (runs / "changed.mcerun.json").write_text(json.dumps(changed))
    # one whose recorded Outcome is not what the run gives
    other = json.loads((runs / "longer.mcerun.json").read_text())
    other["outcome"]["ok"] = "24?"
    (runs / "other.mcerun.json").write_text(json.dumps(other))

    run = _run(root, "-p", "no:cacheprovider", *QUIET, "-rA", "recordings", module="pytest")
    out = run.stdout
    assert run.returncode == 1, out
    assert "2 failed, 2 passed" in out, out
    assert "PASSED recordings/abc.mcerun.json::abc.mcerun.json" in out
    assert "PASSED recordings/longer.mcerun.json::longer.mcerun.json" in out
    assert "FAILED recordings/changed.mcerun.json::changed.mcerun.json" in out
    assert "error[MCE040]: the replay asks for `twice` here, where the recording holds the step `triple` at " \
           "flow.mce:10:39 (effect 1)" in out
    assert "--> app/flow.mce:10:39" in out and "^^^^^" in out
    assert "FAILED recordings/other.mcerun.json::other.mcerun.json" in out
    assert '-  "ok": "24?",' in out and '+  "ok": "24",' in out
    assert "Traceback" not in out and "ReplayFailed" not in out.split("short test summary")[0]
