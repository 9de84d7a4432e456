"""Sub-agents with their own state (docs/language.md §11, ``local(state=f) p``), compiled and run
as users do: a temporary project of tests/check/uses_cases, where ``specs/notes.mce`` runs on state
``Notes`` and ``ok_adapter.mce`` (as ``main.mce``, state ``Chat``) runs its pipeline as a sub-agent."""

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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "specs").mkdir()
    for name in ("__init__.py", "models.py", "impl.py", "notes.mce"):
        shutil.copy(CASES / "specs" / name, tmp_path / "specs" / name)
    shutil.copy(CASES / "ok_adapter.mce", tmp_path / "main.mce")
    return tmp_path


#: Runs each (pipeline, input) of main.mce from Chat(turns=3), compiled and interpreted, printing
#: both: the value, or the error (or Defect) with its site, and the state each ends with.
RUN_BOTH = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from agentmonad import Defect, Ok
    from mcec.compiler import compile_source
    from mcec.run.interpret import interpret
    from mcec.span import SourceFile
    from specs.models import Chat
    import main_mce

    def shown(run):
        try:
            outcome = asyncio.run(run)
        except Defect as defect:
            site = defect.site
            return {"defect": defect.step, "cause": repr(defect.cause), "state": repr(defect.state),
                    "at": None if site is None else [site.file, site.line, site.column]}
        if isinstance(outcome, Ok):
            return {"ok": repr(outcome.value), "state": repr(outcome.state)}
        site = outcome.site
        return {"error": type(outcome.error).__name__, "says": str(outcome.error), "state": repr(outcome.state),
                "at": None if site is None else [site.file, site.line]}

    program = compile_source(SourceFile("main.mce", Path("main.mce").read_text())).program
    assert program is not None
    results = []
    for pipeline, value in json.loads(sys.argv[1]):
        compiled = shown(getattr(main_mce, pipeline)(Chat(turns=3), value))
        interpreted = shown(interpret(program, pipeline, Chat(turns=3), value))
        results.append([pipeline, value, compiled, interpreted])
    print(json.dumps(results))
    """
)

RUNS = [("main", "ab"), ("main", ""), ("chained", "ab"), ("chained", ""), ("broken", "ab")]


def test_a_sub_agent_runs_on_its_own_state_compiled_with_mypy_and_like_the_interpreter(project: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    compiled = subprocess.run(
        [sys.executable, "-m", "mcec", "compile", "main.mce", "specs/notes.mce"],
        cwd=project, capture_output=True, text=True, env=env,
    )
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr  # mypy --strict included
    ran = subprocess.run(
        [sys.executable, "-c", RUN_BOTH, json.dumps(RUNS)], cwd=project, capture_output=True, text=True, env=env
    )
    assert ran.returncode == 0, ran.stderr
    results = {(pipeline, value): (mine, oracle) for pipeline, value, mine, oracle in json.loads(ran.stdout)}
    for key, (mine, oracle) in results.items():
        assert mine == oracle, key  # compiled ≡ interpreted: value, error, site and final state
    # the sub-agent ran on Notes(lines=3), made from Chat(turns=3) by notes_for (its value says
    # `#4`), and gave back only its value: the caller's state is unchanged
    assert results[("main", "ab")][0] == {"ok": "'ab #4'", "state": "Chat(turns=3)"}
    assert results[("chained", "ab")][0] == {"ok": "'AB #4'", "state": "Chat(turns=3)"}
    # its failure carries the caller's state, not the sub-agent's (Notes(lines=103)), and its site
    assert results[("main", "")][0] == {
        "error": "ResearchError", "says": "nothing to note", "state": "Chat(turns=3)", "at": ["notes.mce", 10],
    }
    # ... and the caller's catch handles it
    assert results[("chained", "")][0] == {"ok": "'sorry: nothing to note'", "state": "Chat(turns=3)"}
    # an adapter that raises is a Defect at the adapter's site, with the caller's state
    assert results[("broken", "ab")][0] == {
        "defect": "no_notes",
        "cause": "ValueError('no notes for 3 turns')",
        "state": "Chat(turns=3)",
        "at": ["main.mce", 17, 60],
    }


def test_graph_draws_a_sub_agent_as_a_local_naming_its_adapter(project: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    drawn = subprocess.run(
        [sys.executable, "-m", "mcec", "graph", "main.mce", "--pipeline", "main"],
        cwd=project, capture_output=True, text=True, env=env,
    )
    assert drawn.returncode == 0, drawn.stdout + drawn.stderr
    assert "local(state=notes_for)" in drawn.stdout
    assert "pipeline take_notes of specs/notes.mce" in drawn.stdout
