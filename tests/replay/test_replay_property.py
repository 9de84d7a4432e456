"""A replay of a recording of a run of a random spec gives the run's Outcome (docs/language.md
§17), compiled and interpreted: the random well-typed specs of the compiled-vs-interpreted tests
(tests/spec_gen.py), each run recorded (in memory and through the file's JSON), then run again
with every effect answered from the recording and none performed."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from spec_gen import specs
from toolbox import TState

from agentmonad.control import fake_retry_clock
from agentmonad.record import Recording
from mcec.compiler import compile_source
from mcec.render import render_text
from mcec.run.recorded import record_run, replay_run
from mcec.run.runner import load_module
from mcec.span import SourceFile
from shared_index import shared_index

_counter = itertools.count()


def compile_spec(text: str) -> tuple[Any, Any]:
    source = SourceFile(f"replay_{next(_counter)}.mce", text)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False) + text
    assert result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated)


def recorded(program: Any, module: Any, value: int, interpreted: bool) -> tuple[dict[str, Any], Recording]:
    with fake_retry_clock():  # a retry's pauses are effects: recorded, never waited
        ran, recording = record_run(module, program, spec=program.path, pipeline="main", input_json=json.dumps(value),
                                    state_json=None, state=TState(), value=value, interpreted=interpreted)
    return ran.encoded, Recording.from_json(json.loads(json.dumps(recording.as_json())))  # through the file's JSON


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), inputs=st.lists(st.integers(-60, 60), min_size=1, max_size=3))
def test_a_replay_of_a_recording_gives_the_recorded_outcome(spec: str, inputs: list[int]) -> None:
    """Each run recorded by the compiled module and by the interpreter, each recording replayed by
    the runner that made it and by the other (the two make the same effects, docs/DESIGN.md)."""
    program, module = compile_spec(spec)
    for value in inputs:
        for interpreted in (False, True):
            outcome, recording = recorded(program, module, value, interpreted)
            assert recording.outcome == outcome
            # two failed effects: when they ran concurrently (elements of an `each`), which one the
            # run ended with was the schedule's choice, and a replay answers both at once without
            # keeping their order (docs/language.md §17, "What a replay does not reproduce")
            assume(_failures(recording) < 2)
            for replaying in (interpreted, not interpreted):
                replayed = replay_run(module, program, recording, interpreted=replaying)
                where = f"input {value}, recorded {'interpreted' if interpreted else 'compiled'}, replayed " \
                        f"{'interpreted' if replaying else 'compiled'}\n{spec}"
                assert replayed.failure is None, f"{replayed.failure}\n{where}"
                assert replayed.same, f"{replayed.ran.encoded} != {outcome}\n{where}"
                # every effect the run asked for was answered from the recording: none ran again
                assert replayed.performed == 0, where
                assert replayed.replayed == len(recording.effects) - _inside_others(recording), where


def _failures(recording: Recording) -> int:
    """The recorded effects that failed with a declared error (or raised one)."""
    return sum(1 for e in recording.effects if isinstance(e.get("result"), dict)
               and ("err" in e["result"] or "raised" in e["result"]))


def _inside_others(recording: Recording) -> int:
    """The recorded effects made inside another recorded effect's call (a spawned plan's steps,
    a toolbox pipeline's): replaying the outer one skips them."""
    keys = {str(e["key"]) for e in recording.effects}
    return sum(1 for key in keys if any("/".join(key.split("/")[:n]) in keys for n in range(1, len(key.split("/")))))


def test_a_run_that_ends_in_a_defect_replays_the_same_defect_without_running_the_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolbox

    spec = (
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        "step inc : int -> int = tb.inc\nstep crash : int -> int = tb.crash\n"
        "pipeline main : int -> int = inc >>= crash;\n"
    )
    for interpreted in (False, True):
        program, module = compile_spec(spec)
        outcome, recording = recorded(program, module, 12, interpreted)
        assert "defect" in outcome and outcome["defect"]["cause"] is not None
        assert [e["kind"] for e in recording.effects] == ["step", "step"] and "defect" in recording.effects[1]["result"]
        calls: list[int] = []
        def crash(state: Any, value: int) -> Any:  # a replay must not call it
            calls.append(value)
            raise AssertionError("called")

        monkeypatch.setattr(module, "crash", crash)
        monkeypatch.setattr(toolbox, "crash", crash)
        replayed = replay_run(module, program, recording, interpreted=interpreted)
        assert replayed.ran.encoded == outcome and replayed.same and calls == []


def test_an_effect_a_failing_sibling_cancelled_waits_in_the_replay_until_it_is_cancelled_again() -> None:
    """``par``: ``even_only`` fails while ``slow_inc`` is under way, which the group cancels; the
    recording keeps that cancellation, and the replay's ``slow_inc`` waits where it was until the
    replayed failure cancels it again (found by the property above: it asked for an effect the
    recording did not hold)."""
    from spec_gen import HEADER

    spec = HEADER + "pipeline main : int -> int = (even_only >>= (par <crash, even_only, slow_inc> >>= add_triple));\n"
    program, module = compile_spec(spec)
    for interpreted in (False, True):
        outcome, recording = recorded(program, module, -2, interpreted)
        assert "err" in outcome and outcome["err"]["type"] == "toolbox.Odd"
        assert [e["result"] for e in recording.effects if "cancelled" in e["result"]] == [{"cancelled": True}]
        replayed = replay_run(module, program, recording, interpreted=interpreted)
        assert replayed.failure is None and replayed.ran.encoded == outcome and replayed.performed == 0
