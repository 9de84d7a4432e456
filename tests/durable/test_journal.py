"""The durable journal in process, on the in-memory store (docs/language.md §13): effect identities
do not depend on the order concurrent branches finish in; a replay gives the recorded results
without running the calls (a timeout that fired fires again at the same place, a retry's pause
does not sleep again, a model call's tokens are counted again); a record of another step is a
clear error, a recorded value that no longer validates too."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentmonad import Defect, Ok, Outcome
from agentmonad.context import RetryClock, hooks
from agentmonad.control import use_retry_clock
from agentmonad.durable import DurableJournal, MemoryStore, Record, RecordError, ReplayMismatch
from mcec.check.typed import Program
from mcec.compiler import CompileResult, compile_source
from mcec.durable.types import type_table
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile
from tests.durable.flowbox import impl

FLOW = Path(__file__).parent / "flowbox" / "flow.mce"


@pytest.fixture(scope="module")
def compiled() -> CompileResult:
    result = compile_source(SourceFile(str(FLOW), FLOW.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result


@pytest.fixture(scope="module", params=["interpreted", "compiled"])
def program(request: pytest.FixtureRequest, compiled: CompileResult) -> Program:
    """The flow spec's program, run by the interpreter or as its compiled module (both go through the seam)."""
    assert compiled.program is not None and compiled.generated is not None
    RUNNERS[compiled.program] = request.param
    if request.param == "compiled":
        MODULES[compiled.program] = load_module(compiled.program, compiled.generated)
    return compiled.program


RUNNERS: dict[Program, str] = {}
MODULES: dict[Program, Any] = {}


def _fetch_paced(order: list[str]) -> Any:
    """``fetch``, whose element ``topic`` finishes in the place it has in ``order`` (the last first)."""

    async def fetch(state: impl.Log, topic: str) -> Outcome[impl.Log, impl.Busy, str]:
        await asyncio.sleep(0.02 * (len(order) - order.index(topic)) if topic in order else 0)
        return await impl.fetch(state, topic)

    return fetch


#: What ran that a replay must not run again: the slow step's starts, the retry pauses' sleeps.
CALLS: list[str] = []


async def _slow(state: impl.Log, topic: str) -> Outcome[impl.Log, impl.Busy, str]:
    CALLS.append("slow")
    return await impl.slow(state, topic)


async def _sleep(seconds: float) -> None:
    CALLS.append("pause")
    await asyncio.sleep(seconds)


def _run(program: Program, records: dict[str, Record] | None = None, overrides: dict[str, Any] | None = None,
         value: str = "a,b,c") -> tuple[Outcome[Any, Any, Any], DurableJournal, MemoryStore]:
    store = MemoryStore()
    journal = DurableJournal(store, type_table(program), records or {})
    CALLS.clear()

    replaced = {"slow": _slow, **(overrides or {})}

    async def go() -> Outcome[Any, Any, Any]:
        with hooks(journal=journal), use_retry_clock(RetryClock(sleep=_sleep)):
            if RUNNERS[program] == "interpreted":
                return await interpret(program, "flow", impl.Log(), value, replaced)
            module = MODULES[program]
            kept = {name: getattr(module, name) for name in replaced}
            vars(module).update(replaced)  # the generated module calls its steps by their global names
            try:
                return await module.flow(impl.Log(), value)
            finally:
                vars(module).update(kept)

    async def run() -> Outcome[Any, Any, Any]:
        outcome = await go()
        await store.flush()
        return outcome

    return asyncio.run(run()), journal, store


def _by_key(store: MemoryStore) -> dict[str, Record]:
    return {r["key"]: r for r in store.records}


def _nested(key: str, records: dict[str, Record]) -> bool:
    """Is the effect ``key`` made inside the call of another recorded effect?"""
    parts = key.split("/")
    return any("/".join(parts[:n]) in records for n in range(1, len(parts)))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.fixture
def effects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "effects.txt"
    monkeypatch.setenv("MCEC_EFFECTS", str(path))
    return path


