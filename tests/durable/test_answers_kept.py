"""An answer is a row of the run database (docs/language.md §15): `runs answer` records it before
the run goes on, and only the answering process (or one it hands the run to) runs the run. An
answer whose process is killed while the run goes on is not lost, and the run's other questions
can still be answered. (An unrelated durable run in another process never takes up a run that an
answer resumes: a property of tests/durable/test_races.py.)"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.durable.processes import environment, lines, mcec_with

CLAIMS_PY = '''\
"""Claims wait for approval; each approved claim is noted slowly (MCEC_PACE) in MCEC_EFFECTS."""
import os
import time
from dataclasses import dataclass, replace
from typing import NoReturn

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Desk:
    noted: int = 0


@dataclass(frozen=True)
class Claim:
    id: str


def claims(text: str) -> list[Claim]:
    return [Claim(part) for part in text.split(",")]


def _line(text: str) -> None:
    with open(os.environ["MCEC_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(f"{text} {os.getpid()}\\n")
        out.flush()


def note(state: Desk, yes: bool) -> Outcome[Desk, NoReturn, str]:
    _line("start")
    time.sleep(float(os.environ.get("MCEC_PACE", "0")))
    _line(f"noted {yes}")
    return Ok("paid" if yes else "refused", replace(state, noted=state.noted + 1))
'''

CLAIMS_MCE = '''\
from claims import Desk, Claim
import claims as impl

state Desk

fn claims : str -> list[Claim] = impl.claims
step note : bool -> str = impl.note
ask approve : Claim -> bool = "Approve claim {{ id }}?"

pipeline settle : str -> list[str] ! NoOneToAsk | NoAnswer | BadAnswer | MergeConflict = claims >>= each (approve >>= note);
'''


def _project(tmp: Path) -> tuple[Path, str, Path]:
    (tmp / "claims.py").write_text(CLAIMS_PY, encoding="utf-8")
    (tmp / "claims.mce").write_text(CLAIMS_MCE, encoding="utf-8")
    return tmp, f"sqlite:///{tmp / 'runs.sqlite'}", tmp / "effects.txt"


def test_an_answer_whose_process_is_killed_is_kept_and_the_other_questions_stay_open(tmp_path: Path) -> None:
    project, db, effects = _project(tmp_path)
    started = mcec_with(["run", "claims.mce", "settle", "--input", '"E1,E2"', "--durable", "--run-id", "r1",
                         "--db", db], project, MCEC_EFFECTS=str(effects))
    assert json.loads(started.stdout)["status"] == "waiting", started.stderr
    # the first answer resumes the run; its process is killed while the approved claim is being noted
    answering = subprocess.Popen(
        [sys.executable, "-m", "mcec", "runs", "answer", "r1", "approve", "--about", "id=E1", "--value", "true",
         "--db", db], cwd=project, env=environment(MCEC_EFFECTS=str(effects), MCEC_PACE="60"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(line.startswith("start") for line in lines(effects)) and time.monotonic() < deadline:
        assert answering.poll() is None, answering.communicate()
        time.sleep(0.01)
    answering.send_signal(signal.SIGKILL)
    answering.communicate()
    # no process runs the run now: its other question is listed and can be answered, and the first answer holds
    listed = json.loads(mcec_with(["runs", "waiting", "--db", db], project).stdout)
    assert [q["question"]["id"] for q in listed] == ["E2"], listed
    second = mcec_with(["runs", "answer", "r1", "approve", "--about", "id=E2", "--value", "false", "--db", db],
                       project, MCEC_EFFECTS=str(effects))
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["value"] == ["paid", "refused"]
    noted = sorted(line.rsplit(" ", 1)[0] for line in lines(effects) if line.startswith("noted"))
    assert noted == ["noted False", "noted True"]

