"""Replays of runs whose effects a deadline cut short (docs/language.md §17): the ``timeout`` that
fired is recorded, also when it is the run's last effect, so its replay fires it again at the same
place and the cancelled call waits for it there; and the durable tests' flow spec (a ``par`` with a
timeout that fires, ``each`` with a ``retry`` and its pauses, a ``loop``, a ``budget``, a
sub-agent, a checked plan) replays to its Outcome with both runners."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentmonad.control import fake_retry_clock
from mcec.compiler import compile_source
from mcec.run.recorded import record_run, replay_run
from mcec.run.runner import load_module
from mcec.span import SourceFile

FLOW = Path(__file__).resolve().parents[1] / "durable" / "flowbox" / "flow.mce"

IMPL = '''\
import asyncio
from dataclasses import dataclass

from agentmonad import Ok, Timeout


@dataclass(frozen=True)
class Log:
    n: int = 0


async def slow(state: Log, value: str) -> Ok[Log, str]:
    await asyncio.sleep(30)
    return Ok(value, state)


def gave_up(error: Timeout) -> str:
    return "gave up"
'''

SPEC = '''\
from impl import Log
import impl

state Log

async step slow : str -> str = impl.slow
fn gave_up      : Timeout -> str = impl.gave_up

pipeline main : str -> str = timeout(0.1) slow catch Timeout => gave_up;
'''


def test_a_timeout_that_fired_last_is_recorded_and_fires_again_in_the_replay(tmp_path: Path) -> None:
    (tmp_path / "impl.py").write_text(IMPL)
    (tmp_path / "late.mce").write_text(SPEC)

    def mcec(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mcec", *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)

    ran = mcec("run", "late.mce", "main", "--input", '"x"', "--record", "late.mcerun.json")
    assert ran.returncode == 0 and json.loads(ran.stdout)["value"] == "gave up", ran.stdout + ran.stderr
    effects = json.loads((tmp_path / "late.mcerun.json").read_text())["effects"]
    assert sorted((e["key"], e["kind"], e["result"]) for e in effects) == [
        ("0", "timeout", {"timeout": True}), ("1", "step", {"cancelled": True})]
    replayed = mcec("replay", "late.mcerun.json")  # a replay that waited for nothing would never end
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert json.loads(replayed.stdout)["outcome"]["ok"] == "gave up"


def test_the_durable_flow_replays_to_its_outcome_with_both_runners() -> None:
    from tests.durable.flowbox import impl

    result = compile_source(SourceFile(str(FLOW), FLOW.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    program, module = result.program, load_module(result.program, result.generated)
    for interpreted in (False, True):
        with fake_retry_clock():
            ran, recording = record_run(module, program, spec=str(FLOW), pipeline="flow", input_json='"a,b,c"',
                                        state_json=None, state=impl.Log(), value="a,b,c", interpreted=interpreted)
        assert "ok" in ran.encoded, ran.encoded
        made = {(e["kind"], e["step"]) for e in recording.effects}
        assert {("pause", "pause"), ("timeout", "timeout"), ("step", "write_plan"), ("step", "jot"), ("step", "slow")} <= made, made
        for replaying in (interpreted, not interpreted):
            replayed = replay_run(module, program, recording, interpreted=replaying)
            assert replayed.failure is None and replayed.same and replayed.performed == 0, (replayed.failure, replayed.ran)
