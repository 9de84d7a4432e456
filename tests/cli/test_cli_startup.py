"""`mcec check` stays light: heavy libraries load only when a command needs them.

`mcec check --fast` loads neither libcst/black (code generation) nor mypy;
pydantic loads only when `mcec serve` builds schemas (Lark, the parser, and
griffe, which reads the spec's Python modules, always load). A plain `mcec
check` generates code and runs mypy, so it loads those. Checked in a fresh interpreter,
by which modules a run imported (not by timing it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("libcst", "black", "pydantic", "mypy", "pygls", "lsprotocol")

PROBE = """
import json, sys
from mcec.cli import main
status = main(sys.argv[1:])
print(json.dumps([status, sorted(m for m in {heavy!r} if m in sys.modules)]))
"""


def _loaded_by(*argv: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY), *argv], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return status, loaded


def test_a_fast_check_of_valid_specs_loads_no_heavy_library() -> None:
    status, loaded = _loaded_by("check", "--fast", "examples")
    assert status == 0 and loaded == []


def test_a_syntax_error_loads_no_heavy_library(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mce"
    bad.write_text("fn f : int -> int\n", encoding="utf-8")
    status, loaded = _loaded_by("check", "--fast", str(bad))
    assert status == 1 and loaded == []
