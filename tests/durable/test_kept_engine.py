"""A process keeps its run database and DBOS launched between durable calls (docs/language.md §13,
"From Python"): calls one after another launch DBOS once; an idle process stops it; a process
that took `each` elements from their queues for its own run takes no more once the call returns;
a call on another database closes the first; ``durable.close()`` closes it now."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentmonad.durable import dbos, runs
from mcec import durable
from tests.durable.processes import until

DESK = Path(__file__).parent / "askbox" / "desk.mce"
ELEMENTS = Path(__file__).parent / "elementbox" / "elements.mce"


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every launch of DBOS in this process from now on (the database it was launched on)."""
    launched: list[str] = []
    launch = dbos.DBOS.launch

    def counted() -> None:
        launched.append(str(runs._kept[0].url) if runs._kept else "?")
        launch()

    monkeypatch.setattr(dbos.DBOS, "launch", staticmethod(counted))
    durable.close()
    yield launched
    durable.close()


def _launched() -> bool:
    return bool(runs._kept) and runs._kept[0] in dbos._launched


def test_calls_one_after_another_launch_dbos_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  launches: list[str]) -> None:
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.setattr(dbos, "RESUME_GRACE_SECONDS", 600.0)  # not idle in this test, however slow the machine
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    for n in range(3):
        waiting = durable.run(DESK, "settle", json.dumps(f"A-{n}:120"), run_id=f"r{n}", db=db)
        assert waiting["status"] == "waiting", waiting
        done = durable.answer(f"r{n}", "approve", '{"ok": true}', db=db)
        assert done["ok"] is True, done
        assert durable.resume(f"r{n}", db=db) == done  # a finished run: its recorded outcome
    assert len(launches) == 1 and _launched()
    assert [r.status for r in durable.list_runs(db=db)] == ["finished"] * 3
    durable.close()
    assert not runs._kept and not dbos._launched
    assert not [t for t in threading.enumerate() if t.name.startswith("queue-worker")]


def test_an_idle_process_stops_dbos_and_launches_it_again_when_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      launches: list[str]) -> None:
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.setattr(dbos, "RESUME_GRACE_SECONDS", 0.1)
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert durable.run(DESK, "settle", '"A-1:120"', run_id="r1", db=db)["status"] == "waiting"
    until(lambda: not _launched(), "DBOS to stop in an idle process")
    assert not [t for t in threading.enumerate() if t.name.startswith("queue-worker")]
    assert durable.answer("r1", "approve", '{"ok": true}', db=db)["ok"] is True
    assert len(launches) == 2


def test_a_call_on_another_database_closes_the_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     launches: list[str]) -> None:
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.setattr(dbos, "RESUME_GRACE_SECONDS", 600.0)
    first, second = (f"sqlite:///{tmp_path / name}" for name in ("a.sqlite", "b.sqlite"))
    assert durable.run(DESK, "settle", '"A-1:120"', run_id="r1", db=first)["status"] == "waiting"
    assert durable.run(DESK, "settle", '"A-1:120"', run_id="r1", db=second)["status"] == "waiting"
    assert launches == [first, second] and [e.url for e in runs._kept] == [second]
    assert durable.answer("r1", "approve", '{"ok": true}', db=first)["ok"] is True
    assert [r.status for r in durable.list_runs(db=second)] == ["waiting"]


def test_a_process_that_took_elements_for_its_run_takes_no_more_once_it_returns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, launches: list[str]) -> None:
    """Listening to the element queues after the call would take elements of other processes' runs
    (a worker is the process that serves queues): it stops DBOS as the call returns."""
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.setattr(dbos, "RESUME_GRACE_SECONDS", 600.0)
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    done = durable.run(ELEMENTS, "stateless", "[1, 2, 3]", run_id="e1", db=db, elements=True)
    assert done["ok"] is True, done
    assert not _launched()
    assert durable.run(DESK, "settle", '"A-1:120"', run_id="r1", db=db)["status"] == "waiting"
    assert _launched() and len(launches) == 2  # a plain run's launch is kept


def test_a_forked_child_opens_its_own_engine_and_the_parent_keeps_its_own(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         launches: list[str]) -> None:
    """A process forked after a durable call (a pre-forking server, multiprocessing) inherits the
    kept engine, whose DBOS threads do not run in it and whose connections are the parent's: the
    child launches its own, and the parent's goes on."""
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.setattr(dbos, "RESUME_GRACE_SECONDS", 600.0)
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert durable.run(DESK, "settle", '"A-1:120"', run_id="r1", db=db)["status"] == "waiting"
    assert _launched()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        signal.alarm(60)  # a child waiting for the parent's threads would wait for ever: it dies instead
        try:
            answered = durable.answer("r1", "approve", '{"ok": true}', db=db)
            started = durable.run(DESK, "settle", '"B-1:120"', run_id="r2", db=db)
            os._exit(0 if answered["ok"] is True and started["status"] == "waiting" else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert durable.answer("r2", "approve", '{"ok": true}', db=db)["ok"] is True
    assert [r.status for r in durable.list_runs(db=db)] == ["finished", "finished"]
    assert len(launches) == 1  # the parent's (the child's counted in the child)


def test_a_call_on_another_database_while_the_kept_one_is_held_gets_its_own(tmp_path: Path,
                                                                           launches: list[str]) -> None:
    """Two threads' calls (a server's): the kept engine is not closed under the call that holds it."""
    first, second = (f"sqlite:///{tmp_path / name}" for name in ("a.sqlite", "b.sqlite"))
    seen: list[object] = []
    with runs.engine_for(first) as held:
        def other() -> None:
            with runs.engine_for(second) as own:
                seen.append(own)
                assert [r.run_id for r in durable.list_runs(db=second)] == []

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert seen and seen[0] is not held and runs._kept == [held]
        assert held.runs() == []  # still open
    with runs.engine_for(second) as now:  # nothing holds it now: the kept engine moves to the other database
        assert runs._kept == [now] and now.url == second


def test_a_database_file_deleted_between_calls_is_opened_anew(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              launches: list[str]) -> None:
    """A connection kept open on a deleted SQLite file would record the next run where nobody reads:
    the next call opens the file now at that path (made anew, with DBOS's tables)."""
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    monkeypatch.setattr(dbos, "RESUME_GRACE_SECONDS", 600.0)
    path = tmp_path / "runs.sqlite"
    db = f"sqlite:///{path}"
    assert durable.run(DESK, "settle", '"A-1:120"', run_id="r1", db=db)["status"] == "waiting"
    for name in ("runs.sqlite", "runs.sqlite-wal", "runs.sqlite-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    assert durable.run(DESK, "settle", '"B-1:120"', run_id="r2", db=db)["status"] == "waiting"
    assert path.exists() and [r.run_id for r in durable.list_runs(db=db)] == ["r2"]
    assert durable.answer("r2", "approve", '{"ok": true}', db=db)["ok"] is True
