"""``mcec graph --plan TEXT --toolbox SPEC[:NAME]`` (docs/language.md §12): a plan checked as
``spawn`` checks it, drawn when accepted, its diagnostics and exit 1 when not.

What the command draws and says runs in this process (:func:`here`); what is about the process
runs ``python -m mcec`` (:func:`mcec`): the exit status of usage errors and of a spec that does
not check, no traceback, a plan from stdin or a file, ``--help``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOX = "tests/plans/planbox/box.mce"  # toolbox `research` (its Python side, planbox, is found from the spec)
PLAN = "split >>= each(limit=2) (look_up orelse slow) >>= join >>= shout"
GOLDEN = ROOT / "tests" / "tools" / "cases" / "graph"


def mcec(*args: str, stdin: str | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


#: ``mcec ARGS`` (from ``cwd``, the repository by default): exit status, stdout, stderr.
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def here(mcec_in_process: Run) -> Run:
    """``here(*args, cwd=ROOT)``: ``mcec ARGS`` in this process (tests/conftest.py)."""
    return lambda *args, cwd=ROOT: mcec_in_process(*args, cwd=cwd)


def test_an_accepted_plan_is_drawn_in_either_format(here: Run) -> None:
    run = here("graph", "--plan", PLAN, "--toolbox", f"{BOX}:research")
    assert run.returncode == 0, run.stderr
    assert run.stdout == (GOLDEN / "plan.mmd").read_text(encoding="utf-8") and run.stderr == ""
    run = here("graph", "--plan", PLAN, "--toolbox", BOX, "--format", "dot")  # its only toolbox
    assert run.returncode == 0, run.stderr
    assert run.stdout == (GOLDEN / "plan.dot").read_text(encoding="utf-8")


def test_the_plan_may_come_from_a_file_or_stdin(tmp_path: Path) -> None:
    plan = tmp_path / "plan.txt"
    plan.write_text(PLAN + "\n", encoding="utf-8")
    from_file = mcec("graph", "--plan", f"@{plan}", "--toolbox", BOX)
    from_stdin = mcec("graph", "--plan", "-", "--toolbox", BOX, stdin=PLAN)
    assert from_file.returncode == from_stdin.returncode == 0, from_file.stderr + from_stdin.stderr
    assert from_file.stdout == from_stdin.stdout == (GOLDEN / "plan.mmd").read_text(encoding="utf-8")
    missing = mcec("graph", "--plan", f"@{tmp_path / 'nope.txt'}", "--toolbox", BOX)
    assert missing.returncode == 2 and "cannot read the plan from" in missing.stderr


def test_a_rejected_plan_prints_its_diagnostics_and_exits_1(here: Run) -> None:
    run = here("graph", "--plan", "split >>= each(secret) >>= join", "--toolbox", BOX)
    assert run.returncode == 1 and run.stdout == ""
    assert "error[MCE031]: `secret` is a step of the spec, but toolbox `research` does not list it" in run.stderr
    # rendered as `mcec check` renders it: the plan's own file, its line and the carets
    assert " --> <plan research>:1:16\n" in run.stderr
    assert "1 | split >>= each(secret) >>= join\n" in run.stderr and "^^^^^^" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_plan_of_the_wrong_type_points_at_the_toolbox_too(here: Run) -> None:
    run = here("graph", "--plan", "split", "--toolbox", BOX)
    assert run.returncode == 1 and run.stdout == ""
    assert "error[MCE012]" in run.stderr and " --> <plan research>:1:1\n" in run.stderr
    assert f"{BOX}:23:27: plans produce str" in run.stderr


def test_an_unknown_toolbox_is_named_with_its_close_matches(here: Run) -> None:
    run = here("graph", "--plan", "split >>= join", "--toolbox", f"{BOX}:reserch")
    assert run.returncode == 1 and run.stdout == ""
    assert f"error[MCE031]: unknown toolbox `reserch`: `{BOX}` declares no toolbox of that name" in run.stderr
    assert "did you mean `research`?" in run.stderr and "Traceback" not in run.stderr


def test_a_spec_with_several_toolboxes_needs_a_name_and_one_with_none_has_none(tmp_path: Path, here: Run) -> None:
    two = tmp_path / "two.mce"
    two.write_text(
        "import m\n"
        "fn f : int -> int = m.f\n"
        "toolbox a : int -> int = f\n"
        "toolbox b : int -> int = f\n",
        encoding="utf-8",
    )
    (tmp_path / "m.py").write_text("def f(x: int) -> int:\n    return x\n", encoding="utf-8")
    run = here("graph", "--plan", "f", "--toolbox", "two.mce", cwd=tmp_path)
    assert run.returncode == 2 and "two.mce declares 2 toolboxes; name one: two.mce:a, two.mce:b" in run.stderr
    run = here("graph", "--plan", "f >>= f", "--toolbox", "two.mce:b", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert 'subgraph p0["plan over toolbox b : int -#62; int"]' in run.stdout
    none = tmp_path / "none.mce"
    none.write_text("import m\nfn f : int -> int = m.f\npipeline p : int -> int = f;\n", encoding="utf-8")
    run = here("graph", "--plan", "f", "--toolbox", "none.mce", cwd=tmp_path)
    assert run.returncode == 1 and "`none.mce` declares no toolbox" in run.stderr


def test_a_spec_that_does_not_check_prints_its_diagnostics(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mce"
    bad.write_text("toolbox t : int -> int = missing\n", encoding="utf-8")
    run = mcec("graph", "--plan", "missing", "--toolbox", str(bad))
    assert run.returncode == 1 and run.stdout == ""
    assert "error[MCE002]" in run.stderr and "Traceback" not in run.stderr


def test_usage_errors(here: Run) -> None:
    run = here("graph", "--plan", "split >>= join")
    assert run.returncode == 2 and "--plan needs --toolbox SPEC[:NAME]" in run.stderr
    run = here("graph", "--plan", "split >>= join", "--toolbox", BOX, BOX)
    assert run.returncode == 2 and "not both" in run.stderr
    run = here("graph", "--toolbox", BOX)
    assert run.returncode == 2 and "--toolbox goes with --plan" in run.stderr
    run = here("graph", "--plan", "split >>= join", "--toolbox", BOX, "--pipeline", "solve")
    assert run.returncode == 2 and "a plan is drawn whole" in run.stderr
    run = mcec("graph")  # the exit status the shell sees, and the next two: no traceback
    assert run.returncode == 2 and "give a spec FILE, or --plan TEXT --toolbox SPEC[:NAME]" in run.stderr
    for run in (mcec("graph", "--plan", "x"), mcec("graph")):
        assert "Traceback" not in run.stderr


def test_help_describes_both_forms() -> None:
    run = mcec("graph", "--help")
    assert run.returncode == 0
    assert "--plan TEXT --toolbox SPEC[:NAME]" in run.stdout and "@FILE" in run.stdout


def test_an_accepted_plan_with_a_warning_is_drawn_and_warned_about(here: Run) -> None:
    """Warnings do not reject a plan (§12): it is drawn (exit 0) and the warning goes to stderr."""
    run = here("graph", "--plan", 'match { _ => shout, "a" => slow }', "--toolbox", BOX)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("flowchart TD\n") and "plan over toolbox research" in run.stdout
    assert "warning[W002]" in run.stderr and " --> <plan research>:1:21\n" in run.stderr


def test_spec_and_toolbox_name_are_split_at_the_last_colon(tmp_path: Path) -> None:
    from mcec.cli.graph import split_toolbox

    assert split_toolbox("specs/box.mce:research") == ("specs/box.mce", "research")
    assert split_toolbox("specs/box.mce") == ("specs/box.mce", None)
    assert split_toolbox(r"C:\specs\box.mce") == (r"C:\specs\box.mce", None)  # no name after the colon
    odd = tmp_path / "a:b"  # a file whose own name has a colon is the whole SPEC
    odd.write_text("", encoding="utf-8")
    assert split_toolbox(str(odd)) == (str(odd), None)
