"""examples/support: a durable day of tickets waits for a person's approval of the refund over
the threshold (the small one is paid at once), is answered through the Python API, and pays it
once; the README's section shows the same from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcec import durable

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "examples" / "support" / "support.mce"
TICKETS = json.dumps([
    {"id": "T1", "customer": "ana", "amount": 40, "reason": "late"},
    {"id": "T2", "customer": "bo", "amount": 250, "reason": "broken"},
])


def test_a_large_refund_waits_for_approval_and_is_paid_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = tmp_path / "ledger.txt"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SUPPORT_LEDGER", str(ledger))
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    waiting = durable.run(SPEC, "day", TICKETS, run_id="day1", db=db)
    assert waiting["status"] == "waiting"
    [question] = waiting["questions"]
    assert question["prompt"] == "Refund 250.0 to bo (broken)? Ticket T2."
    assert question["question"]["id"] == "T2" and question["index"] == [1, 1]
    assert ledger.read_text(encoding="utf-8").splitlines() == ["T1 paid 40.00 to ana"]  # the small one at once
    with pytest.raises(durable.DurableError, match="bad answer to approve: approve: Field required"):
        durable.answer("day1", "approve", '{"note": "ok"}', db=db)
    done = durable.answer("day1", "approve", '{"approve": true, "note": "photo ok"}', db=db)
    assert done["ok"] and done["value"] == ["T1: refunded 40.00", "T2: refunded 250.00"]
    assert ledger.read_text(encoding="utf-8").splitlines() == ["T1 paid 40.00 to ana", "T2 paid 250.00 to bo"]
