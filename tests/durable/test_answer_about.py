"""Questions chosen by what they are about (docs/language.md §13, §15; issue 47 item 9): ``mcec
runs answer ID NAME --about FIELD=VALUE`` and ``mcec runs waiting --about FIELD=VALUE`` pick the
open questions by their payload, not by their element index; from Python ``about={FIELD: VALUE}``.
A condition that no question, or several, meet is a message listing the candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcec import durable
from tests.durable.processes import mcec

DESK = Path(__file__).parent / "askbox" / "desk.mce"


def test_a_question_is_answered_by_what_it_is_about(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    started = mcec(["run", str(DESK), "settle", "--input", '"A-1:120,B-2:80,C-3:120"', "--durable", "--run-id", "r1",
                    "--db", db], tmp_path, effects)
    assert started.returncode == 0 and json.loads(started.stdout)["status"] == "waiting", started.stderr
    about_b2 = mcec(["runs", "waiting", "--db", db, "--about", "order=B-2"], tmp_path, effects)
    assert about_b2.returncode == 0, about_b2.stderr
    assert [(q["index"], q["question"]) for q in json.loads(about_b2.stdout)] == [([1], {"order": "B-2", "amount": 80.0})]
    # a number is matched as JSON: 120 is the payload's 120.0
    about_120 = mcec(["runs", "waiting", "--db", db, "--about", "amount=120"], tmp_path, effects)
    assert [q["question"]["order"] for q in json.loads(about_120.stdout)] == ["A-1", "C-3"]
    answered = mcec(["runs", "answer", "r1", "approve", "--about", "order=B-2", "--value", '{"ok": false, "note": "no"}',
                     "--db", db], tmp_path, effects)
    assert answered.returncode == 0, answered.stderr
    assert [q["question"]["order"] for q in json.loads(answered.stdout)["questions"]] == ["A-1", "C-3"]
    # none matches: the candidates are listed
    none = mcec(["runs", "answer", "r1", "approve", "--about", "order=B-2", "--value", '{"ok": true}', "--db", db],
                tmp_path, effects)
    assert none.returncode == 2
    assert none.stderr == ("mcec runs answer: run r1 has no open question 'approve' about order=B-2; it waits on: "
                           'approve --index 0 about {"order":"A-1","amount":120.0}; '
                           'approve --index 2 about {"order":"C-3","amount":120.0}\n')
    # several match: say which
    several = mcec(["runs", "answer", "r1", "approve", "--about", "amount=120", "--value", '{"ok": true}', "--db", db],
                   tmp_path, effects)
    assert several.returncode == 2
    assert several.stderr == ("mcec runs answer: 2 open questions 'approve' of run r1 are about amount=120: say which "
                              "with another --about FIELD=VALUE or --index (approve --index 0 about "
                              '{"order":"A-1","amount":120.0}; approve --index 2 about {"order":"C-3","amount":120.0})\n')
    malformed = mcec(["runs", "answer", "r1", "approve", "--about", "C-3", "--value", '{"ok": true}', "--db", db],
                     tmp_path, effects)
    assert (malformed.returncode, malformed.stderr) == (2, "mcec runs answer: --about C-3: say FIELD=VALUE, a field of "
                                                        "the question's payload and its value (e.g. --about order=A-1)\n")
    both = mcec(["runs", "answer", "r1", "approve", "--about", "amount=120", "--about", "order=C-3", "--value",
                 '{"ok": true}', "--db", db], tmp_path, effects)
    assert [q["question"]["order"] for q in json.loads(both.stdout)["questions"]] == ["A-1"], both.stderr


def test_the_python_api_chooses_questions_by_payload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MCEC_EFFECTS", str(tmp_path / "effects.txt"))
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert durable.run(DESK, "settle", '"A-1:120,B-2:80"', run_id="two", db=db)["status"] == "waiting"
    assert [q["index"] for q in durable.waiting(db=db, about={"amount": 80.0})] == [[1]]
    assert durable.waiting(db=db, about={"amount": "80"}) == durable.waiting(db=db, about={"order": "B-2"})
    assert durable.waiting(db=db, about={"order": "Z-9"}) == []
    second = durable.answer("two", "approve", '{"ok": false, "note": "no receipt"}', about={"order": "B-2"}, db=db)
    assert [q["question"]["order"] for q in second["questions"]] == ["A-1"]
    done = durable.answer("two", "approve", '{"ok": true}', about={"order": "A-1"}, db=db)
    assert done == {"ok": True, "value": ["paid", "refused: no receipt"], "state": {"paid": 1}, "run_id": "two"}
