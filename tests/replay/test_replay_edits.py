"""The matching rule of a replay (docs/language.md §17): an effect is matched by its identity
(branch path and number), its kind and its step, and its recorded value must validate as the type
the effect gives now. A spec edited before a recorded effect fails the replay there, a diagnostic
(MCE040) at the spec line of the effect the run asked for that names the recorded one (goldens);
one edited after the recorded effects passes when the Outcome is the same, and fails with the
difference when it is not (unless ``--allow-different-outcome``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden"

IMPL = '''\
from dataclasses import dataclass, replace

from agentmonad import Ok


@dataclass(frozen=True)
class Notes:
    seen: tuple[str, ...] = ()


def fetch(state: Notes, value: str) -> Ok[Notes, str]:
    return Ok(value.strip(), replace(state, seen=(*state.seen, "fetch")))


def trim(state: Notes, value: str) -> Ok[Notes, str]:
    return Ok(value[:3], state)


def shout(state: Notes, value: str) -> Ok[Notes, str]:
    return Ok(value.upper(), replace(state, seen=(*state.seen, "shout")))


def sign(state: Notes, value: str) -> Ok[Notes, str]:
    return Ok(value + " -- mcec", state)


def length(state: Notes, value: str) -> Ok[Notes, int]:
    return Ok(len(value), state)


def same(value: str) -> str:
    return value


def exclaim(value: str) -> str:
    return value + "!"
'''

HEADER = '''\
from impl import Notes
import impl

state Notes

step fetch  : str -> str = impl.fetch
step trim   : str -> str = impl.trim
step shout  : str -> str = impl.shout
step sign   : str -> str = impl.sign
step length : str -> int = impl.length
fn same     : str -> str = impl.same
fn exclaim  : str -> str = impl.exclaim

'''

RECORDED = "pipeline main : str -> str =\n    fetch\n    >>= shout\n    >>= sign;\n"


@pytest.fixture
def recorded(tmp_path: Path, mcec_in_process: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with the spec, its implementation, and a recording of ``main`` on ``" hello "``."""
    monkeypatch.delitem(sys.modules, "impl", raising=False)  # this folder's, not another test's
    (tmp_path / "impl.py").write_text(IMPL)
    (tmp_path / "edit.mce").write_text(HEADER + RECORDED)
    done = mcec_in_process("run", "edit.mce", "main", "--input", '" hello "', "--record", "main.mcerun.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((tmp_path / "main.mcerun.json").read_text())
    assert [(e["key"], e["step"]) for e in data["effects"]] == [("0", "fetch"), ("1", "shout"), ("2", "sign")]
    assert data["outcome"]["ok"] == "HELLO -- mcec"
    return tmp_path


def _replay(folder: Path, mcec_in_process: Any, body: str, *options: str) -> Any:
    header = HEADER
    if body.startswith("step "):  # the edit declares a step anew
        declared, body = body.split("\n", 1)
        header = "\n".join(declared if line.startswith(declared[:11]) else line for line in HEADER.splitlines()) + "\n"
    (folder / "edited.mce").write_text(header + body)
    return mcec_in_process("replay", "main.mcerun.json", "--spec", "edited.mce", *options, cwd=folder)


# -- edited before a recorded effect: the replay fails there --------------------------------------

BEFORE = {
    # a step inserted before `shout`: effect 1 is now `trim`, recorded as `shout`
    "a step inserted": "pipeline main : str -> str =\n    fetch\n    >>= trim\n    >>= shout\n    >>= sign;\n",
    # the steps swapped: effect 1 is now `sign`
    "two steps swapped": "pipeline main : str -> str =\n    fetch\n    >>= sign\n    >>= shout;\n",
    # a step whose output type changed: the recorded "HELLO" is not an int
    "a step of another type": "step shout  : str -> int = impl.length\npipeline main : str -> int =\n    fetch\n    >>= shout;\n",
    # a step added after the last recorded one: the recording holds no effect 3
    "a step appended": "pipeline main : str -> str =\n    fetch\n    >>= shout\n    >>= sign\n    >>= trim;\n",
}


@pytest.mark.parametrize("case", list(BEFORE))
def test_a_spec_edited_before_a_recorded_effect_fails_the_replay_at_that_line(
    recorded: Path, mcec_in_process: Any, golden: Any, case: str
) -> None:
    done = _replay(recorded, mcec_in_process, BEFORE[case])
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""  # no Outcome: the run did not get to one
    assert "error[MCE040]" in done.stderr and "Traceback" not in done.stderr
    golden(GOLDEN / f"{case.replace(' ', '_')}.txt", done.stderr)


def test_a_step_of_another_type_is_not_a_kind_mismatch_but_a_value_that_does_not_validate(
    recorded: Path, mcec_in_process: Any
) -> None:
    done = _replay(recorded, mcec_in_process, BEFORE["a step of another type"])
    assert "edited.mce:16:9" in done.stderr and "not of the type this effect gives now" in done.stderr, done.stderr


# -- edited after the recorded effects: the Outcome decides ---------------------------------------


def test_a_spec_edited_after_the_recorded_effects_with_the_same_outcome_passes(recorded: Path, mcec_in_process: Any) -> None:
    done = _replay(recorded, mcec_in_process, "pipeline main : str -> str =\n    fetch\n    >>= shout\n    >>= sign\n    >>= same;\n")
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result == {"replayed": 3, "performed": 0, "same_outcome": True,
                      "outcome": {"ok": "HELLO -- mcec", "state": {"seen": ["fetch", "shout"]}}}


def test_a_spec_edited_after_the_recorded_effects_with_another_outcome_fails_and_shows_the_difference(
    recorded: Path, mcec_in_process: Any
) -> None:
    body = "pipeline main : str -> str =\n    fetch\n    >>= shout\n    >>= sign\n    >>= exclaim;\n"
    done = _replay(recorded, mcec_in_process, body)
    assert done.returncode == 1, done.stdout + done.stderr
    assert json.loads(done.stdout)["same_outcome"] is False
    assert '-  "ok": "HELLO -- mcec",' in done.stderr and '+  "ok": "HELLO -- mcec!",' in done.stderr
    allowed = _replay(recorded, mcec_in_process, body, "--allow-different-outcome")
    assert allowed.returncode == 0 and '+  "ok": "HELLO -- mcec!",' in allowed.stderr


def test_an_implementation_changed_behind_a_recorded_step_still_replays_the_recorded_value(
    recorded: Path, mcec_in_process: Any
) -> None:
    """The recording answers the step: what its implementation does now is not asked."""
    impl = recorded / "impl.py"
    impl.write_text(impl.read_text().replace("value.upper()", "value.lower()"))
    sys.modules.pop("impl", None)  # the changed implementation, imported anew
    ran = mcec_in_process("run", "edit.mce", "main", "--input", '" hello "', cwd=recorded)
    assert json.loads(ran.stdout)["value"] == "hello -- mcec"  # what the step does now
    done = _replay(recorded, mcec_in_process, RECORDED)
    assert done.returncode == 0 and json.loads(done.stdout)["outcome"]["ok"] == "HELLO -- mcec", done.stderr


def test_a_file_that_is_not_a_recording_is_one_line_and_exit_2(tmp_path: Path, mcec_in_process: Any) -> None:
    (tmp_path / "bad.mcerun.json").write_text('{"version": 99}')
    done = mcec_in_process("replay", "bad.mcerun.json", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip() == "mcec replay: a recording of version 99; this mcec reads version 1"
    missing = mcec_in_process("replay", "nowhere.mcerun.json", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "cannot read nowhere.mcerun.json" in missing.stderr


def test_a_recording_that_cannot_be_written_is_one_line_and_exit_2_after_the_report(
    tmp_path: Path, mcec_in_process: Any
) -> None:
    (tmp_path / "impl.py").write_text(IMPL)
    (tmp_path / "edit.mce").write_text(HEADER + RECORDED)
    done = mcec_in_process("run", "edit.mce", "main", "--input", '"x"', "--record", "missing/main.mcerun.json", cwd=tmp_path)
    assert done.returncode == 2 and json.loads(done.stdout)["value"] == "X -- mcec"
    assert done.stderr == "mcec run: --record missing/main.mcerun.json: cannot write it: No such file or directory\n"
    refused = mcec_in_process("run", "edit.mce", "main", "--input", '"x"', "--record", "r.mcerun.json", "--trace",
                              cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr == "mcec run: --record does not go with --trace or --stream\n"


PAR_IMPL = '''\
import asyncio
from dataclasses import dataclass

from agentmonad import Err, Ok


@dataclass(frozen=True)
class Log:
    n: int = 0


class Bad(Exception):
    pass


def fail(state: Log, value: str) -> Err[Log, Bad]:
    return Err(Bad(value), state)


async def slow(state: Log, value: str) -> Ok[Log, str]:
    await asyncio.sleep(30)
    return Ok(value, state)


def same(value: str) -> str:
    return value


def pair(values: tuple[str, str]) -> str:
    return "".join(values)
'''

PAR_SPEC = '''\
from parimpl import Log, Bad
import parimpl as impl

state Log
error Bad

step fail       : str -> str ! Bad = impl.fail
async step slow : str -> str = impl.slow
fn same         : str -> str = impl.same
fn pair         : tuple[str, str] -> str = impl.pair

'''


def test_an_effect_cancelled_in_the_recorded_run_that_nothing_cancels_in_the_replay_fails_there(
    tmp_path: Path, mcec_in_process: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`fail` failed while `slow` was under way: `slow` is recorded as cancelled. With `fail`
    edited away nothing cancels it in the replay: the replay fails at `slow` (after a wait, made
    short here), never hangs."""
    import agentmonad.record

    monkeypatch.setattr(agentmonad.record, "PARKED_SECONDS", 0.2)
    (tmp_path / "parimpl.py").write_text(PAR_IMPL)  # not `impl`: this process imported the other tests' already
    (tmp_path / "par.mce").write_text(PAR_SPEC + "pipeline main : str -> str ! Bad | MergeConflict = par <fail, slow> >>= pair;\n")
    ran = mcec_in_process("run", "par.mce", "main", "--input", '"x"', "--record", "par.mcerun.json", cwd=tmp_path)
    assert ran.returncode == 1 and json.loads(ran.stdout)["error"]["type"] == "Bad", ran.stdout + ran.stderr
    unchanged = mcec_in_process("replay", "par.mcerun.json", cwd=tmp_path)
    assert unchanged.returncode == 0, unchanged.stdout + unchanged.stderr
    (tmp_path / "edited.mce").write_text(PAR_SPEC + "pipeline main : str -> str ! Bad | MergeConflict = par <same, slow> >>= pair;\n")
    done = mcec_in_process("replay", "par.mcerun.json", "--spec", "edited.mce", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("error[MCE040]: the recording holds the step `slow` at par.mce:12:63 (effect 0.1/0) here as cancelled "
            "(a sibling failed, or a deadline fired, while it ran), and nothing cancelled it in the replay") in done.stderr
    assert "--> edited.mce:12:63" in done.stderr
