"""Typed migrations of what a run in flight recorded (issue 44, item 3; docs/language.md §13,
"Changing a spec with runs in flight"): a changed output type of a step the runs passed, migrated
by ``fn migrate_output_load : Refund -> Claim``, and a renamed step, declared by ``rename load ->
fetch``. Each through the real CLI (``mcec runs upgrade`` and ``mcec check --against`` in a
subprocess) on SQLite, the output migration on a real PostgreSQL server too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcec import durable
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)
from tests.durable.processes import lines, mcec
from tests.durable.upgradebox import specs


def _started(tmp_path: Path, db: str, ids: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Runs of the first version waiting at the ask (``R-i:100+i``: refunds of 100, 101, …); the
    spec's path and the effects file."""
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    for i, run_id in enumerate(ids):
        started = durable.run(spec, "settle", json.dumps(f"R-{i}:{100 + i}"), run_id=run_id, db=db)
        assert started["status"] == "waiting", started
    (tmp_path / "old.mce").write_text(specs.FIRST, encoding="utf-8")
    return spec, effects


def _upgrade(args: list[str], cwd: Path, effects: Path) -> tuple[int, list[str]]:
    done = mcec(["runs", "upgrade", *args], cwd, effects)
    assert done.stderr == "", done.stderr
    return done.returncode, done.stdout.splitlines()


def _against(spec: Path, cwd: Path, effects: Path) -> list[str]:
    done = mcec(["check", str(spec), "--against", str(cwd / "old.mce")], cwd, effects)
    assert done.stderr == "", done.stderr
    return done.stdout.splitlines()


