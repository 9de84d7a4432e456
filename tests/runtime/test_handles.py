"""Typed handles on durable runs (docs/language.md §13 "Typed handles", issue 43 item 3):
examples/support's ``handle`` pipeline, compiled, started through its module's ``Runs.handle``,
waits at ``approve``; its question is read typed, answered through the handle (here, and from
another process that opens the run by its id) and its typed result read — on an SQLite run
database, and on the suite's real Postgres server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from pgserver import postgres_url  # noqa: F401  (the fixture)

from agentmonad.durable.errors import DurableError
from agentmonad.events import EffectStarted, Event, RunStarted
from agentmonad.handles import Cancelled, Finished, Waiting
from examples.support.desk import Approval, Desk, Ticket
from mcec.cli import main as mcec_main

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "support" / "support.mce"
LARGE = Ticket(id="T2", customer="bo", amount=250, reason="broken")


@pytest.fixture(scope="module")
def support(tmp_path_factory: pytest.TempPathFactory) -> Iterator[types.ModuleType]:
    """examples/support/support.mce compiled into a folder of its own, imported as ``support_mce``."""
    out = tmp_path_factory.mktemp("compiled")
    assert mcec_main(["compile", str(SPEC), "-o", str(out), "--no-mypy", "-q"]) == 0
    sys.path.insert(0, str(out))
    sys.modules.pop("support_mce", None)  # another test's module of that name (one executed in memory) is not this one
    try:
        import support_mce

        assert Path(support_mce.__file__ or "").parent == out, support_mce.__file__
        yield support_mce
    finally:
        sys.path.remove(str(out))
        sys.modules.pop("support_mce", None)


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder with the desk's ledger in it (what a paid refund appends to)."""
    monkeypatch.chdir(tmp_path)
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv("SUPPORT_LEDGER", str(ledger))
    return ledger


async def _waits_then_answered_here(support: types.ModuleType, db: str, run_id: str) -> list[Event]:
    handle = await support.Runs.handle.start(LARGE, run_id=run_id, db=db)
    seen = [event async for event in handle.events()]
    assert await handle.result() == Waiting(run_id, ("approve",))
    question = await handle.question(handle.asks.approve)
    assert type(question.payload) is Ticket and question.payload == LARGE  # decoded as the question type
    assert question.prompt == "Refund 250.0 to bo (broken)? Ticket T2." and question.index == (1,)
    await question.answer(Approval(approve=True, note="photo ok"))
    assert await handle.questions(handle.asks.approve) == []
    with pytest.raises(DurableError, match=f"run {run_id} is not waiting for an answer \\(it is finished\\)"):
        await question.answer(Approval(approve=False))  # answered already: refused, and the handle goes on
    ended = await handle.result()
    assert ended == Finished(run_id, "T2: refunded 250.00", Desk(log=("T2: refunded 250.00",)))
    assert type(ended.state) is Desk  # the state decoded with the spec's state type
    return seen


def test_a_run_started_through_its_handle_waits_is_answered_typed_and_ends_typed(
        support: types.ModuleType, desk: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    seen = asyncio.run(_waits_then_answered_here(support, db, "h1"))
    assert isinstance(seen[0], RunStarted) and seen[0].pipeline == "handle"
    started = [(e.effect.kind, e.effect.site and e.effect.site.step) for e in seen if isinstance(e, EffectStarted)]
    assert started == [("human", "approve")]  # what the run did before it waited (its `fn`s are no effects)
    assert desk.read_text(encoding="utf-8").splitlines() == ["T2 paid 250.00 to bo"]


def test_handles_on_the_real_postgres_server(support: types.ModuleType, desk: Path, postgres_url: str) -> None:  # noqa: F811
    asyncio.run(_waits_then_answered_here(support, postgres_url, "pg-h1"))
    assert desk.read_text(encoding="utf-8").splitlines() == ["T2 paid 250.00 to bo"]


OTHER_PROCESS = '''\
import asyncio, json, sys
import support_mce
from examples.support.desk import Approval

async def main(run_id: str, db: str) -> None:
    handle = await support_mce.Runs.handle.open(run_id, db=db)
    question = await handle.question(handle.asks.approve)
    await question.answer(Approval(approve=question.payload.amount < 1000, note=f"seen {question.payload.id}"))
    ended = await handle.result()
    print(json.dumps({"kind": type(ended).__name__, "value": ended.value, "log": list(ended.state.log)}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
'''


def test_another_process_opens_the_run_by_its_id_and_answers_it(
        support: types.ModuleType, desk: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    compiled = str(Path(support.__file__).parent)

    async def scenario() -> None:
        handle = await support.Runs.handle.start(LARGE, run_id="h2", db=db)
        assert await handle.result() == Waiting("h2", ("approve",))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([compiled, str(ROOT), os.environ.get("PYTHONPATH", "")])}
        done = await asyncio.to_thread(subprocess.run, [sys.executable, "-c", OTHER_PROCESS, "h2", db], env=env,
                                       capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"kind": "Finished", "value": "T2: refunded 250.00",
                                           "log": ["T2: refunded 250.00"]}
        # this process's handle reads what the other process did from the run database
        assert await handle.result() == Finished("h2", "T2: refunded 250.00", Desk(log=("T2: refunded 250.00",)))

    asyncio.run(scenario())
    assert desk.read_text(encoding="utf-8").splitlines() == ["T2 paid 250.00 to bo"]


def test_a_handle_refuses_what_it_cannot_do_with_a_clear_message(
        support: types.ModuleType, desk: Path, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"

    async def scenario() -> None:
        handle = await support.Runs.handle.start(LARGE, run_id="h3", db=db)
        assert isinstance(await handle.result(), Waiting)
        with pytest.raises(DurableError, match="run h3 runs support_mce handle, not support_mce day"):
            await support.Runs.day.open("h3", db=db)
        with pytest.raises(DurableError, match="no durable run 'nope'"):
            await support.Runs.handle.open("nope", db=db)
        await handle.cancel()
        assert await handle.result() == Cancelled("h3")
        with pytest.raises(LookupError, match="run h3 does not wait on 'approve'"):
            await handle.question(handle.asks.approve)

    asyncio.run(scenario())
    assert not desk.exists()  # nothing was paid
