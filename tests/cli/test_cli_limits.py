"""At the nesting limit, `mcec compile` (with mypy) and `mcec run` work; one level more is a diagnostic.

Issue 18, item 7: 1,000 nested groups used to compile and then raise
RecursionError at run time, and a type nested 201 deep crashed `compile`
(Python's parser stops at 200 levels). The parser now bounds nesting at
``MAX_DEPTH`` levels, and everything it accepts must compile and run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcec.syntax import MAX_DEPTH

IMPL = '''\
from dataclasses import dataclass
from typing import Never

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Counter:
    calls: int = 0


def bump(state: Counter, value: int) -> Outcome[Counter, Never, int]:
    return Ok(value + 1, Counter(state.calls + 1))


def wrap(value: int) -> {deep}:
    return {value}
'''


def _project(tmp_path: Path, depth: int) -> Path:
    deep_type = "list[" * (depth - 1) + "int" + "]" * (depth - 1)
    deep_value = "[" * (depth - 1) + "value" + "]" * (depth - 1)
    app = tmp_path / "app"
    app.mkdir()
    (app / "__init__.py").write_text("", encoding="utf-8")
    (app / "impl.py").write_text(IMPL.format(deep=deep_type, value=deep_value), encoding="utf-8")
    body = "bump"
    for _ in range(depth - 1):
        body = f"local ({body})"
    spec = tmp_path / "deep.mce"
    spec.write_text(
        "from app.impl import Counter\nimport app.impl as impl\nstate Counter\n"
        "step bump : int -> int = impl.bump\n"
        f"fn wrap : int -> {deep_type} = impl.wrap\n"
        f"pipeline main : int -> {deep_type} = {body} >>= wrap;\n",
        encoding="utf-8",
    )
    return spec


def _mcec(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )


def test_a_spec_nested_to_the_limit_compiles_with_mypy_and_runs(tmp_path: Path) -> None:
    # `local (…)` chains a bind around the innermost step: MAX_DEPTH - 1 levels of groups is the most.
    spec = _project(tmp_path, MAX_DEPTH - 1)
    compiled = _mcec(tmp_path, "compile", spec.name)  # mypy runs by default
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    ran = _mcec(tmp_path, "run", spec.name, "main", "--input", "1", "--state", "{}")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    outcome = json.loads(ran.stdout)
    value, depth = outcome["value"], 1
    while isinstance(value, list):
        (value,) = value
        depth += 1
    assert outcome["ok"] and value == 2 and depth == MAX_DEPTH - 1


def test_one_level_more_is_a_diagnostic_not_a_crash(tmp_path: Path) -> None:
    spec = _project(tmp_path, MAX_DEPTH + 1)
    checked = _mcec(tmp_path, "check", spec.name)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "error[MCE001]" in checked.stdout and f"more than {MAX_DEPTH} levels deep" in checked.stdout
    assert "Traceback" not in checked.stdout + checked.stderr
