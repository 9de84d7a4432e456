"""A durable run of a compiled module is started, killed, resumed, answered and cancelled by
processes that have neither the ``.mce`` source nor the compiler's packages (docs/language.md §13,
README.md "Deploying"): ``tests/without_compiler.py`` makes ``mcec``, ``lark``, ``libcst``,
``black``, ``mypy`` and ``griffe`` unimportable and runs ``python -m agentmonad``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mcec.cli import main as mcec_main

BLOCKED = Path(__file__).resolve().parents[1] / "without_compiler.py"

STEPS_PY = '''\
"""Each call notes itself in MCEC_EFFECTS; `hold` waits while the file HOLD exists."""
import os
import time
from dataclasses import dataclass, replace
from typing import NoReturn

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Count:
    calls: int = 0


def _note(text: str) -> None:
    with open(os.environ["MCEC_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(text + "\\n")


async def first(state: Count, text: str) -> Outcome[Count, NoReturn, str]:
    _note(f"first {text}")
    return Ok(text.upper(), replace(state, calls=state.calls + 1))


def hold(state: Count, text: str) -> Outcome[Count, NoReturn, str]:
    _note(f"enter {text}")
    while os.path.exists("HOLD"):
        time.sleep(0.02)
    _note(f"hold {text}")
    return Ok(text, replace(state, calls=state.calls + 1))


def said(yes: bool) -> str:
    return "approved" if yes else "refused"
'''

FLOW_MCE = '''\
from steps import Count
import steps

state Count

async step first : str -> str = steps.first
step hold : str -> str = steps.hold
fn said : bool -> str = steps.said
ask approve : str -> bool = "Approve {{ value }}?"

pipeline go : str -> str ! NoOneToAsk | NoAnswer | BadAnswer = first >>= hold >>= approve >>= said;
'''


def _project(tmp: Path) -> tuple[Path, str]:
    """A project compiled on the "build machine" (this process), its ``.mce`` source then removed."""
    project = tmp / "app"
    project.mkdir()
    (project / "steps.py").write_text(STEPS_PY, encoding="utf-8")
    (project / "flow.mce").write_text(FLOW_MCE, encoding="utf-8")
    assert mcec_main(["compile", str(project / "flow.mce"), "-q"]) == 0
    (project / "flow.mce").unlink()
    return project, f"sqlite:///{tmp / 'runs.sqlite'}"


def _env(tmp: Path) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MCEC_DB")}
    return {**found, "MCEC_EFFECTS": str(tmp / "effects.txt")}


def _runtime(args: list[str], project: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BLOCKED), *args], cwd=project, env=_env(tmp), capture_output=True,
                          text=True, timeout=120)


def _effects(tmp: Path) -> list[str]:
    path = tmp / "effects.txt"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_a_run_is_killed_resumed_and_answered_without_the_compiler(tmp_path: Path) -> None:
    project, db = _project(tmp_path)
    (project / "HOLD").write_text("", encoding="utf-8")
    started = subprocess.Popen([sys.executable, str(BLOCKED), "run", "flow_mce:go", "--input", '"a"', "--durable",
                                "--run-id", "r1", "--db", db], cwd=project, env=_env(tmp_path),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while _effects(tmp_path) != ["first a", "enter A"] and time.monotonic() < deadline and started.poll() is None:
        time.sleep(0.02)
    assert _effects(tmp_path) == ["first a", "enter A"], started.communicate()
    started.send_signal(signal.SIGKILL)  # inside `hold`, after `first` completed (and was recorded)
    started.wait()
    (project / "HOLD").unlink()
    resumed = _runtime(["runs", "resume", "r1", "--db", db], project, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    waiting = json.loads(resumed.stdout)
    assert waiting["status"] == "waiting" and waiting["questions"][0]["prompt"] == "Approve A?"
    # `first` ran once (recorded before `hold` started); `hold`, killed inside, ran again
    assert _effects(tmp_path) == ["first a", "enter A", "enter A", "hold A"]
    listed = _runtime(["runs", "waiting", "--db", db], project, tmp_path)
    assert [q["run_id"] for q in json.loads(listed.stdout)] == ["r1"], listed.stderr
    answered = _runtime(["runs", "answer", "r1", "approve", "--value", "true", "--db", db], project, tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["value"] == "approved"
    shown = _runtime(["runs", "show", "r1", "--format", "json", "--db", db], project, tmp_path)
    assert json.loads(shown.stdout)["status"] == "finished", shown.stderr


def test_a_run_is_cancelled_and_taken_up_again_without_the_compiler(tmp_path: Path) -> None:
    project, db = _project(tmp_path)
    started = _runtime(["run", "flow_mce:go", "--input", '"b"', "--durable", "--run-id", "r2", "--db", db], project,
                       tmp_path)
    assert started.returncode == 0 and json.loads(started.stdout)["status"] == "waiting", started.stderr
    cancelled = _runtime(["runs", "cancel", "r2", "--db", db], project, tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    refused = _runtime(["runs", "answer", "r2", "approve", "--value", "true", "--db", db], project, tmp_path)
    assert refused.returncode == 2 and "was cancelled" in refused.stderr
    again = _runtime(["runs", "resume", "r2", "--db", db], project, tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "waiting", again.stderr
    answered = _runtime(["runs", "answer", "r2", "approve", "--value", "false", "--db", db], project, tmp_path)
    assert json.loads(answered.stdout)["value"] == "refused", answered.stderr
    assert _effects(tmp_path) == ["first b", "enter B", "hold B"]


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The harness itself: the compiler's packages do not import under it."""
    probe = subprocess.run([sys.executable, "-c", "import runpy, sys; sys.argv = ['x', 'run', 'lark:x', '--input', '1'];"
                            f"runpy.run_path({str(BLOCKED)!r}, run_name='__main__')"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60)
    assert probe.returncode == 2 and "lark is not installed here" in probe.stderr, probe.stderr


def test_serve_says_what_it_cannot_serve_without_the_compiler(tmp_path: Path) -> None:
    """``python -m agentmonad serve``'s bad input: one line on stderr and exit 2, before serving."""
    project, _ = _project(tmp_path)
    for args, said in (
        (["flow_mce:nope"], "flow_mce has no pipeline named 'nope' (pipelines: go)"),
        (["flow_mce:go", "other_mce:go"], "serve the pipelines of one module at a time (given: flow_mce, other_mce)"),
        (["flow_mce"], "name a pipeline of a compiled module as MODULE:PIPELINE"),
        (["steps:first"], "steps is not a module mcec compiled"),
        (["flow_mce:go", "--state", '{"calls": "many"}'], "invalid --state: calls: Input should be a valid integer"),
    ):
        done = _runtime(["serve", *args], project, tmp_path)
        assert done.returncode == 2 and done.stdout == "", (args, done.stdout, done.stderr)
        (line,) = done.stderr.splitlines()
        assert line.startswith("python -m agentmonad serve: ") and said in line, (args, line)
