"""Runs in flight moved to a new version of their spec (issue 44; docs/language.md §13, "Changing a
spec with runs in flight"): ``mcec runs upgrade`` moves the waiting runs a dry replay shows the new
version takes — a spec changed after the ask: a step added after the approval, a field with a
default added to the state, lines moved — and the answers given afterwards finish them on the new
version; a spec changed before the ask leaves every run on its version, with where and why."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from mcec import durable
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)
from tests.durable.processes import lines, mcec
from tests.durable.upgradebox import specs


def _start(spec: Path, db: str, ids: list[str]) -> None:
    for i, run_id in enumerate(ids):
        started = durable.run(spec, "settle", json.dumps(f"R-{i}:{100 + i}"), run_id=run_id, db=db)
        assert started["status"] == "waiting", started


def _upgrade(args: list[str], cwd: Path, effects: Path) -> tuple[int, list[str], str]:
    done = mcec(["runs", "upgrade", *args], cwd, effects)
    return done.returncode, done.stdout.splitlines(), done.stderr


def _moved_then_answered(tmp_path: Path, db: str, ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The scenario of the issue: runs waiting at an ask, the spec changed after it, moved, answered."""
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    _start(spec, db, ids)
    assert lines(effects) == [f"load R-{i}:{100 + i}" for i in range(len(ids))]
    spec.write_text(specs.AFTER, encoding="utf-8")  # the deploy: the spec changed after the ask
    with pytest.raises(durable.DurableError, match="cannot resume: the spec desk.mce changed"):
        durable.answer(ids[0], "approve", '{"ok": true}', db=db)  # not moved yet: refused, as before

    status, shown, _ = _upgrade(["--to", str(spec), "--all", "--dry-run", "--db", db], tmp_path, effects)
    assert status == 0 and shown == [f"(dry run) {run_id}: moved" for run_id in ids]
    with pytest.raises(durable.DurableError, match="cannot resume"):  # a dry run changed nothing
        durable.answer(ids[0], "approve", '{"ok": true}', db=db)

    status, shown, _ = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 0 and shown == [f"{run_id}: moved" for run_id in ids]
    # the records say where the new version's sites are (the comment moved every line down)
    load = durable.show(ids[0], db=db)["effects"][0]
    assert load["step"] == "load" and load["site"] == "desk.mce:13:5 (load)"
    assert [q["site"] for q in durable.waiting(db=db, run_id=ids[0])] == ["desk.mce:8:1 (approve)"]

    for i, run_id in enumerate(ids):
        ended = durable.answer(run_id, "approve", json.dumps({"ok": i % 2 == 0}), db=db)
        paid = "paid" if i % 2 == 0 else "refused"
        # the new version ran: its step after the approval, and its state's new field (default 0, then 1)
        assert ended["ok"] is True and ended["value"] == f"{paid}, customer notified"
        assert ended["state"] == {"paid": 1 if i % 2 == 0 else 0, "notified": 1}
    after = lines(effects)[len(ids):]
    assert sorted(after) == sorted([f"pay {i % 2 == 0}" for i in range(len(ids))]
                                   + [f"notify {'paid' if i % 2 == 0 else 'refused'}" for i in range(len(ids))])
    # nothing ran twice: no run loaded its refund again
    assert sum(line.startswith("load") for line in lines(effects)) == len(ids)
    status, shown, _ = _upgrade(["--to", str(spec), ids[0], "--db", db], tmp_path, effects)
    assert status == 1 and shown == [f"{ids[0]}: stays (it is finished: only a waiting, stopped or enqueued run moves)"]


