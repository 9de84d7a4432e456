"""``mcec check`` through real subprocesses: exit codes, formats, folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOOD = "fn f : str -> str = m.f\npipeline p : str -> str = f >>= f;\n"
BAD = "fn f : str -> str = m.f\npipeline p : str str = f;\n"


def mcec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    # 300 s as this file's other runs: a plain `check` may be its worker's first mypy run, cold
    # (test_empty_spec_exits_0 passed 120 s on a machine at load 14)
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "a" / "good.mce").write_text(GOOD)
    (tmp_path / "a" / "b" / "bad.mce").write_text(BAD)
    (tmp_path / "a" / "b" / "other.mce").write_text("state\n")
    (tmp_path / "a" / "notes.txt").write_text("not a spec")
    return tmp_path


def test_syntax_ok_exits_0(tree: Path) -> None:
    done = mcec("check", "a/good.mce", cwd=tree)
    assert "Traceback" not in done.stderr
    assert done.returncode in (0, 1)  # 1 only if the checker has something to say about m.f
    assert "MCE001" not in done.stdout


def test_empty_spec_exits_0(tree: Path) -> None:
    (tree / "empty.mce").write_text("")
    done = mcec("check", "empty.mce", cwd=tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == ""


def test_a_check_without_errors_says_so_in_one_line_and_q_silences_it(tree: Path) -> None:
    """As ``mcec compile`` says ``compiled X -> Y``: one line on stderr, stdout left to diagnostics."""
    (tree / "empty.mce").write_text("")
    (tree / "m.py").write_text("def f(text: str) -> str:\n    return text\n")
    (tree / "unused.mce").write_text("import m\n\nfn f : str -> str = m.f\n")  # W001: declared but never used
    done = mcec("check", "--fast", "empty.mce", cwd=tree)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "checked empty.mce: no errors (--fast: without mypy)\n")
    done = mcec("check", "--fast", "empty.mce", "unused.mce", cwd=tree)
    assert done.returncode == 0 and "W001" in done.stdout
    assert done.stderr == "checked 2 specs: no errors, 1 warning (--fast: without mypy)\n"
    done = mcec("check", "empty.mce", cwd=tree)
    assert (done.returncode, done.stderr) == (0, "checked empty.mce: no errors\n")
    for quiet in ("-q", "--quiet"):
        done = mcec("check", "--fast", quiet, "empty.mce", cwd=tree)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    done = mcec("check", "--fast", "--format", "json", "empty.mce", cwd=tree)
    assert done.returncode == 0 and done.stderr == "" and json.loads(done.stdout)["summary"]["errors"] == 0
    done = mcec("check", "--fast", "a/b/bad.mce", "empty.mce", cwd=tree)
    assert done.returncode == 1 and "checked" not in done.stderr + done.stdout


def test_syntax_error_exits_1_with_rendered_text(tree: Path) -> None:
    done = mcec("check", "a/b/bad.mce", cwd=tree)
    assert done.returncode == 1
    assert "error[MCE001]: expected `->` after the input type" in done.stdout
    assert " --> a/b/bad.mce:2:" in done.stdout
    assert done.stdout.rstrip().endswith("error: 1 error emitted (`mcec explain MCE001` says what a code means)")
    assert "\x1b[" not in done.stdout


def test_folder_recursion_sorted_json(tree: Path) -> None:
    done = mcec("check", "--format", "json", "a", cwd=tree)
    assert done.returncode == 1
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    *records, summary = lines
    assert summary == {"summary": {"errors": len([r for r in records if r["severity"] == "error"]),
                                   "warnings": len([r for r in records if r["severity"] == "warning"]),
                                   "unknown_relations": 0, "mypy": True, "mypy_started": 0, "mypy_reused": 0}}
    files = [r["file"] for r in records if r["code"] == "MCE001"]
    assert files == sorted(files) and set(files) == {"a/b/bad.mce", "a/b/other.mce"}
    for record in records:
        assert list(record) == [
            "severity", "code", "message", "file", "line", "column", "end_line", "end_column", "labels", "help",
        ]


def test_missing_file_is_mce005_exit_2(tree: Path) -> None:
    done = mcec("check", "nope.mce", cwd=tree)
    assert done.returncode == 2
    assert "error[MCE005]" in done.stdout and "Traceback" not in done.stderr


def test_usage_error_exit_2(tree: Path) -> None:
    assert mcec("check", cwd=tree).returncode == 2
    assert mcec("frobnicate", cwd=tree).returncode == 2
    assert mcec("check", "--format", "xml", "a", cwd=tree).returncode == 2


def test_invalid_utf8_is_a_diagnostic(tree: Path) -> None:
    (tree / "latin1.mce").write_bytes(b"# caf\xe9\n")
    done = mcec("check", "latin1.mce", cwd=tree)
    assert done.returncode == 1
    assert "not valid UTF-8" in done.stdout and "Traceback" not in done.stderr


def test_max_diagnostics(tree: Path) -> None:
    (tree / "many.mce").write_text("step x y\n" * 10)
    done = mcec("check", "--max-diagnostics", "2", "many.mce", cwd=tree)
    assert done.returncode == 1
    assert done.stdout.count("error[MCE001]") == 2
    assert "… and 8 more" in done.stdout
    assert "error: 10 errors emitted (" in done.stdout


def test_internal_error_is_tidy(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from mcec import cli
    from mcec.cli import check

    def boom(source: object, **options: object) -> object:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(check, "compile_source", boom)
    spec = tmp_path / "x.mce"
    spec.write_text(GOOD)
    assert cli.main(["check", str(spec)]) == 3
    assert "internal compiler error: RuntimeError: kaboom" in capsys.readouterr().err


def test_mypy_cache_goes_where_mypy_cache_dir_says(tmp_path: Path, shared_mypy_cache: Path) -> None:
    """``MYPY_CACHE_DIR`` moves mcec's mypy cache, as it moves mypy's own (without it the
    cache is ``.mcec/mypy_cache`` under the working directory)."""
    (tmp_path / "m.py").write_text("def f(value: str) -> str:\n    return value\n")
    (tmp_path / "ok.mce").write_text("import m\n\nfn f : str -> str = m.f\npipeline p : str -> str = f >>= f;\n")
    # a copy of the session's cache (tests/conftest.py), so that mypy does not start cold (~20 s):
    # what is under test is where this run writes, told by what it changed there
    shared = tmp_path / "shared-cache"
    shutil.copytree(shared_mypy_cache, shared)

    def files() -> dict[Path, tuple[int, int]]:
        return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in shared.rglob("*") if p.is_file()}

    before = files()
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(tmp_path), MYPY_CACHE_DIR=str(shared))
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "check", "ok.mce"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    written = {p.relative_to(shared).parts[0] for p, stamp in files().items() if before.get(p) != stamp}
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in written, f"mypy wrote no cache where MYPY_CACHE_DIR says: {written}"
    assert "mcec-verdicts" in written  # and mcec kept its verdict beside it
    assert not (tmp_path / ".mcec").exists()


#: A module whose ``f`` the checker takes for ``str -> str`` (it does not read type aliases), and the
#: same module where only mypy sees that ``f`` takes an int: the fault only mypy can find.
FITS = "Text = str\n\n\ndef f(value: Text) -> str:\n    return value\n"
MISFITS = "Text = int\n\n\ndef f(value: Text) -> str:\n    return str(value)\n"
USES_M = "import m\n\nfn f : str -> str = m.f\npipeline p : str -> str = f >>= f;\n"


def _check_json(folder: Path, spec: str) -> tuple[list[dict[str, object]], dict[str, object]]:
    """``mcec check --format json SPEC`` in ``folder``: its diagnostics and its summary."""
    # the session's mypy cache (tests/conftest.py), if any: a verdict is kept per working directory
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(folder))
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "check", "--format", "json", spec],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    *records, last = [json.loads(line) for line in done.stdout.splitlines()]
    return records, last["summary"]


def _started_reused(summary: dict[str, object]) -> tuple[object, object]:
    return summary["mypy_started"], summary["mypy_reused"]


def test_a_warm_check_of_an_unchanged_spec_reuses_mypys_verdict_and_a_change_runs_mypy_again(tmp_path: Path) -> None:
    """Issue 36: a second ``mcec check`` of a spec whose generated module and imported modules are
    unchanged does not start mypy (its kept verdict, findings included, is reused); a change to the
    user's module, or to the spec, starts mypy again, which reports the new fault."""
    (tmp_path / "m.py").write_text(FITS)
    (tmp_path / "ok.mce").write_text(USES_M)
    cold, summary = _check_json(tmp_path, "ok.mce")
    assert cold == [] and _started_reused(summary) == (1, 0)
    warm, summary = _check_json(tmp_path, "ok.mce")
    assert warm == [] and _started_reused(summary) == (0, 1)

    (tmp_path / "m.py").write_text(MISFITS)  # the spec is unchanged; what it imports is not
    changed, summary = _check_json(tmp_path, "ok.mce")
    assert _started_reused(summary) == (1, 0)
    assert [(r["code"], r["line"]) for r in changed] == [("MCE100", 3)], changed
    again, summary = _check_json(tmp_path, "ok.mce")  # the verdict kept says the same
    assert again == changed and _started_reused(summary) == (0, 1)

    (tmp_path / "ok.mce").write_text(USES_M.replace("f >>= f", "f"))
    edited, summary = _check_json(tmp_path, "ok.mce")
    assert _started_reused(summary) == (1, 0)
    assert [(r["code"], r["line"]) for r in edited] == [("MCE100", 3)], edited


def test_a_module_appearing_on_the_search_path_runs_mypy_again(tmp_path: Path) -> None:
    """A verdict depends on what mypy's imports found: ``m.py`` replaced by a package ``m/`` (a
    new file, no file mypy read changed) must not be judged by the verdict kept for ``m.py``."""
    (tmp_path / "m.py").write_text(FITS)
    (tmp_path / "ok.mce").write_text(USES_M)
    _, summary = _check_json(tmp_path, "ok.mce")
    assert _started_reused(summary) == (1, 0)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "__init__.py").write_text(MISFITS)  # a package wins over a module of its name
    found, summary = _check_json(tmp_path, "ok.mce")
    assert _started_reused(summary) == (1, 0)
    assert [r["code"] for r in found] == ["MCE100"], found
