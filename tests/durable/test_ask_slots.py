"""An `each(limit=N)` element that waits on a person gives up its slot (docs/language.md §15): the
elements that need no answer all run, and are recorded, before the run waits, and every question
of the batch is open at once — not N at a time, each answer letting one more element start."""

from __future__ import annotations

import json
from pathlib import Path

from tests.durable.processes import mcec_with

BATCH_PY = '''\
"""Claims over 100 wait for approval; every claim is noted in MCEC_EFFECTS."""
import os
from dataclasses import dataclass, replace
from typing import NoReturn

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Desk:
    noted: int = 0


@dataclass(frozen=True)
class Big:
    id: str


@dataclass(frozen=True)
class Small:
    id: str


def claims(text: str) -> list[Big | Small]:
    return [Big(part) if part.startswith("big") else Small(part) for part in text.split(",")]


def said(yes: bool) -> str:
    return "approved" if yes else "refused"


def name(claim: Small) -> str:
    return claim.id


async def note(state: Desk, text: str) -> Outcome[Desk, NoReturn, str]:
    with open(os.environ["MCEC_EFFECTS"], "a", encoding="utf-8") as out:
        out.write(f"noted {text}\\n")
    return Ok(text, replace(state, noted=state.noted + 1))
'''

BATCH_MCE = '''\
from batch import Desk, Big, Small
import batch as impl

state Desk

fn claims : str -> list[Big | Small] = impl.claims
fn said : bool -> str = impl.said
fn name : Small -> str = impl.name
async step note : str -> str = impl.note
ask approve : Big -> bool = "Approve {{ id }}?"

pipeline settle : str -> list[str] ! NoOneToAsk | NoAnswer | BadAnswer | MergeConflict =
    claims >>= each(limit=2) (match { Big => approve >>= said >>= note, Small => name >>= note });
'''


def test_every_question_of_a_limited_each_is_open_at_once(tmp_path: Path) -> None:
    (tmp_path / "batch.py").write_text(BATCH_PY, encoding="utf-8")
    (tmp_path / "batch.mce").write_text(BATCH_MCE, encoding="utf-8")
    db, effects = f"sqlite:///{tmp_path / 'runs.sqlite'}", tmp_path / "effects.txt"
    started = mcec_with(["run", "batch.mce", "settle", "--input", '"big0,big1,s2,s3,s4,s5"', "--durable",
                         "--run-id", "b1", "--db", db], tmp_path, MCEC_EFFECTS=str(effects))
    assert started.returncode == 0, started.stderr
    waiting = json.loads(started.stdout)
    assert waiting["status"] == "waiting"
    assert sorted(q["question"]["id"] for q in waiting["questions"]) == ["big0", "big1"]
    assert sorted(effects.read_text(encoding="utf-8").splitlines()) == ["noted s2", "noted s3", "noted s4", "noted s5"]
    for claim, value in (("big0", "true"), ("big1", "false")):
        answered = mcec_with(["runs", "answer", "b1", "approve", "--about", f"id={claim}", "--value", value,
                              "--db", db], tmp_path, MCEC_EFFECTS=str(effects))
        assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["value"] == ["approved", "refused", "s2", "s3", "s4", "s5"]
    assert sorted(effects.read_text(encoding="utf-8").splitlines()) == sorted(
        ["noted approved", "noted refused", "noted s2", "noted s3", "noted s4", "noted s5"])
