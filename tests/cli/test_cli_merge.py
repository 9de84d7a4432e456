"""Issue 18, item 1, end to end: a `par` with one stateful branch cannot give MergeConflict.

The branch replaces an `Append` log instead of extending it. The checker adds
MergeConflict only for two or more stateful branches, and the runtime now
agrees (a field changed by exactly one branch takes that branch's value), so
the pipeline declared `! Never` compiles (mypy on) and runs to `Ok`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

IMPL = '''\
from dataclasses import dataclass, replace
from typing import Annotated, Never

from agentmonad import Append, Ok, Outcome


@dataclass(frozen=True)
class Log:
    log: Annotated[tuple[str, ...], Append] = ()


def note(state: Log, value: int) -> Outcome[Log, Never, int]:
    return Ok(value, replace(state, log=(*state.log, f"note {value}")))


def restart(state: Log, value: int) -> Outcome[Log, Never, int]:
    return Ok(value + 1, replace(state, log=("restarted",)))


def ident(value: int) -> int:
    return value
'''

SPEC = """\
from app.impl import Log
import app.impl as impl
state Log
step note : int -> int = impl.note
step restart : int -> int = impl.restart
fn ident : int -> int = impl.ident
pipeline p : int -> tuple[int, int] ! Never = note >>= par <restart, ident>;
"""


def test_one_stateful_branch_that_replaces_an_append_log_compiles_and_runs(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "app" / "impl.py").write_text(IMPL, encoding="utf-8")
    (tmp_path / "merge.mce").write_text(SPEC, encoding="utf-8")

    def mcec(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcec", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )

    compiled = mcec("compile", "merge.mce")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    ran = mcec("run", "merge.mce", "p", "--input", "1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    outcome = json.loads(ran.stdout)
    assert outcome["ok"] and outcome["value"] == [2, 1] and outcome["state"] == {"log": ["restarted"]}