def test_identities_do_not_depend_on_the_order_branches_finish_in(program: Program, effects: Path) -> None:
    first, _, forward = _run(program, overrides={"fetch": _fetch_paced(["a", "b", "c"])})
    second, _, backward = _run(program, overrides={"fetch": _fetch_paced(["c", "b", "a"])})
    assert first == second
    order = [r["key"] for r in forward.records], [r["key"] for r in backward.records]
    assert order[0] != order[1], "the branches finished in the same order both times: the test shows nothing"
    one, other = _by_key(forward), _by_key(backward)
    assert one.keys() == other.keys()
    for key in one:
        assert (one[key]["step"], one[key]["result"]) == (other[key]["step"], other[key]["result"]), key


def test_a_replay_runs_no_recorded_effect_and_gives_the_same_outcome(program: Program, effects: Path) -> None:
    outcome, journal, store = _run(program)
    ran = _lines(effects)
    assert isinstance(outcome, Ok) and journal.replayed == 0
    assert CALLS.count("pause") == 3 and CALLS.count("slow") == 1
    again, replay, kept = _run(program, _by_key(store))
    assert again == outcome
    # replayed: every record but the timeout's, and the ones made inside a replayed effect's call
    outer = [r for r in store.records if r["kind"] != "timeout" and not _nested(r["key"], _by_key(store))]
    assert replay.performed == 0 and replay.replayed == len(outer)
    assert {"write_plan", "fetch", "jot"} <= {r["step"] for r in store.records}  # the planner, the plan, the sub-agent
    assert kept.records == [] and _lines(effects) == ran  # nothing ran, nothing new recorded
    # the timeout fired where it had (the slow step did not start again), the pauses did not sleep
    assert CALLS == []


def test_a_partial_replay_runs_only_what_was_not_recorded(program: Program, effects: Path) -> None:
    outcome, _, store = _run(program)
    total = len(_lines(effects))
    kept = store.records[: len(store.records) // 2]
    effects.unlink()
    again, replay, rest = _run(program, {r["key"]: r for r in kept})
    assert again == outcome
    assert replay.replayed == len([r for r in kept if r["kind"] != "timeout"])
    assert len(_lines(effects)) == total - len([r for r in kept if r["kind"] == "step"])
    assert {r["key"] for r in kept} | {r["key"] for r in rest.records} == {r["key"] for r in store.records}


def test_the_timeout_fires_again_where_it_fired(program: Program, effects: Path) -> None:
    """The slow step (30 s) is where the deadline fired: on replay it fires there at once, though
    no effect inside it is recorded."""
    outcome, _, store = _run(program)
    timeouts = [r for r in store.records if r["kind"] == "timeout"]
    assert len(timeouts) == 1
    only = {r["key"]: r for r in store.records if r["key"] <= timeouts[0]["key"] or r["key"].startswith("0.")}
    again, replay, _ = _run(program, only)
    assert "slow" not in CALLS
    assert again == outcome  # the pair was made with the timeout's fallback, as the first time
    assert replay.performed > 0


def test_a_record_of_another_step_is_a_clear_error(program: Program, effects: Path) -> None:
    _, _, store = _run(program)
    records = _by_key(store)
    first = next(iter(records))
    records[first] = {**records[first], "step": "flaky"}
    with pytest.raises(Defect) as raised:
        _run(program, records)
    assert isinstance(raised.value.cause, ReplayMismatch)
    assert "was step 'flaky' and is now step 'fetch'" in str(raised.value.cause)
    assert "the spec changed" in str(raised.value.cause)


def test_a_recorded_value_that_no_longer_validates_is_refused(program: Program, effects: Path) -> None:
    _, _, store = _run(program)
    records = _by_key(store)
    measured = next(k for k, r in records.items() if r["step"] == "measure")
    records[measured] = {**records[measured], "result": {**records[measured]["result"], "ok": "not a number"}}
    with pytest.raises(Defect) as raised:
        _run(program, records)
    assert isinstance(raised.value.cause, RecordError)
    assert "not a int any more" in str(raised.value.cause)


def test_a_declared_error_is_recorded_and_raised_again(program: Program, effects: Path) -> None:
    _, _, store = _run(program)
    raised = [r for r in store.records if "raised" in r["result"]]
    assert raised and raised[0]["result"]["raised"]["type"] == "tests.durable.flowbox.impl.Busy"
    again, _, _ = _run(program, {r["key"]: r for r in raised})  # the first attempts replayed: their Busy again
    assert isinstance(again, Ok)
