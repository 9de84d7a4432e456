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
from hypothesis import given, settings
from hypothesis import strategies as st

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


def test_the_interpreter_and_the_compiled_code_record_the_same_effects(compiled: CompileResult, effects: Path) -> None:
    program = compiled.program
    assert program is not None and compiled.generated is not None
    recorded = {}
    for runner in ("interpreted", "compiled"):
        RUNNERS[program] = runner
        MODULES.setdefault(program, load_module(program, compiled.generated))
        outcome, _, store = _run(program)
        recorded[runner] = (outcome, [(r["key"], r["kind"], r["step"], r["result"]) for r in sorted(store.records, key=lambda r: r["key"])])
    assert recorded["interpreted"] == recorded["compiled"]


def test_a_replayed_model_call_counts_its_tokens_again() -> None:
    """A model call's tokens are recorded with its result and counted again on replay, so a
    ``budget`` or a run's usage decides as it did (the call itself does not run)."""
    from agentmonad import Site, lift_step
    from agentmonad.durable import SiteTypes, TypeTable
    from agentmonad.usage import record_usage, usage

    site = Site("ask", "m.mce", 1, 1)
    calls: list[str] = []

    async def ask(state: int, value: str) -> Outcome[int, Exception, str]:
        calls.append(value)
        record_usage("small", 7, 3)
        return Ok(value + "!", state + 1)

    table = TypeTable({str(site): SiteTypes(str, int, ())}, {})
    program = lift_step(ask, name="ask", errors=(), site=site, is_async=True, kind="model")

    def run(records: dict[str, Record]) -> tuple[Outcome[Any, Any, Any], int, MemoryStore]:
        store = MemoryStore()

        async def go() -> Outcome[Any, Any, Any]:
            with hooks(journal=DurableJournal(store, table, records)):
                outcome = await program("hi").run(0)
            await store.flush()
            return outcome

        with usage() as used:
            outcome = asyncio.run(go())
        return outcome, used.total_tokens, store

    first, tokens, store = run({})
    assert (first, tokens, calls) == (Ok("hi!", 1), 10, ["hi"])
    assert store.records[0]["usage"] == [["small", 7, 3]]
    again, replayed_tokens, _ = run(_by_key(store))
    assert (again, replayed_tokens, calls) == (Ok("hi!", 1), 10, ["hi"])


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(before=_json, after=_json, grown=st.lists(_json, max_size=3))
def test_a_state_change_gives_back_the_state(before: object, after: object, grown: list[object]) -> None:
    from agentmonad.durable.journal import apply_delta, state_delta

    assert apply_delta(before, state_delta(before, after)) == after
    if isinstance(before, list):  # a list that grows at its end records only what it grew by
        assert state_delta(before, [*before, *grown]) == ({"extend": grown} if grown else {"same": True})


def test_records_stay_the_same_size_as_the_state_grows() -> None:
    """Each record keeps what its effect changed in the state, not the whole state: a chain of 300
    steps that each append a note to the state records about the same bytes per step at the end
    as at the start (the whole states, rebuilt, are what ``mcec runs show`` prints)."""
    import json

    from agentmonad import AgentMonad, Site, lift_step
    from agentmonad.durable import SiteTypes, TypeTable
    from agentmonad.durable.journal import whole_states

    site = Site("note", "n.mce", 1, 1)

    def note(state: tuple[str, ...], value: int) -> Outcome[tuple[str, ...], Exception, int]:
        return Ok(value + 1, (*state, f"note {value} " + "x" * 40))

    step = lift_step(note, name="note", errors=(), site=site)
    table = TypeTable({str(site): SiteTypes(int, tuple[str, ...], ())}, {})
    store = MemoryStore()

    async def go() -> Outcome[Any, Any, Any]:
        with hooks(journal=DurableJournal(store, table)):
            outcome = await AgentMonad.chain([step] * 300)(0).run(())
        await store.flush()
        return outcome

    outcome = asyncio.run(go())
    sizes = [len(json.dumps(r["result"])) for r in store.records]
    assert max(sizes[1:]) <= 2 * sizes[1], sizes[:3] + sizes[-3:]
    assert whole_states(store.records)[-1] == list(outcome.state)
    replayed = MemoryStore()

    async def again() -> Outcome[Any, Any, Any]:
        with hooks(journal=DurableJournal(replayed, table, _by_key(store))):
            return await AgentMonad.chain([step] * 300)(0).run(())

    assert asyncio.run(again()) == outcome and replayed.records == []
