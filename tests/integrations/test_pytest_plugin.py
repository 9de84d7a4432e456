"""The pytest plugin: `.mce` specs as test items, in a temporary project run by a real pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_runs import QUIET

GOOD = """\
from app.impl import Log, Oops
import app.impl as impl

state Log
error Oops

step fetch : str -> int ! Oops = impl.fetch
fn show    : int -> str        = impl.show

pipeline run : str -> str ! Oops = fetch >>= show;
"""

IMPL = """\
from dataclasses import dataclass

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Log:
    n: int = 0


class Oops(Exception):
    pass


def fetch(state: Log, value: str) -> Outcome[Log, Oops, int]:
    return Ok(len(value), state)


def show(value: int) -> str:
    return str(value)
"""

#: An implementation that does not fit `fn show : int -> str`, which only mypy can tell: the
#: checker does not read type aliases.
BADLY_TYPED = IMPL.replace("def show(value: int) -> str:\n    return str(value)", "Text = str\n\n\ndef show(value: Text) -> str:\n    return value")


def _project(tmp_path: Path, ini: str) -> Path:
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("", encoding="utf-8")
    (root / "app" / "impl.py").write_text(IMPL, encoding="utf-8")
    (root / "app" / "good.mce").write_text(GOOD, encoding="utf-8")
    (root / "app" / "bad.mce").write_text(GOOD.replace("fetch >>= show", "fetch >>= shw"), encoding="utf-8")
    (root / "cases").mkdir()
    (root / "cases" / "broken.mce").write_text("pipeline p : = ;\n", encoding="utf-8")
    (root / "test_plain.py").write_text("def test_plain():\n    assert True\n", encoding="utf-8")
    (root / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n{ini}\n", encoding="utf-8")
    return root


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, "-rA", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_off_by_default_but_explicit_paths_are_collected(tmp_path: Path) -> None:
    root = _project(tmp_path, "")
    run = _pytest(root)
    assert run.returncode == 0 and "1 passed" in run.stdout and ".mce" not in run.stdout, run.stdout
    run = _pytest(root, "app/good.mce")
    assert run.returncode == 0 and "1 passed" in run.stdout and "app/good.mce::mce" in run.stdout, run.stdout


def test_enabled_by_ini_fails_with_the_rendered_diagnostic(tmp_path: Path) -> None:
    root = _project(tmp_path, 'mce = true\nmce_ignore = ["cases/**"]')
    run = _pytest(root)
    out = run.stdout
    assert run.returncode == 1, out
    assert "1 failed, 2 passed" in out
    assert "PASSED app/good.mce::mce" in out and "FAILED app/bad.mce::mce" in out
    assert "error[MCE002]: unknown name `shw`" in out and "app/bad.mce:10:" in out and "^^^" in out
    assert "cases/broken.mce" not in out  # mce_ignore
    assert "Traceback" not in out and "MceCheckFailed" not in out.split("short test summary")[0]
    # --mce on the command line does the same without the ini switch; -m mce selects only specs
    root2 = _project(tmp_path / "two", 'mce_ignore = ["cases/**"]')
    run = _pytest(root2, "--mce", "-m", "mce")
    assert "1 failed, 1 passed, 1 deselected" in run.stdout, run.stdout


def test_mypy_runs_by_default_and_reports_what_only_it_finds(tmp_path: Path) -> None:
    root = _project(tmp_path, 'mce = true\nmce_ignore = ["cases/**", "app/bad.mce"]')
    (root / "app" / "impl.py").write_text(BADLY_TYPED, encoding="utf-8")
    run = _pytest(root, "app/good.mce")
    assert run.returncode == 1, run.stdout
    assert "error[MCE100]" in run.stdout and "--> app/good.mce:8:1" in run.stdout, run.stdout
    fast = _pytest(root, "--mce-fast", "app/good.mce")  # like `mcec check --fast`: no mypy
    assert fast.returncode == 0, fast.stdout
    assert not list(root.rglob("*_mce.py"))  # generated into a temporary folder, not the project
    # ... which is gone when the report is read: nothing may point into it (issue 18, item 30)
    assert "mcec-pytest-" not in run.stdout and "_mce.py" not in run.stdout, run.stdout


def _mcec(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcec", *args], cwd=root, capture_output=True, text=True, timeout=300)


def test_a_stale_generated_module_beside_the_spec_fails_its_item(tmp_path: Path) -> None:
    root = _project(tmp_path, 'mce = true\nmce_ignore = ["cases/**", "app/bad.mce"]')
    assert _mcec(root, "compile", "--no-mypy", "app/good.mce").returncode == 0
    run = _pytest(root, "app/good.mce")
    assert run.returncode == 0 and "1 passed" in run.stdout, run.stdout  # fresh
    spec = root / "app" / "good.mce"
    spec.write_text(spec.read_text(encoding="utf-8") + "# edited after compiling\n", encoding="utf-8")
    run = _pytest(root, "app/good.mce")
    assert run.returncode == 1, run.stdout
    assert "app/good.mce: the generated module beside it, good_mce.py, is stale" in run.stdout
    assert "run `mcec compile app/good.mce`" in run.stdout and "Traceback" not in run.stdout
    assert _mcec(root, "compile", "--no-mypy", "app/good.mce").returncode == 0
    assert _pytest(root, "app/good.mce").returncode == 0