def _output_migrated(tmp_path: Path, db: str, ids: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    spec, effects = _started(tmp_path, db, ids, monkeypatch)
    spec.write_text(specs.RETYPED, encoding="utf-8")  # `load` gives a Claim now: without a migration, they stay
    status, shown = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 1 and len(shown) == len(ids)
    assert all(": stays (desk.mce:11:5 (load), was desk.mce:11:5 (load): what the run recorded for the step load does "
               "not fit the new version: the recorded value is not a Claim any more" in line for line in shown)

    spec.write_text(specs.RETYPED_MIGRATED, encoding="utf-8")
    checked = mcec(["check", "--fast", str(spec)], tmp_path, effects)  # a migration fn is not an unused fn
    assert (checked.returncode, checked.stdout) == (0, ""), checked.stdout
    migration = "migrate_output_load : Refund -> Claim"
    assert _against(spec, tmp_path, effects) == [
        f"old.mce:11:5 (load) [settle] -> desk.mce:14:5 (load): carries over with a migration (its output changed "
        f"type: {migration})",
        f"old.mce:7:1 (approve) [settle] -> desk.mce:10:1 (approve): carries over with a migration (its question "
        f"changed type: {migration})",
        "old.mce:13:5 (pay) [settle] -> desk.mce:16:5 (pay): carries over",
    ]
    status, shown = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 0 and shown == [f"{run_id}: moved" for run_id in ids]
    for i, run_id in enumerate(ids):
        (question,) = durable.waiting(db=db, run_id=run_id)
        # the person is asked about the migrated value: the new version's question, from the migrated record
        assert question["question"] == {"order": f"R-{i}", "amount": 100.0 + i, "reason": "moved from v1"}
        assert question["site"] == "desk.mce:10:1 (approve)" and not question["asked"].startswith("1970")
    status, shown = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 0 and shown == [f"{run_id}: on this version already" for run_id in ids]  # migrated once
    for run_id in ids:
        ended = durable.answer(run_id, "approve", '{"ok": true}', db=db)
        assert (ended["ok"], ended["value"], ended["state"]) == (True, "paid", {"paid": 1})
    assert sum(line.startswith("load") for line in lines(effects)) == len(ids)  # no step ran again


def test_a_changed_output_type_moves_with_its_typed_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fn migrate_output_load : Refund -> Claim``: every refund ``load`` recorded becomes a claim
    when the run moves; the run waiting at the ask is asked about the claim and finishes."""
    _output_migrated(tmp_path, str(tmp_path / "runs.sqlite"), ["o1", "o2"], monkeypatch)


def test_a_changed_output_type_moves_with_its_migration_on_postgres(tmp_path: Path, postgres_url: str,  # noqa: F811
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _output_migrated(tmp_path, postgres_url, [f"pg-o{i}" for i in range(5)], monkeypatch)


def test_a_value_the_migration_fails_on_leaves_its_run_with_the_reason(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The migration raises on the refund over 100: that run stays on its version, said why; the
    other moves. The one that stayed still finishes on the first version."""
    db = str(tmp_path / "runs.sqlite")
    spec, effects = _started(tmp_path, db, ["f1", "f2"], monkeypatch)
    spec.write_text(specs.RETYPED_FAILING, encoding="utf-8")
    status, shown = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 1
    assert shown == ["f1: moved", "f2: stays (its recorded output of load (identity 0) cannot be migrated by "
                     "migrate_output_load : Refund -> Claim: it raised ValueError: R-1 is over 100: ask the customer why)"]
    assert durable.answer("f1", "approve", '{"ok": true}', db=db)["value"] == "paid"
    spec.write_text(specs.FIRST, encoding="utf-8")  # the first version back: the run that stayed goes on under it
    ended = durable.answer("f2", "approve", '{"ok": false}', db=db)
    assert (ended["value"], ended["state"]) == ("refused", {"paid": 0})


def test_a_renamed_step_moves_when_the_rename_is_declared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load`` is ``fetch`` now, at the same place: without ``rename load -> fetch`` the runs stay
    (told of the declaration); with it they move, their records name ``fetch``, and they finish."""
    db = str(tmp_path / "runs.sqlite")
    spec, effects = _started(tmp_path, db, ["r1", "r2"], monkeypatch)
    spec.write_text(specs.RENAMED_UNDECLARED, encoding="utf-8")
    status, shown = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 1
    assert shown == [f"{run_id}: stays (desk.mce:11:5 (fetch), was desk.mce:11:5 (load): the new version runs the step "
                     "fetch here (identity 0), where the run recorded the step load (if it was renamed, the new spec "
                     "says so: `rename load -> fetch`))" for run_id in ("r1", "r2")]
    assert _against(spec, tmp_path, effects)[0] == "old.mce:11:5 (load) [settle]: cannot (the new version no longer runs it here)"

    spec.write_text(specs.RENAMED, encoding="utf-8")
    assert _against(spec, tmp_path, effects) == [
        "old.mce:11:5 (load) [settle] -> desk.mce:13:5 (fetch): carries over with a migration (renamed: rename load -> fetch)",
        "old.mce:7:1 (approve) [settle] -> desk.mce:9:1 (approve): carries over",
        "old.mce:13:5 (pay) [settle] -> desk.mce:15:5 (pay): carries over",
    ]
    status, shown = _upgrade(["--to", str(spec), "--all", "--db", db], tmp_path, effects)
    assert status == 0 and shown == ["r1: moved", "r2: moved"]
    fetched = durable.show("r1", db=db)["effects"][0]
    assert (fetched["step"], fetched["site"]) == ("fetch", "desk.mce:13:5 (fetch)")
    for run_id in ("r1", "r2"):
        assert durable.answer(run_id, "approve", '{"ok": true}', db=db)["value"] == "paid"
    assert sum(line.startswith("load") for line in lines(effects)) == 2  # the renamed step did not run again


def test_a_bad_migration_is_refused_before_any_run_is_looked_at(tmp_path: Path) -> None:
    """A migration that does not give the step's new output type: the spec does not check
    (MCE035), and ``runs upgrade`` says so in one line, exit 2."""
    effects = tmp_path / "effects.txt"
    spec = tmp_path / "desk.mce"
    spec.write_text(specs.RETYPED_MIGRATED.replace("Refund -> Claim = impl.claim_of", "Refund -> Refund = impl.claim_of"),
                    encoding="utf-8")
    done = mcec(["runs", "upgrade", "--to", str(spec), "--all", "--db", str(tmp_path / "runs.sqlite")], tmp_path, effects)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"mcec runs upgrade: {spec} does not check (MCE035: `migrate_output_load` gives `Refund`, "
                           f"but `load` outputs `Claim`); run `mcec check {spec}`\n")


def test_a_run_of_a_version_with_the_migration_is_not_migrated_again(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A run started on the version that declares ``migrate_output_load`` recorded claims already:
    moved to a later version that still declares it, its claims stay as they were (the migration
    is for runs of versions without it, as their requests' declarations say)."""
    effects, db = tmp_path / "effects.txt", str(tmp_path / "runs.sqlite")
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    spec = tmp_path / "claims.mce"
    spec.write_text(specs.RETYPED_MIGRATED, encoding="utf-8")
    assert durable.run(spec, "settle", json.dumps("R-7:70"), run_id="n1", db=db)["status"] == "waiting"
    spec.write_text(specs.RETYPED_MIGRATED.replace("Refund {{ amount }}", "Pay back {{ amount }}"), encoding="utf-8")
    status, shown = _upgrade(["--to", str(spec), "n1", "--db", db], tmp_path, effects)
    assert (status, shown) == (0, ["n1: moved"])
    (question,) = durable.waiting(db=db, run_id="n1")
    assert question["question"] == {"order": "R-7", "amount": 70.0, "reason": "damaged"}  # not "moved from v1"
    assert durable.answer("n1", "approve", '{"ok": true}', db=db)["value"] == "paid"


def test_a_run_waiting_at_a_renamed_ask_moves_and_is_answered_under_the_new_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``rename approve -> confirm``: the question a run waits on is the new ask's, answered by its name."""
    db = str(tmp_path / "runs.sqlite")
    spec, effects = _started(tmp_path, db, ["q1"], monkeypatch)
    spec.write_text(specs.RENAMED_ASK, encoding="utf-8")
    assert _against(spec, tmp_path, effects)[1] == ("old.mce:7:1 (approve) [settle] -> desk.mce:8:1 (confirm): carries "
                                                    "over with a migration (renamed: rename approve -> confirm)")
    status, shown = _upgrade(["--to", str(spec), "q1", "--db", db], tmp_path, effects)
    assert (status, shown) == (0, ["q1: moved"])
    assert [(q["name"], q["site"]) for q in durable.waiting(db=db, run_id="q1")] == [("confirm", "desk.mce:8:1 (confirm)")]
    assert durable.answer("q1", "confirm", '{"ok": true}', db=db)["value"] == "paid"
