"""Specs that use each other's pipelines (docs/language.md §11), compiled and run as users do:
real subprocesses in a temporary project made of tests/check/uses_cases (the specialist spec
``specs/research.mce`` and ``ok_uses.mce``, which uses its pipelines, as ``main.mce``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "check" / "uses_cases"


def mcec(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    return subprocess.run([sys.executable, "-m", "mcec", *args], cwd=project, capture_output=True, text=True, env=env)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    for name in ("__init__.py", "models.py", "impl.py", "research.mce"):
        shutil.copy(CASES / "specs" / name, tmp_path / "specs" / name)
    shutil.copy(CASES / "ok_uses.mce", tmp_path / "main.mce")
    return tmp_path


#: Runs each (pipeline, input) of main.mce compiled (the generated modules) and interpreted (the
#: reference interpreter, which runs research.mce's pipelines interpreted too), printing both.
RUN_BOTH = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from agentmonad import Ok
    from mcec.compiler import compile_source
    from mcec.run.interpret import interpret
    from mcec.span import SourceFile
    from specs.models import Chat
    import main_mce

    def shown(outcome):
        if isinstance(outcome, Ok):
            return {"ok": repr(outcome.value), "state": repr(outcome.state)}
        return {"error": type(outcome.error).__name__, "says": str(outcome.error), "state": repr(outcome.state)}

    program = compile_source(SourceFile("main.mce", Path("main.mce").read_text())).program
    assert program is not None
    results = []
    for pipeline, value in json.loads(sys.argv[1]):
        compiled = asyncio.run(getattr(main_mce, pipeline)(Chat(), value))
        interpreted = asyncio.run(interpret(program, pipeline, Chat(), value))
        results.append([pipeline, value, shown(compiled), shown(interpreted)])
    print(json.dumps(results))
    """
)

RUNS = [
    ("chained", "ab"),
    ("chained", ""),
    ("inferred", "abc"),
    ("both", "abc"),
    ("many", "a,bb"),
    ("safe", "abcd"),
    ("safe", ""),
    ("either", ""),
]


def test_a_spec_using_another_specs_pipelines_compiles_with_mypy_and_runs_like_the_interpreter(project: Path) -> None:
    compiled = mcec(project, "compile", "main.mce", "specs/research.mce")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr  # mypy --strict included
    module = (project / "main_mce.py").read_text()
    assert "from specs.research_mce import research, brief as short" in module
    ran = subprocess.run(
        [sys.executable, "-c", RUN_BOTH, json.dumps(RUNS)],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project)},
    )
    assert ran.returncode == 0, ran.stderr
    results = {(pipeline, value): (mine, oracle) for pipeline, value, mine, oracle in json.loads(ran.stdout)}
    for key, (mine, oracle) in results.items():
        assert mine == oracle, key  # compiled ≡ interpreted: value, error and final state
    # values and state come from the used spec's step (it counts turns in Chat) ...
    assert results[("chained", "ab")][0] == {"ok": "'AB: 2 FACTS'", "state": "Chat(turns=1)"}
    assert results[("inferred", "abc")][0] == {"ok": "3", "state": "Chat(turns=1)"}
    # ... its errors are the caller's, with the state at failure ...
    assert results[("chained", "")][0] == {"error": "ResearchError", "says": "nothing to look up", "state": "Chat(turns=0)"}
    # ... and the caller's combinators handle them
    assert results[("safe", "abcd")][0] == {"ok": "'abcd: 4 facts'", "state": "Chat(turns=1)"}
    assert results[("safe", "")][0] == {"ok": "'sorry: nothing to look up'", "state": "Chat(turns=0)"}
    assert results[("either", "")][0] == {"ok": "'sorry: nothing to look up'", "state": "Chat(turns=0)"}
