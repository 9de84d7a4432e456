"""``mcec runs show ID`` draws a durable run as the tree ``mcec run --trace`` draws (issue 33): each
recorded effect under its ``par``/``each`` element, with its duration, outcome, tokens, identity
and the state after it; ``--format json`` keeps its fields and adds the tree. A real durable run
on SQLite in a tmp dir, of a spec with ``each`` inside ``par``; and the tree built from records
that a killed run leaves (an effect still running, a failed element, a model call's tokens)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcec.cli import main
from mcec.run.timeline import as_json, from_records, render_text

ROOT = Path(__file__).resolve().parents[2]

IMPL = '''
from dataclasses import dataclass, field
from agentmonad import Ok


@dataclass
class S:
    seen: list[str] = field(default_factory=list)


async def note(state: S, text: str):
    return Ok(text, S([*state.seen, text]))


async def tag(state: S, text: str):
    return Ok(text + "!", state)


def count(state: S, items: list[str]):
    return Ok(len(items), S([*state.seen, str(len(items))]))


def split(text: str) -> list[str]:
    return text.split(",")


def pair(values: tuple[list[str], int]) -> str:
    return " ".join(values[0]) + f" ({values[1]})"
'''

SPEC = """from showtree_app.impl import S
import showtree_app.impl as impl
state S
async step note : str -> str = impl.note
async step tag : str -> str = impl.tag
step count : list[str] -> int = impl.count
fn split : str -> list[str] = impl.split
fn pair : tuple[list[str], int] -> str = impl.pair

pipeline go : str -> str =
    note >>= split
    >>= par <each(limit=2) (tag >>= tag), count>
    >>= pair;
"""

#: The tree of the run of `go` on "a,b", its durations as T.
TREE = """\
go  run  ok  T
├─ note  step show.mce:11  ok  T  id 0
│  └─ state after: {"seen":["a,b"]}
└─ par/each  group  ok  T  2 done  id 1
   ├─ [0] par/each  group  ok  T  2 done  id 1.0/0
   │  ├─ [0] tag  step show.mce:12  ok  T  id 1.0/0.0/0
   │  │  └─ state after: {"seen":["a,b"]}
   │  ├─ [0] tag  step show.mce:12  ok  T  id 1.0/0.0/1
   │  │  └─ state after: {"seen":["a,b"]}
   │  ├─ [1] tag  step show.mce:12  ok  T  id 1.0/0.1/0
   │  │  └─ state after: {"seen":["a,b"]}
   │  └─ [1] tag  step show.mce:12  ok  T  id 1.0/0.1/1
   │     └─ state after: {"seen":["a,b"]}
   └─ [1] count  step show.mce:12  ok  T  id 1.1/0
      └─ state after: {"seen":["a,b","2"]}
"""


def _durations(text: str) -> str:
    return re.sub(r"\b\d+\.\d+(ms|s)\b", "T", text)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The database of one finished durable run `r1` of `go` (run by `mcec run --durable`)."""
    tmp = tmp_path_factory.mktemp("show")
    (tmp / "showtree_app").mkdir()
    (tmp / "showtree_app" / "__init__.py").write_text("", encoding="utf-8")
    (tmp / "showtree_app" / "impl.py").write_text(IMPL, encoding="utf-8")
    (tmp / "show.mce").write_text(SPEC, encoding="utf-8")
    db = f"sqlite:///{tmp / 'runs.sqlite'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("MCEC_DB", None)
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", "show.mce", "go", "--input", '"a,b"', "--durable", "--run-id", "r1",
         "--db", db],
        cwd=tmp, capture_output=True, text=True, timeout=120, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == "a!! b!! (2)"
    return db


def test_runs_show_draws_the_run_as_the_trace_does(finished_run: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "show", "r1", "--db", finished_run]) == 0
    header, tree = capsys.readouterr().out.split("\n", 1)
    assert re.fullmatch(r"run r1: go of .*show\.mce \(finished, started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\)", header)
    assert _durations(tree) == TREE


