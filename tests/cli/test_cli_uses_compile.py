"""``mcec check`` and ``mcec compile`` agree on a spec that uses another spec's pipelines
(docs/language.md §11): mypy reads a used spec's module as it is now, never a stale or
missing file on disk, and ``compile`` says what is stale or not generated yet. Real
subprocesses, as in test_cli_uses.py (split from it so that ``--dist loadfile`` spreads them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from uses_support import mcec, project  # noqa: F401  (project is a fixture)


def test_check_runs_mypy_against_the_used_specs_as_they_are_not_their_modules_on_disk(project: Path) -> None:
    # no generated module anywhere: mypy still sees what `from specs.research_mce import …` will be
    done = mcec(project, "check", "main.mce")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MCE100" not in done.stdout
    # a stale module beside the used spec (nothing like what the spec declares) is not what mypy reads
    stale = "async def research(state: int, value: int) -> int: ...\nasync def brief(state: int, value: int) -> int: ...\n"
    (project / "specs" / "research_mce.py").write_text(stale)
    again = mcec(project, "check", "main.mce")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (project / "specs" / "research_mce.py").read_text() == stale  # nothing of the user's is written
    # `compile` judges the spec as `check` does (mypy reads the used spec's module as it is now) and
    # says that the file on disk, which the compiled module will import, is not that module
    written = mcec(project, "compile", "main.mce")
    assert written.returncode == 0 and "MCE100" not in written.stdout, written.stdout + written.stderr
    assert "warning: `specs/research_mce.py` (from `specs/research.mce`) is a file mcec did not generate" in written.stderr
    assert "run `mcec compile specs/research.mce` too, or `mcec build specs`" in written.stderr
    assert (project / "specs" / "research_mce.py").read_text() == stale


def test_compile_agrees_with_check_when_a_used_spec_is_not_compiled_yet(project: Path) -> None:
    """`mcec compile main.mce` before `specs/research.mce` was ever compiled: mypy reads the used
    spec's module as it is now (as `check` does), not whatever an installed path offers under
    that name; the user is told to compile the used spec, and once it is, compile says nothing more."""
    checked = mcec(project, "check", "main.mce")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    first = mcec(project, "compile", "main.mce")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "warning: `specs/research_mce.py` (from `specs/research.mce`) is not generated yet" in first.stderr
    assert not (project / "specs" / "research_mce.py").exists()  # compile writes only the modules it was asked for
    used = mcec(project, "compile", "specs/research.mce")
    assert used.returncode == 0, used.stdout + used.stderr
    again = mcec(project, "compile", "main.mce")
    assert again.returncode == 0 and "warning" not in again.stderr, again.stderr
    # a used spec changed after its module was generated: compile says the module is stale
    research = project / "specs" / "research.mce"
    research.write_text(research.read_text() + "\n")
    stale = mcec(project, "compile", "main.mce")
    assert stale.returncode == 0, stale.stdout + stale.stderr
    assert "`specs/research_mce.py` (from `specs/research.mce`) is stale" in stale.stderr


def test_compile_of_the_meta_example_before_its_specialists_agrees_with_check(tmp_path: Path) -> None:
    """The issue's case: examples/meta/meta.mce compiled in a copy of the examples where nothing is
    generated (as on a fresh clone). mypy must not take the `examples` folder of an editable install
    for an installed package without a typed marker."""
    root = Path(__file__).resolve().parents[2]
    shutil.copytree(root / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*_mce.py", "__pycache__"))
    env = {**os.environ, "NO_COLOR": "1"}
    run = [sys.executable, "-m", "mcec"]
    checked = subprocess.run([*run, "check", "examples/meta/meta.mce"], cwd=tmp_path, capture_output=True, text=True, env=env)
    compiled = subprocess.run([*run, "compile", "examples/meta/meta.mce"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert checked.returncode == compiled.returncode == 0, checked.stdout + compiled.stdout + compiled.stderr
    assert "MCE100" not in compiled.stdout
    assert "`examples/meta/specialists_mce.py` (from `examples/meta/specialists.mce`) is not generated yet" in compiled.stderr