def _changed_before_the_ask_stays(tmp_path: Path, db: str, ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    _start(spec, db, ids)
    spec.write_text(specs.BEFORE, encoding="utf-8")
    status, shown, _ = _upgrade(["--to", str(spec), *ids, "--db", db], tmp_path, effects)
    assert status == 1
    assert shown == [f"{run_id}: stays (desk.mce:13:5 (check), was desk.mce:7:1 (approve): the new version runs the "
                     "step check here (identity 1), before the question approve the run waits on (identity 1))"
                     for run_id in ids]
    with pytest.raises(durable.DurableError, match="cannot resume: the spec desk.mce changed"):
        durable.answer(ids[0], "approve", '{"ok": true}', db=db)  # still the old version's run
    spec.write_text(specs.FIRST, encoding="utf-8")  # the old version back: the runs go on under it
    for run_id in ids:
        ended = durable.answer(run_id, "approve", '{"ok": true}', db=db)
        assert ended["value"] == "paid" and ended["state"] == {"paid": 1}
    assert not any(line.startswith("check") for line in lines(effects))


def test_runs_changed_after_the_ask_move_and_finish_on_the_new_version(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _moved_then_answered(tmp_path, str(tmp_path / "runs.sqlite"), ["a1", "a2", "a3"], monkeypatch)


def test_runs_changed_before_the_ask_stay_on_their_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _changed_before_the_ask_stays(tmp_path, str(tmp_path / "runs.sqlite"), ["b1", "b2"], monkeypatch)


def test_twenty_runs_on_postgres_move_and_finish(tmp_path: Path, postgres_url: str,  # noqa: F811
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    moved, kept = tmp_path / "moved", tmp_path / "kept"
    moved.mkdir()
    kept.mkdir()
    _moved_then_answered(moved, postgres_url, [f"up-{i}" for i in range(20)], monkeypatch)
    _changed_before_the_ask_stays(kept, postgres_url, [f"keep-{i}" for i in range(20)], monkeypatch)


def test_a_recorded_value_the_new_types_refuse_stays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    _start(spec, db, ["c1"])
    new = tmp_path / "claims.mce"
    new.write_text(specs.RETYPED, encoding="utf-8")
    status, shown, _ = _upgrade(["--to", str(new), "c1", "--db", db], tmp_path, effects)
    assert status == 1 and len(shown) == 1
    assert shown[0].startswith("c1: stays (claims.mce:11:5 (load), was desk.mce:11:5 (load): what the run recorded "
                               "for the step load does not fit the new version: the recorded value is not a Claim any "
                               "more: 1 validation error for Claim reason Field required")


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    broken = tmp_path / "broken.mce"
    broken.write_text("pipeline x : int -> int = nope;\n", encoding="utf-8")
    for args, message in ((["--to", "missing.mce", "--all"], "no spec missing.mce"),
                          (["--to", str(broken), "--all"],
                           f"{broken} does not check (MCE002: unknown name `nope`); run `mcec check {broken}`"),
                          (["--to", str(spec)], "name the runs to move, or pass --all"),
                          (["--to", str(spec), "x", "--all"], "name runs or pass --all, not both"),
                          (["--to", str(spec), "nope"], "no durable run 'nope'")):
        status, shown, stderr = _upgrade([*args, "--db", db], tmp_path, effects)
        assert (status, shown, stderr) == (2, [], f"mcec runs upgrade: {message}" + (
            " (see `mcec runs list`)" if message.startswith("no durable") else "") + "\n")


def test_a_move_that_fails_midway_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The request and the records are rewritten in one transaction: a rewrite refused at its
    last row leaves the first ones as they were."""
    from agentmonad.durable.dbos import Engine
    from agentmonad.durable.dbos_internals import RewriteRefused, rewrite_run
    from agentmonad.durable.runs import database_url

    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    db = str(tmp_path / "runs.sqlite")
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    _start(spec, db, ["d1"])
    engine = Engine(database_url(db))
    try:
        (first, record), *_ = engine.step_rows("d1")
        request = dict(engine.run("d1").request)  # type: ignore[union-attr]
        with pytest.raises(RewriteRefused, match="step 999 is not one mcec wrote"):
            rewrite_run(engine.client, "d1", {**request, "spec": "elsewhere.mce"},
                        {first: {**record, "site": "moved"}, 999: {"key": "x"}})
        assert engine.run("d1").request["spec"] == request["spec"]  # type: ignore[union-attr]
        assert engine.step_rows("d1")[0][1]["site"] == record["site"]
    finally:
        engine.close()
    with sqlite3.connect(tmp_path / "runs.sqlite") as c:  # and the workflow's own rows say the same
        (inputs,) = c.execute("select coalesce(i.inputs, s.inputs) from workflow_status s left join workflow_input i "
                              "on i.workflow_uuid = s.workflow_uuid where s.workflow_uuid = 'd1'").fetchone()
    assert json.loads(inputs)["args"][0]["spec"] == request["spec"]


def test_check_against_classifies_each_site_and_counts_the_live_runs(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``mcec check NEW --against OLD``: per effect site of OLD, whether its runs carry over; with
    ``--db``, how many live runs sit there and how many ``runs upgrade`` would move."""
    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    old, after, before = tmp_path / "desk.mce", tmp_path / "after.mce", tmp_path / "before.mce"
    old.write_text(specs.FIRST, encoding="utf-8")
    after.write_text(specs.AFTER, encoding="utf-8")
    before.write_text(specs.BEFORE, encoding="utf-8")
    _start(old, db, ["e1", "e2"])
    done = mcec(["check", str(after), "--against", str(old), "--db", db], tmp_path, effects)
    fits = "carries over if its recorded values fit (the state changed type)"
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        f"desk.mce:11:5 (load) [settle] -> after.mce:13:5 (load): {fits}",
        f"desk.mce:7:1 (approve) [settle] -> after.mce:8:1 (approve): {fits}; 2 live runs here, 2 would move",
        f"desk.mce:13:5 (pay) [settle] -> after.mce:15:5 (pay): {fits}",
        "after.mce:16:5 (notify) [settle]: new (runs reach it after they move)",
    ]
    done = mcec(["check", str(before), "--against", str(old), "--db", db], tmp_path, effects)
    cannot = "cannot (the effects before it changed, so a run's identities no longer line up)"
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "desk.mce:11:5 (load) [settle] -> before.mce:12:5 (load): carries over",
        f"desk.mce:7:1 (approve) [settle] -> before.mce:8:1 (approve): {cannot}; 2 live runs here, 0 would move",
        f"desk.mce:13:5 (pay) [settle] -> before.mce:15:5 (pay): {cannot}",
        "before.mce:13:5 (check) [settle]: new (runs reach it after they move)",
    ]
    # lines that only moved are no change
    moved = tmp_path / "moved.mce"
    moved.write_text("# moved down\n\n" + specs.FIRST, encoding="utf-8")
    done = mcec(["check", str(moved), "--against", str(old)], tmp_path, effects)
    assert done.returncode == 0 and all(line.endswith(": carries over") for line in done.stdout.splitlines())
    assert len(done.stdout.splitlines()) == 3
    # a changed prompt is a change the runs carry over: the waiting ones see the new prompt
    reworded = tmp_path / "reworded.mce"
    reworded.write_text(specs.FIRST.replace("Refund {{ amount }}", "Pay back {{ amount }}"), encoding="utf-8")
    done = mcec(["check", str(reworded), "--against", str(old)], tmp_path, effects)
    assert done.stdout.splitlines()[1] == ("desk.mce:7:1 (approve) [settle] -> reworded.mce:7:1 (approve): carries over "
                                           "(its prompt changed: a run waiting here is shown the new prompt for the "
                                           "same question)")
    status, shown, _ = _upgrade(["--to", str(reworded), "e1", "--db", db], tmp_path, effects)
    assert (status, shown) == (0, ["e1: moved"])
    assert [q["prompt"] for q in durable.waiting(db=db, run_id="e1")] == ["Pay back 100.0 for R-0?"]
    bad = mcec(["check", str(moved), "--against", str(tmp_path / "gone.mce")], tmp_path, effects)
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1


def test_the_worked_example_of_the_language_reference(tmp_path: Path) -> None:
    """docs/language.md §13, "Changing a spec with runs in flight": examples/support/approval.mce's
    run waits for a person; approval_v2.mce (a step after the approval, a field in the state) takes it."""
    from tests.durable.processes import ROOT

    support = ROOT / "examples" / "support"
    db = str(tmp_path / "runs.sqlite")
    ticket = {"id": "T-9", "customer": "Ada", "amount": 250, "reason": "broken on arrival"}
    started = durable.run(support / "approval.mce", "refund", json.dumps(ticket), run_id="t9", db=db)
    assert started["status"] == "waiting"
    done = mcec(["runs", "upgrade", "--to", str(support / "approval_v2.mce"), "--all", "--db", db], ROOT,
                tmp_path / "effects.txt")
    assert (done.returncode, done.stdout, done.stderr) == (0, "t9: moved\n", "")
    ended = durable.answer("t9", "approve", '{"approve": true}', db=db)
    assert ended["value"] == "T-9: refunded 250.00 (customer notified)"
    assert ended["state"] == {"paid": 1, "notified": 1}


def test_a_move_killed_midway_leaves_each_run_moved_or_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``runs upgrade --all`` killed (SIGKILL) while it moves: every run is wholly on one version —
    its request and its records' sites agree — and a second ``runs upgrade`` moves the rest."""
    import signal
    import subprocess
    import sys
    import time

    from tests.durable.processes import ROOT, env

    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    ids = [f"k{i}" for i in range(30)]
    _start(spec, db, ids)
    old_digest = _request(db, ids[0])["digest"]
    spec.write_text(specs.AFTER, encoding="utf-8")
    mover = subprocess.Popen([sys.executable, "-m", "mcec", "runs", "upgrade", "--to", str(spec), "--all", "--db", db],
                             cwd=tmp_path, env={**env(effects), "PYTHONPATH": str(ROOT)},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while mover.poll() is None and all(_request(db, run_id)["digest"] == old_digest for run_id in ids):
            time.sleep(0.005)
        mover.send_signal(signal.SIGKILL)
    finally:
        mover.wait()
    moved = [run_id for run_id in ids if _request(db, run_id)["digest"] != old_digest]
    assert moved  # it was killed once it had moved one run (or it ended first)
    for run_id in ids:
        effect = durable.show(run_id, db=db)["effects"][0]
        questions = durable.waiting(db=db, run_id=run_id)
        if run_id in moved:
            assert (effect["site"], [q["site"] for q in questions]) == ("desk.mce:13:5 (load)", ["desk.mce:8:1 (approve)"])
        else:
            assert (effect["site"], [q["site"] for q in questions]) == ("desk.mce:11:5 (load)", ["desk.mce:7:1 (approve)"])
    status, shown, _ = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 0
    assert shown == [f"{run_id}: on this version already" if run_id in moved else f"{run_id}: moved" for run_id in ids]
    for run_id in ids:
        assert durable.answer(run_id, "approve", '{"ok": true}', db=db)["value"] == "paid, customer notified"


def _request(db: str, run_id: str) -> dict[str, object]:
    """The request the run ``run_id`` records (its workflow's input), read as DBOS reads it."""
    with sqlite3.connect(db) as c:
        (inputs,) = c.execute("select coalesce(i.inputs, s.inputs) from workflow_status s left join workflow_input i "
                              "on i.workflow_uuid = s.workflow_uuid where s.workflow_uuid = ?", (run_id,)).fetchone()
    request: dict[str, object] = json.loads(inputs)["args"][0]
    return request


def test_a_changed_state_type_moves_with_its_typed_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state type the recorded states do not fit (fields with no default): the runs stay; with
    ``fn migrate_state : Desk -> SourcedDesk`` in the new spec every recorded state is migrated
    when the run moves, and the run finishes in the migrated state."""
    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    _start(spec, db, ["m1", "m2"])
    spec.write_text(specs.UNMIGRATED, encoding="utf-8")
    status, shown, _ = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 1 and all(": stays (the new version does not take its input: the state type cannot be built"
                                in line for line in shown)
    spec.write_text(specs.MIGRATED, encoding="utf-8")
    checked = mcec(["check", "--fast", str(spec)], tmp_path, effects)  # `migrate_state` is not an unused fn
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout
    old = tmp_path / "old.mce"
    old.write_text(specs.FIRST, encoding="utf-8")
    against = mcec(["check", str(spec), "--against", str(old)], tmp_path, effects)
    assert against.stdout.splitlines()[0] == ("old.mce:11:5 (load) [settle] -> desk.mce:15:5 (load): carries over with a "
                                              "migration (the state changed type: migrate_state : Desk -> SourcedDesk)")
    status, shown, _ = _upgrade(["--to", str(spec), "--all", "--dry-run", "--db", db], tmp_path, effects)
    assert status == 0 and shown == ["(dry run) m1: moved", "(dry run) m2: moved"]
    assert durable.show("m1", db=db)["effects"][0]["state_change"] is not None
    status, shown, _ = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 0 and shown == ["m1: moved", "m2: moved"]
    # the records hold the migrated states now (the move is done once, not again at each resume)
    assert durable.show("m2", db=db)["state"] == {"paid": 0, "notified": 0, "source": "moved from v1"}
    for run_id in ("m1", "m2"):
        ended = durable.answer(run_id, "approve", '{"ok": true}', db=db)
        assert ended["value"] == "paid, customer notified"
        assert ended["state"] == {"paid": 1, "notified": 1, "source": "moved from v1"}


def test_an_enqueued_run_moves_to_the_new_versions_queue_and_its_worker_runs_it(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A run enqueued for workers of the first version, moved: a worker of the new version takes it."""
    import subprocess
    import sys

    from tests.durable.processes import ROOT, env

    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    assert durable.enqueue(spec, "settle", json.dumps("Q-1:50"), run_id="q1", db=db)["status"] == "enqueued"
    old_queue = _request(db, "q1")["queue"]
    spec.write_text(specs.AFTER, encoding="utf-8")
    status, shown, _ = _upgrade(["--to", str(spec), "q1", "--db", db], tmp_path, effects)
    assert (status, shown) == (0, ["q1: moved"])
    new_queue = _request(db, "q1")["queue"]
    assert new_queue != old_queue and str(new_queue).startswith("mcec.default.")
    with sqlite3.connect(db) as c:
        assert c.execute("select queue_name from workflow_status where workflow_uuid = 'q1'").fetchone() == (new_queue,)
    worker = subprocess.Popen([sys.executable, "-m", "mcec", "worker", str(spec), "--db", db, "--poll-seconds", "0.05"],
                              cwd=tmp_path, env={**env(effects), "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        waited = durable.result("q1", db=db, timeout=90)
        assert waited is not None and waited["status"] == "waiting", waited
    finally:
        worker.terminate()
        worker.wait(60)
    ended = durable.answer("q1", "approve", '{"ok": true}', db=db)
    assert ended["value"] == "paid, customer notified" and ended["state"] == {"paid": 1, "notified": 1}