def test_runs_show_json_keeps_its_effects_and_adds_the_tree(finished_run: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "show", "r1", "--db", finished_run, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert list(shown) == ["run_id", "spec", "pipeline", "input", "status", "started", "effects", "state", "outcome", "tree"]
    # in the order they were recorded (concurrent branches: any order), each with the fields it always had
    # each with how it changed its branch's state (a branch's first record: the whole state)
    assert sorted((e["key"], e["kind"], e["step"], e["site"], e["outcome"], e["state_change"])
                  for e in shown["effects"]) == [
        ("0", "step", "note", "show.mce:11:5 (note)", "ok", {"set": {"seen": ["a,b"]}}),
        *[(f"1.0/0.{i}/{n}", "step", "tag", f"show.mce:12:{(29, 37)[n]} (tag)", "ok",
           {"set": {"seen": ["a,b"]}} if n == 0 else {"same": True})
          for i in (0, 1) for n in (0, 1)],
        ("1.1/0", "step", "count", "show.mce:12:43 (count)", "ok", {"set": {"seen": ["a,b", "2"]}}),
    ]
    assert shown["state"] == {"seen": ["a,b"]}  # the run's own branch: its last record is `note`'s
    assert all(e["seconds"] >= 0 and e["usage"] is None for e in shown["effects"])
    [run] = shown["tree"]
    assert (run["kind"], run["name"], run["outcome"], run["index"]) == ("run", "go", "ok", [])
    note, par = run["children"]
    assert (note["key"], note["name"], note["site"], note["state_change"]) == (
        "0", "note", {"file": "show.mce", "line": 11, "column": 5}, {"set": {"seen": ["a,b"]}}
    )
    assert (par["kind"], par["key"], par["progress"]) == ("group", "1", {"done": 2, "failed": 0, "total": None})
    each, count = par["children"]
    assert (each["kind"], each["key"], each["index"], count["key"], count["index"]) == ("group", "1.0/0", [0], "1.1/0", [1])
    assert [(tag["key"], tag["index"], tag["outcome"]) for tag in each["children"]] == [
        (f"1.0/0.{i}/{n}", [0, i], "ok") for i in (0, 1) for n in (0, 1)
    ]


def _record(key: str, kind: str, step: str, result: dict[str, object], started: float, seconds: float,
            usage: list[list[object]] | None = None) -> dict[str, object]:
    return {"key": key, "kind": kind, "step": step, "site": f"b.mce:3:7 ({step})", "result": result,
            "usage": usage or [], "started": started, "seconds": seconds}


def test_an_interrupted_runs_records_as_a_tree() -> None:
    """A run killed while a spawn's plan ran and while an `each` element was in flight: the spawn's
    inner records hang under a stand-in for it, the failed element counts as failed, a model call's
    tokens show (and add up in its group), and the run has no outcome yet."""
    records = [
        _record("0.1/0", "model", "extract", {"value": {"n": 1}}, 10.5, 0.5, [["gpt", 7, 3]]),
        _record("0.0/0", "model", "extract", {"value": {"n": 0}}, 10.0, 0.25, [["gpt", 5, 2]]),
        _record("0.2/0", "step", "extract", {"raised": {"type": "app.Bad", "args": [], "attrs": {}}}, 10.1, 0.1),
        _record("1/0", "step", "plan_step", {"ok": 1, "delta": {"set": {"k": 1}}}, 12.0, 1.0),
    ]
    states = [None, None, None, "{\"k\":1}"]  # as short_json gives the state after each
    roots = from_records(records, states, pipeline="batch", outcome=None)
    assert render_text(roots) == """\
batch  run  unfinished  -  tokens 12+5
├─ par/each  group  err  1.00s  tokens 12+5  2 done, 1 failed  id 0
│  ├─ [0] extract  model b.mce:3  ok  250.0ms  tokens 5+2  id 0.0/0
│  │  └─ model gpt: 5+2 tokens
│  ├─ [1] extract  model b.mce:3  ok  500.0ms  tokens 7+3  id 0.1/0
│  │  └─ model gpt: 7+3 tokens
│  └─ [2] extract  step b.mce:3  err  100.0ms  Bad  id 0.2/0
└─ (running when the run stopped)  effect  unfinished  -  id 1
   └─ plan_step  step b.mce:3  ok  1.00s  id 1/0
      └─ state after: {"k":1}"""
    [run] = as_json(roots)
    # the records name only the elements that recorded something: no total
    assert run["outcome"] is None and run["children"][0]["progress"] == {"done": 2, "failed": 1, "total": None}
    # the group ended because its branch recorded something after it (1/0); without that record,
    # in a run that has not ended, more elements may be to come
    [cut] = from_records(records[:3], states[:3], pipeline="batch", outcome=None)
    assert cut.children[0].outcome is None and render_text([cut]).splitlines()[1].startswith("└─ par/each  group  unfinished")


GROW_IMPL = '''
from dataclasses import dataclass, field
from agentmonad import Ok


@dataclass
class Notes:
    notes: list[str] = field(default_factory=list)


@dataclass
class Done:
    count: int


async def note(state: Notes, left: int):
    grown = Notes([*state.notes, f"note {left} " + "x" * 20])
    return Ok(left - 1 if left > 1 else Done(len(grown.notes)), grown)
'''

GROW = '''
from show_grow_impl import Notes, Done
import show_grow_impl as impl

state Notes

async step note : int -> int | Done = impl.note

pipeline grow : int -> Done = loop(1000) note;
'''


def test_runs_show_json_grows_linearly_with_a_run_whose_state_grows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 42 (12): each effect's state was the whole state after it, so a run whose state grows by
    one note an effect printed the square of its length (4 times the effects, 16 times the JSON). Each effect
    gives its change now, and the run its state once: 4 times the run, 4 times the JSON (and text)."""
    from mcec import durable

    (tmp_path / "show_grow_impl.py").write_text(GROW_IMPL, encoding="utf-8")
    (tmp_path / "grow.mce").write_text(GROW, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    sizes = {}
    for count in (100, 400):
        report = durable.run(tmp_path / "grow.mce", "grow", str(count), run_id=f"grow{count}", db=db)
        assert report["ok"] and report["value"] == {"count": count}, report
        for form in ("json", "text"):
            assert main(["runs", "show", f"grow{count}", "--db", db, "--format", form]) == 0
            sizes[form, count] = len(capsys.readouterr().out)
        shown = durable.show(f"grow{count}", db=db)
        assert shown["state"] == report["state"]  # the whole state, once
        assert shown["effects"][-1]["state_change"] == {"fields": {"notes": {"extend": [f"note 1 {'x' * 20}"]}}}
    for form in ("json", "text"):
        assert sizes[form, 400] < 5 * sizes[form, 100], sizes  # quadratic: 16 times
