"""Every way of checking a spec reports the same errors (issue 20).

For each case of ``tests/check/python_cases/`` (specs over the real modules of
``python_cases/agents/``), copied into a temporary project and run as a user
runs them — real subprocesses, from the project's folder:

* ``mcec check`` (the checker, then mypy on the generated module),
* ``mcec check --fast`` (the checker alone: the same errors, less the MCE100s
  that only mypy finds),
* ``mcec compile -o DIR`` (the checker, then mypy on the written module),
* the pytest plugin, ``pytest --mce`` (one run over every case),

must report the same set of error codes at the same lines. The project keeps
one mypy cache across the ``check`` and ``compile`` runs, as a user's does, so
the later runs replay what mypy cached from the earlier ones.

An ``mce100_`` case is one only mypy can tell; what ``mcec check`` says of it
is compared with ``<case>.check.txt`` (``pytest --update-golden`` rewrites it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_runs import QUIET

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "check" / "python_cases"
SPECS = sorted(CASES.glob("*.mce"))

#: The errors a run reported: (code, line) of each.
Found = frozenset[tuple[str, int]]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project holding every case and the ``agents`` package they import."""
    root = tmp_path_factory.mktemp("agreement")
    shutil.copytree(CASES / "agents", root / "agents", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(CASES / "prompts", root / "prompts")
    for spec in SPECS:
        shutil.copy(spec, root / spec.name)
    return root


def _run(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    return subprocess.run(
        [sys.executable, *args], cwd=project, env=env, capture_output=True, text=True, timeout=600
    )


def _json_errors(done: subprocess.CompletedProcess[str]) -> dict[str, Found]:
    """The errors of an ``mcec … --format json`` run (which must have ended normally), per spec."""
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    found: dict[str, set[tuple[str, int]]] = {spec.name: set() for spec in SPECS}
    for record in records:
        if record.get("severity") == "error":
            found[record["file"]].add((record["code"], record["line"]))
    assert done.returncode == (1 if any(found.values()) else 0), done.stdout
    return {name: frozenset(errors) for name, errors in found.items()}


def _text_errors(report: str) -> Found:
    """The errors of mcec's rendered text: each ``error[CODE]: …`` line and the ``--> file:line:col`` after it."""
    found: set[tuple[str, int]] = set()
    code: str | None = None
    for line in report.splitlines():
        if line.startswith("error[") and "]" in line:
            code = line[len("error[") : line.index("]")]
        elif code is not None and line.lstrip().startswith("--> "):
            found.add((code, int(line.rsplit(":", 2)[-2])))
            code = None
    return frozenset(found)


@pytest.fixture(scope="module")
def reports(project: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Found]]:
    """What each way of checking reports over every case, per spec: one run of each, in this order."""
    names = [spec.name for spec in SPECS]
    out = tmp_path_factory.mktemp("compiled")
    return {
        # every diagnostic of every case (the default shows at most 50)
        "check": _json_errors(_run(project, "-m", "mcec", "check", "--format", "json", "--max-diagnostics", "0", *names)),
        "fast": _json_errors(
            _run(project, "-m", "mcec", "check", "--fast", "--format", "json", "--max-diagnostics", "0", *names)
        ),
        "compile": _json_errors(
            _run(project, "-m", "mcec", "compile", "--format", "json", "--max-diagnostics", "0", "-o", str(out), *names)
        ),
        "plugin": _plugin_errors(project, tmp_path_factory.mktemp("junit") / "report.xml"),
    }


def _plugin_errors(project: Path, report: Path) -> dict[str, Found]:
    """What one ``pytest --mce`` run over the project reports, per spec (read from its JUnit XML report)."""
    done = _run(project, "-m", "pytest", "--mce", *QUIET, f"--junitxml={report}", str(project))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    found: dict[str, Found] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        assert case.find("error") is None and case.find("skipped") is None, ElementTree.tostring(case)
        failure = case.find("failure")  # its text: the plugin's report, mcec's rendered diagnostics
        found[case.get("classname", "")] = _text_errors(failure.text or "") if failure is not None else frozenset()
    return found


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_every_way_of_checking_agrees(
    spec: Path, project: Path, reports: dict[str, dict[str, Found]], golden: Callable[[Path, str], None]
) -> None:
    checked = reports["check"][spec.name]
    expected_code = spec.stem.split("_")[0].upper()
    if expected_code == "OK":
        assert not checked
    else:
        assert checked and {code for code, _ in checked} == {expected_code}, checked
    assert reports["fast"][spec.name] == {(code, line) for code, line in checked if code != "MCE100"}
    assert reports["compile"][spec.name] == checked
    assert spec.name in reports["plugin"], sorted(reports["plugin"])  # an item's JUnit class name: its spec's file
    assert reports["plugin"][spec.name] == checked

    if expected_code == "MCE100":  # and alone, as a user runs it on the one spec
        text = _run(project, "-m", "mcec", "check", spec.name)
        assert text.returncode == 1 and _text_errors(text.stdout) == checked, text.stdout + text.stderr
        golden(spec.with_suffix(".check.txt"), text.stdout)
