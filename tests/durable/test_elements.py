"""``each(limit=N)`` elements of a queued durable run handed to workers (docs/language.md, "`each`
over workers"), on a real PostgreSQL server: in one process listening to the element queues, the
Outcome is the in-process durable run's (stateless, stateful with a merge, a failing element,
groups nested in a ``par``; compiled and interpreted); across three ``mcec worker`` processes a
60-element ``each`` is spread over the workers and survives one of them killed mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from mcec import durable
from tests.durable.processes import shared_zygote

ROOT = Path(__file__).resolve().parents[2]
SPEC = Path(__file__).parent / "elementbox" / "elements.mce"


def _elements(db: str, run_id: str) -> dict[str, str]:
    """The element workflows of ``run_id``, with their DBOS status."""
    from agentmonad.durable.dbos import ELEMENT_WORKFLOW, Engine

    engine = Engine(db)
    try:
        found = engine.client.list_workflows(name=ELEMENT_WORKFLOW, workflow_id_prefix=f"{run_id}/", load_input=False,
                                             load_output=False)
        return {w.workflow_id: str(w.status) for w in found}
    finally:
        engine.close()


def _without_id(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "run_id"}


@pytest.mark.parametrize(
    ("pipeline", "values", "interpret"),
    [
        ("stateless", list(range(1, 9)), False),
        ("stateful", [1, 2, 3, 4, 5], False),
        ("stateful", [1, 2, 3, 4, 5], True),
        ("failing", list(range(1, 13)), False),
        ("nested", [1, 2, 3], True),
        ("timed", [1, 2, 3, 4, 5, 6], False),
    ],
)
def test_elements_on_queues_give_the_in_process_outcome(postgres_url: str, pipeline: str, values: list[int],
                                                         interpret: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCEC_PACE", "0.01")
    monkeypatch.syspath_prepend(str(ROOT))
    tag = f"{pipeline}-{'i' if interpret else 'c'}-{time.monotonic_ns()}"
    inline = durable.run(SPEC, pipeline, json.dumps(values), db=postgres_url, run_id=f"inline-{tag}", interpret=interpret)
    queued = durable.run(SPEC, pipeline, json.dumps(values), db=postgres_url, run_id=f"queued-{tag}",
                         interpret=interpret, elements=True)
    assert _without_id(queued) == _without_id(inline)
    assert _elements(postgres_url, f"inline-{tag}") == {}  # a run started in-process keeps its elements
    handed = _elements(postgres_url, f"queued-{tag}")
    groups = 2 if pipeline == "nested" else 1
    if pipeline == "failing":
        # fail-fast: the refused element (7, which waits until 8 has started) ends the group; the
        # elements in flight then (8 at least: those above 7 take 30 s) are cancelled, those after
        # them never handed out
        assert inline["ok"] is False and inline["error"]["type"] == "Refused"
        assert queued["error"]["site"] == inline["error"]["site"]
        # an element's id is RUN/0.INDEX/0 (docs/language.md §13): the elements past 7 are INDEX >= 7
        past = {element: status for element, status in handed.items()
                if int(element.split("/")[-2].rsplit(".", 1)[-1]) >= 7}
        assert past and set(past.values()) == {"CANCELLED"} and len(handed) < len(values), handed
        assert "PENDING" not in handed.values() and "ENQUEUED" not in handed.values()
    elif pipeline == "timed":
        # the run's timeout fires before the elements are done (6 of 0.25 s, 2 at once, in 0.4 s):
        # those in flight are cancelled (or finished just before the run read them: on a loaded
        # machine both of the first two can end inside the poll that sees the timeout), the rest are
        # never handed out, and the catch gives []
        assert inline == {**inline, "ok": True, "value": []}
        assert set(handed.values()) <= {"CANCELLED", "SUCCESS"} and len(handed) < len(values)
        assert "PENDING" not in handed.values() and "ENQUEUED" not in handed.values()
    else:
        assert inline["ok"] is True
        assert len(handed) == len(values) * groups and set(handed.values()) == {"SUCCESS"}
    # the run recorded each element's outcome as an effect of its own (what a resumed run replays)
    effects = durable.show(f"queued-{tag}", db=postgres_url)["effects"]
    if pipeline == "timed":
        # and the timeout that ended it; an element that finished before the timeout fired (how
        # many do depends on the machine's speed) is recorded too, and only one that succeeded
        kinds = [e["kind"] for e in effects]
        assert kinds.count("timeout") == 1 and set(kinds) <= {"timeout", "element"}, kinds
        succeeded = {int(element.split("/")[-2].rsplit(".", 1)[-1])
                     for element, status in handed.items() if status == "SUCCESS"}
        # an element effect's key is INDEX/… under the group's 0.: "0.INDEX/…" (docs/language.md §13)
        recorded = {int(e["key"].split("/")[0].rsplit(".", 1)[-1]) for e in effects if e["kind"] == "element"}
        assert recorded <= succeeded, (recorded, handed)
    else:
        assert {e["kind"] for e in effects} == {"element"}


def test_a_resumed_run_replays_its_elements(postgres_url: str, tmp_path: Path) -> None:
    """A run cancelled mid-way (the elements in flight complete and are recorded, no other is
    handed out) and resumed: the elements it recorded are replayed, not handed out again; the
    others run, and the Outcome is the in-process run's. Each element takes 2 s, so the cancel
    lands while the third of the four rounds of `each(limit=3)` runs."""
    values = list(range(1, 13))
    reference = durable.run(SPEC, "stateful", json.dumps(values), db=postgres_url, run_id=f"ref-{time.monotonic_ns()}")
    run_id = f"resumed-{time.monotonic_ns()}"
    effects = tmp_path / "effects.txt"
    env = dict(os.environ, MCEC_EFFECTS=str(effects), MCEC_PACE="2.0", PYTHONPATH=str(ROOT))
    script = (f"from mcec import durable; durable.run({str(SPEC)!r}, 'stateful', {json.dumps(values)!r}, "
              f"db={postgres_url!r}, run_id={run_id!r}, elements=True)")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while len(_lines(effects)) < 4 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    durable.cancel(run_id, db=postgres_url)  # the run stops before its next effect: no element handed out after
    process.communicate(timeout=60)
    recorded = {e["key"] for e in durable.show(run_id, db=postgres_url)["effects"] if e["kind"] == "element"}
    ran_before = Counter(_lines(effects))
    assert recorded and len(recorded) < len(values), recorded
    os.environ["MCEC_EFFECTS"] = str(effects)
    try:
        again = durable.resume(run_id, db=postgres_url)
    finally:
        del os.environ["MCEC_EFFECTS"]
    assert _without_id(again) == _without_id(reference)
    ran = Counter(_lines(effects))
    assert set(ran) == {f"note {n}" for n in values}
    # an element whose outcome the run recorded before the cancel did not run again
    replayed = {f"note {values[int(key.split('/')[0].split('.')[1])]}" for key in recorded}
    assert all(ran[line] == ran_before[line] == 1 for line in replayed), (replayed, ran)
    statuses = _elements(postgres_url, run_id)
    assert any("#" in element for element in statuses) or len(statuses) == len(values)


def _lines(path: Path) -> list[str]:
    """The effect lines of ``path`` without their pid."""
    return [line.split(" ", 1)[1] for line in path.read_text().splitlines()] if path.exists() else []


# ----------------------------------------------------------------------------- across workers


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(MCEC_EFFECTS=str(tmp / "effects.txt"), MCEC_ELEMENT_LOG=str(tmp / "elements.jsonl"), MCEC_PACE="0.02",
               PYTHONPATH=str(ROOT))
    env.pop("MCEC_DB", None)
    return env


def _log(tmp: Path) -> list[dict[str, Any]]:
    path = tmp / "elements.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line] if path.exists() else []


def test_a_batch_spread_over_three_workers_survives_one_killed(postgres_url: str, tmp_path: Path) -> None:
    from mcec.durable.queues import enqueue, result

    values = list(range(60))
    reference = durable.run(SPEC, "batch", json.dumps(values), db=postgres_url, run_id=f"reference-{time.monotonic_ns()}")
    env = _env(tmp_path)
    workers = [subprocess.Popen([sys.executable, "-m", "mcec", "worker", str(SPEC), "--db", postgres_url,
                                 "--poll-seconds", "0.05", "--heartbeat-seconds", "0.5", "--stale-after", "4"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
               for _ in range(3)]
    try:
        run_id = f"batch-{time.monotonic_ns()}"
        enqueued = enqueue(str(SPEC), "batch", json.dumps(values), run_id=run_id, db=postgres_url)
        assert enqueued["status"] == "enqueued"
        # kill a worker that has run elements, once a fifth of the elements have ended
        deadline = time.monotonic() + 60
        while sum(e["event"] == "ended" for e in _log(tmp_path)) < 12 and time.monotonic() < deadline:
            time.sleep(0.02)
        log = _log(tmp_path)
        busy = Counter(e["pid"] for e in log if e["event"] == "started")
        victim = next((w for w in workers if w.pid in busy), None)
        assert victim is not None, "no worker ran an element"
        victim.send_signal(signal.SIGKILL)
        ended_before = {e["index"][-1] for e in log if e["event"] == "ended"}
        outcome = result(run_id, db=postgres_url, timeout=90)
        assert outcome is not None, "the run did not end"
        assert _without_id(outcome) == _without_id(reference)
        log = _log(tmp_path)
        pids = {e["pid"] for e in log if e["event"] == "ended"}
        assert len(pids) >= 2, f"the elements ran on {len(pids)} worker(s)"
        runs = Counter(int(line.split()[2]) for line in (tmp_path / "effects.txt").read_text().splitlines())
        assert set(runs) == set(values)  # every element ran
        twice = {n for n, count in runs.items() if count > 1}
        assert not twice & ended_before, f"elements completed before the kill ran again: {sorted(twice & ended_before)}"
    finally:
        for w in workers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                w.kill()
                w.communicate()


def test_an_element_run_on_a_queue_waits_for_a_person_as_one_run_here_does(postgres_url: str, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/language.md "`each` over workers": an element that asks stops its workflow (resumable) and
    the run waits on its question as its own — every question of the batch open at once, whatever the
    limit — answered by index as in a run that keeps its elements; a bad answer is refused and the
    question stays open; each element's work ran once, and the Outcome is the in-process run's."""
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("MCEC_EFFECTS", str(effects))
    monkeypatch.syspath_prepend(str(ROOT))
    values = [1, 2, 3]
    tag = time.monotonic_ns()
    ended: dict[str, dict[str, Any]] = {}
    for how, elements in (("inline", False), ("queued", True)):
        run_id = f"{how}-asking-{tag}"
        waiting = durable.run(SPEC, "asking", json.dumps(values), db=postgres_url, run_id=run_id, elements=elements)
        assert waiting["status"] == "waiting", waiting
        asked = sorted((q["name"], q["index"], q["question"]) for q in waiting["questions"])
        assert asked == [("keep", [0], 10), ("keep", [1], 20), ("keep", [2], 30)], (how, asked)
        with pytest.raises(durable.DurableError, match="bad answer to keep"):
            durable.answer(run_id, "keep", '"all"', index=[1], db=postgres_url)
        for i, left in ((2, [[0], [1]]), (0, [[1]])):
            still = durable.answer(run_id, "keep", str(values[i] * 3), index=[i], db=postgres_url)
            assert still["status"] == "waiting" and sorted(q["index"] for q in still["questions"]) == left, (how, still)
        ended[how] = durable.answer(run_id, "keep", "6", index=[1], db=postgres_url)
    assert ended["inline"]["ok"] is True and ended["inline"]["value"] == [3, 6, 9]
    assert _without_id(ended["queued"]) == _without_id(ended["inline"])
    assert set(_elements(postgres_url, f"queued-asking-{tag}").values()) == {"SUCCESS"}
    assert Counter(_lines(effects)) == Counter({f"work {n}": 2 for n in values})  # once per run, not per answer


