"""A generated module older than its spec says so (docs/language.md §7; issue 18, item 23):
at import (``agentmonad.freshness``), and in ``mcec run``. The pytest plugin's
side is in tests/test_8_pytest_plugin.py."""

from __future__ import annotations

import doctest
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import agentmonad.freshness as freshness
from agentmonad.freshness import StaleModuleWarning, check_fresh

IMPL = "def double(value: int) -> int:\n    return 2 * value\n"
SPEC = "import app.impl as impl\n\nfn double : int -> int = impl.double\n\npipeline p : int -> int = double;\n"
IMPORT = "import app.spec_mce as m, asyncio; print(asyncio.run(m.p(None, 21)).value)"


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    return subprocess.run([sys.executable, *args], cwd=project, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "impl.py").write_text(IMPL)
    (tmp_path / "app" / "spec.mce").write_text(SPEC)
    done = _run(tmp_path, "-m", "mcec", "compile", "--no-mypy", "app/spec.mce")
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path


def test_a_fresh_module_imports_silently(project: Path) -> None:
    done = _run(project, "-W", "error", "-c", IMPORT)
    assert done.returncode == 0 and done.stdout == "42\n", done.stderr


def test_importing_a_module_older_than_its_spec_warns(project: Path) -> None:
    spec = project / "app" / "spec.mce"
    spec.write_text(SPEC.replace("pipeline p", "# changed\npipeline p"))
    done = _run(project, "-c", IMPORT)
    assert done.returncode == 0 and done.stdout == "42\n"  # it still imports and runs …
    assert "StaleModuleWarning" in done.stderr  # … but says so
    assert "spec_mce.py is stale" in done.stderr and "run `mcec compile " in done.stderr
    strict = "import warnings; from agentmonad.freshness import StaleModuleWarning as W; warnings.simplefilter('error', W); "
    done = _run(project, "-c", strict + IMPORT)
    assert done.returncode == 1 and "StaleModuleWarning" in done.stderr and done.stdout == ""
    done = _run(project, "-W", "error::UserWarning", "-c", IMPORT)
    assert done.returncode == 1 and "StaleModuleWarning" in done.stderr and done.stdout == ""


def test_no_spec_beside_the_module_means_nothing_to_compare(project: Path) -> None:
    (project / "app" / "spec.mce").rename(project / "app" / "elsewhere.mce")
    done = _run(project, "-W", "error", "-c", IMPORT)
    assert done.returncode == 0 and done.stdout == "42\n", done.stderr


def test_mcec_run_says_that_the_module_beside_the_spec_is_stale(project: Path) -> None:
    spec = project / "app" / "spec.mce"
    spec.write_text(SPEC.replace("pipeline p", "# changed\npipeline p"))
    done = _run(project, "-m", "mcec", "run", "app/spec.mce", "p", "--input", "2")
    assert done.returncode == 0 and '"value": 4' in done.stdout  # run compiles the current spec
    assert "warning: `app/spec_mce.py` is stale: `app/spec.mce` changed after it was generated" in done.stderr
    assert "run `mcec compile app/spec.mce`" in done.stderr
    _run(project, "-m", "mcec", "compile", "--no-mypy", "app/spec.mce")
    done = _run(project, "-m", "mcec", "run", "app/spec.mce", "p", "--input", "2")
    assert done.returncode == 0 and "stale" not in done.stderr


def test_check_fresh_compares_the_spec_beside_the_module(tmp_path: Path) -> None:
    import hashlib

    module = tmp_path / "x_mce.py"
    module.write_text("")
    spec = tmp_path / "x.mce"
    spec.write_bytes(b"pipeline p : int -> int = f;\n")
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_fresh("x.mce", digest, str(module)) is True
        assert check_fresh("missing.mce", "0" * 64, str(module)) is True
    with pytest.warns(StaleModuleWarning) as caught:
        assert check_fresh("x.mce", "0" * 64, str(module)) is False
    warning = caught[0].message
    assert isinstance(warning, StaleModuleWarning) and warning.spec_file == str(spec)


def test_freshness_doctests() -> None:
    failures, _ = doctest.testmod(freshness)
    assert failures == 0
