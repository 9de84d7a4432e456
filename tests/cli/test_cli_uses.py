"""Specs that use each other's pipelines (docs/language.md §11), compiled and run as users do:
real subprocesses in a temporary project made of tests/check/uses_cases (the specialist spec
``specs/research.mce`` and ``ok_uses.mce``, which uses its pipelines, as ``main.mce``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_runs import QUIET
from uses_support import mcec, project  # noqa: F401  (project is a fixture)


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


TOP = """\
# Uses main.mce, which uses specs/research.mce: built after both.
from specs.models import Chat
from main_mce import chained

state Chat

pipeline top : str -> str = chained;
"""

ALONE = """\
pipeline same : int -> int {}
"""


def _built(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The specs a build compiled, in order (its progress lines: more than three are compiled)."""
    return [line.split("] ", 1)[1] for line in done.stderr.splitlines() if line.startswith("[")]


def test_build_compiles_used_specs_first_and_rebuilds_the_specs_that_use_a_changed_one(project: Path) -> None:
    (project / "a_top.mce").write_text(TOP)
    (project / "zz_alone.mce").write_text(ALONE)
    first = mcec(project, "build", "--no-mypy")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "4 compiled, 0 up to date, 0 failed" in first.stdout
    # sorted by name they would be a_top, main, specs/research, zz_alone: each comes after what it uses
    assert _built(first) == ["specs/research.mce", "main.mce", "a_top.mce", "zz_alone.mce"]
    assert mcec(project, "build", "--no-mypy").stdout.startswith("mcec build: 0 compiled, 4 up to date")
    research = project / "specs" / "research.mce"
    research.write_text(research.read_text() + "\n# changed\n")
    again = mcec(project, "build", "--no-mypy")
    assert again.returncode == 0, again.stdout + again.stderr
    # research changed; main uses it, and a_top uses main: all three again, zz_alone is up to date
    assert "3 compiled, 1 up to date, 0 failed" in again.stdout
    main = project / "main.mce"
    main.write_text(main.read_text() + "\n# changed\n")
    last = mcec(project, "build", "--no-mypy")
    assert "2 compiled, 2 up to date, 0 failed" in last.stdout


def test_build_of_a_spec_using_a_broken_one_reports_the_error_once_and_fails_both(project: Path) -> None:
    research = project / "specs" / "research.mce"
    research.write_text(research.read_text().replace("= research >>= summary;", "= summary;"))
    done = mcec(project, "build", "--no-mypy")
    assert done.returncode == 1
    assert "0 compiled, 0 up to date, 2 failed" in done.stdout
    assert done.stdout.count("error[MCE012]") == 1  # research.mce's own error, once, in research.mce
    assert "--> specs/research.mce:" in done.stdout
    assert "error[MCE029]: `specs/research.mce`, which this spec uses, does not check" in done.stdout
    assert not (project / "main_mce.py").exists()


def test_the_pytest_plugin_checks_a_spec_after_the_specs_it_uses(project: Path) -> None:
    """With mypy: no generated module is on disk, and mypy reads those of the used specs as
    they would be generated now (mcec.codegen.mypy_check.overlay)."""
    (project / "a_top.mce").write_text(TOP)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, "-v", "a_top.mce", "main.mce", "specs/research.mce"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = [line.split("::")[0] for line in done.stdout.splitlines() if "::mce PASSED" in line]
    assert ran == ["specs/research.mce", "main.mce", "a_top.mce"], done.stdout


def test_the_pytest_plugin_shows_a_used_specs_error_with_its_source_line(project: Path) -> None:
    """The item of a spec whose used spec does not check shows that spec's error as `mcec check`
    does: at its file, line and column, with the line itself and the caret."""
    research = project / "specs" / "research.mce"
    research.write_text(research.read_text().replace("= research >>= summary;", "= summary;"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, "--mce-fast", "main.mce"],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(project), "NO_COLOR": "1"},
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error[MCE012]" in done.stdout and "--> specs/research.mce:" in done.stdout
    assert "= summary;" in done.stdout  # the used spec's line, not only its name
    assert "error[MCE029]" in done.stdout


def test_graph_draws_a_used_pipeline_as_a_call_naming_its_spec(project: Path) -> None:
    drawn = mcec(project, "graph", "main.mce", "--pipeline", "chained")
    assert drawn.returncode == 0, drawn.stdout + drawn.stderr
    # the alias bound here, the pipeline's name in its spec and the spec, then its type
    assert '[["short<br/>pipeline brief of specs/research.mce<br/>str -#62; str ! ResearchError"]]' in drawn.stdout


def test_run_uses_the_used_specs_as_they_are_now(project: Path) -> None:
    # nothing generated on disk: `mcec run` generates the used spec's module in memory too
    done = mcec(project, "run", "main.mce", "chained", "--input", '"ab"')
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout) == {"ok": True, "value": "AB: 2 FACTS", "state": {"turns": 1}}
    # a stale module beside the used spec is not what runs
    (project / "specs" / "research_mce.py").write_text("raise RuntimeError('stale')\n")
    again = mcec(project, "run", "main.mce", "safe", "--input", '""')
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["value"] == "sorry: nothing to look up"


def test_a_chain_of_400_specs_each_using_the_next_checks_compiles_and_runs(tmp_path: Path) -> None:
    """Issue 29, item 12: each used spec was checked inside the check of the spec using it, so a
    chain of 300–400 specs ended in "internal compiler error: RecursionError". Used specs are
    now loaded one after the other, however long the chain (the checker, the code generator
    and the interpreter all load them so)."""
    length = 400
    for i in range(length - 1):
        (tmp_path / f"s{i}.mce").write_text(f"from s{i + 1}_mce import p{i + 1}\n\npipeline p{i} : int -> int = p{i + 1};\n")
    (tmp_path / f"s{length - 1}.mce").write_text(f"pipeline p{length - 1} : int -> int {{}}\n")
    checked = mcec(tmp_path, "check", "--fast", "s0.mce")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    compiled = mcec(tmp_path, "compile", "--no-mypy", "s0.mce")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    # the 399 modules not generated yet are summed up, not a warning each
    assert "warning: 396 more modules of specs used here are not generated yet or stale" in compiled.stderr
    assert len(compiled.stderr.splitlines()) == 9, compiled.stderr
    assert "from s1_mce import p1" in (tmp_path / "s0_mce.py").read_text()
    ran = mcec(tmp_path, "run", "s0.mce", "p0", "--input", "7")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert json.loads(ran.stdout) == {"ok": True, "value": 7, "state": None}