def test_a_workers_element_asks_and_the_answer_from_another_process_sends_it_on(postgres_url: str,
                                                                                tmp_path: Path) -> None:
    """Across processes: a run enqueued for a `mcec worker` hands its elements to it; each asks, so
    the run waits with the three questions; `mcec runs answer` in processes of their own answers
    them, and the worker — not the answering process — takes each answered element up again."""
    from mcec.durable.queues import enqueue

    env = _env(tmp_path)
    worker = subprocess.Popen([sys.executable, "-m", "mcec", "worker", str(SPEC), "--db", postgres_url,
                               "--poll-seconds", "0.05", "--heartbeat-seconds", "0.5", "--stale-after", "4"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)

    def mcec(*args: str) -> subprocess.CompletedProcess[str]:  # a process of its own (forked warm)
        return shared_zygote().run([*args, "--db", postgres_url], tmp_path, environ=env)

    try:
        run_id = f"asked-{time.monotonic_ns()}"
        assert enqueue(str(SPEC), "asking", "[1, 2, 3]", run_id=run_id, db=postgres_url)["status"] == "enqueued"
        deadline = time.monotonic() + 90
        questions: list[dict[str, Any]] = []
        while len(questions) < 3 and time.monotonic() < deadline:
            listed = mcec("runs", "waiting", "--format", "json")
            questions = [q for q in json.loads(listed.stdout or "[]") if q["run_id"] == run_id]
            time.sleep(0.2)
        assert sorted(q["index"] for q in questions) == [[0], [1], [2]], (questions, worker.poll())
        for i, kept in ((0, 3), (1, 6)):
            answered = mcec("runs", "answer", run_id, "keep", "--value", str(kept), "--index", str(i))
            assert answered.returncode == 0 and json.loads(answered.stdout)["status"] == "waiting", answered.stderr
        done = mcec("runs", "answer", run_id, "keep", "--value", "9", "--index", "2")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["value"] == [3, 6, 9]
        log = _log(tmp_path)
        assert {e["pid"] for e in log} == {worker.pid}, log  # every element ran (and went on) on the worker
        assert sum(e["event"] == "waiting" for e in log) == 3 and sum(e["event"] == "ended" for e in log) == 3
        work = Counter(line.split(" ", 1)[1] for line in (tmp_path / "effects.txt").read_text().splitlines())
        assert work == Counter({"work 1": 1, "work 2": 1, "work 3": 1})
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        try:
            worker.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.communicate()
