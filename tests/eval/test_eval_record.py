"""``mcec eval … --record DIR`` (issue 45, item 1; docs/language.md §17): the eval's own runs
recorded, one ``*.mcerun.json`` a run named by its case (``<case>.<k>`` with ``--repeat``), each
the run it is named for even when runs go at once, and each replayed offline by ``mcec replay``
and by the pytest plugin with the same Outcome. A resumed eval records the runs it runs, and says
which it did not. Real ``mcec eval`` subprocesses over examples/support with its scripted models."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_runs import QUIET

ROOT = Path(__file__).resolve().parent.parent.parent
TICKETS = [f"T-{n}" for n in range(1001, 1021)]
EVAL = [
    "eval", "examples/support/reply.mce", "respond", "examples/support/tickets.jsonl",
    "--evaluator", "examples.support.replies:decision_matches", "--judge", "examples/support/judge.mce:judge",
    "--model", "writer=py:examples.support.writer:draft", "--model", "grader=py:examples.support.judge:grade",
]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SUPPORT_"))}
    env.update(NO_COLOR="1", SUPPORT_MODEL_LOG=str(tmp_path / "requests.log"))
    return env


def _mcec(tmp_path: Path, *args: str, module: str = "mcec") -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _asked(tmp_path: Path) -> list[str]:
    """The scripted models' requests so far (a line each)."""
    log = tmp_path / "requests.log"
    return log.read_text(encoding="utf-8").splitlines() if log.is_file() else []


def test_a_repeated_concurrent_eval_records_each_run_to_its_own_file_and_each_replays_offline(tmp_path: Path) -> None:
    recordings = tmp_path / "recordings"
    done = _mcec(tmp_path, *EVAL, "--repeat", "2", "--concurrency", "4", "--out", str(tmp_path / "report"),
                 "--record", str(recordings))
    assert done.returncode == 0, done.stderr
    assert f"mcec eval: recorded 40 runs in {recordings}" in done.stderr
    assert sorted(p.name for p in recordings.iterdir()) == sorted(
        f"{ticket}.{k}.mcerun.json" for ticket in TICKETS for k in (1, 2)
    )
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    outputs = {(case["name"], run["repeat"]): run["output"] for case in report["cases"] for run in case["runs"]}
    recorded: dict[tuple[str, int], Any] = {}
    for ticket in TICKETS:
        for k in (1, 2):
            data = json.loads((recordings / f"{ticket}.{k}.mcerun.json").read_text(encoding="utf-8"))
            assert data["input"]["id"] == ticket and data["pipeline"] == "respond"
            assert data["spec"]["path"] == "examples/support/reply.mce"
            assert [e["kind"] for e in data["effects"]] == ["model"]  # the writer's answer; the judge is not the run's
            recorded[ticket, k] = data["outcome"]["ok"]
    # each file holds the run the report shows under its name (4 at once did not mix them up) ...
    assert recorded == outputs
    # ... and the scripted writer wavers on T-1007 (refund, then escalate): its two runs are two files
    assert {recorded["T-1007", 1]["decision"], recorded["T-1007", 2]["decision"]} == {"refund", "escalate"}

    (tmp_path / "requests.log").unlink()
    for name in ("T-1007.1", "T-1007.2", "T-1008.1", "T-1008.2"):
        replay = _mcec(tmp_path, "replay", str(recordings / f"{name}.mcerun.json"))
        assert replay.returncode == 0, replay.stderr
        replayed = json.loads(replay.stdout)
        assert (replayed["replayed"], replayed["performed"], replayed["same_outcome"]) == (1, 0, True)
        ticket, k = name.split(".")
        assert replayed["outcome"]["ok"] == outputs[ticket, int(k)]
    # the whole folder, replayed by the pytest plugin: one passing test a file
    run = _mcec(tmp_path, "-p", "no:cacheprovider", *QUIET, "--mce", "--rootdir", str(tmp_path), "-q",
                str(recordings), module="pytest")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "40 passed" in run.stdout, run.stdout
    assert _asked(tmp_path) == []  # offline: no model was asked


def test_a_resumed_eval_records_the_runs_it_runs_and_says_which_it_did_not(tmp_path: Path) -> None:
    dataset = tmp_path / "tickets.jsonl"
    lines = (ROOT / "examples" / "support" / "tickets.jsonl").read_text(encoding="utf-8").splitlines()
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = [*EVAL, "--out", str(tmp_path / "report")]
    argv[argv.index("examples/support/tickets.jsonl")] = str(dataset)
    assert _mcec(tmp_path, *argv).returncode == 0
    lines[2] = lines[2].replace('"wrong size"', '"the wrong size"')  # T-1003: its run is no longer stored
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    recordings = tmp_path / "recordings"
    done = _mcec(tmp_path, *argv, "--record", str(recordings))
    assert done.returncode == 0, done.stderr
    assert [p.name for p in recordings.iterdir()] == ["T-1003.mcerun.json"]
    assert (f"mcec eval: recorded 1 run in {recordings}; 19 read back from the results file were not run, "
            "so not recorded (--fresh runs and records every case)") in done.stderr
    data = json.loads((recordings / "T-1003.mcerun.json").read_text(encoding="utf-8"))
    assert data["input"]["reason"] == "the wrong size"
    replay = _mcec(tmp_path, "replay", str(recordings / "T-1003.mcerun.json"))
    assert replay.returncode == 0 and json.loads(replay.stdout)["same_outcome"] is True, replay.stderr


def test_record_into_a_file_or_with_two_cases_of_one_file_name_is_a_usage_error(tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("", encoding="utf-8")
    done = _mcec(tmp_path, *EVAL, "--out", str(tmp_path / "report"), "--record", str(taken))
    assert done.returncode == 2 and done.stderr.startswith(f"mcec eval: --record {taken}: "), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr

    first = (ROOT / "examples" / "support" / "tickets.jsonl").read_text(encoding="utf-8").splitlines()[0]
    dataset = tmp_path / "clash.jsonl"
    dataset.write_text("\n".join(first.replace('"name": "T-1001"', f'"name": "{name}"', 1) for name in ("a/b", "a b"))
                       + "\n", encoding="utf-8")
    argv = [*EVAL, "--out", str(tmp_path / "report"), "--record", str(tmp_path / "recordings")]
    argv[argv.index("examples/support/tickets.jsonl")] = str(dataset)
    done = _mcec(tmp_path, *argv)
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("mcec eval: --record: the cases `a/b` and `a b` would both be recorded as a_b.mcerun.json; "
                           "give them names that differ in letters or digits\n")
    assert _asked(tmp_path) == []


def _readme_record() -> list[str]:
    """The README's command that made examples/support/recordings, as written (after ``-m mcec``)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Evaluating an agent", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    [line] = [ln for block in blocks for ln in block.replace("\\\n", " ").splitlines() if "--record" in ln]
    argv = shlex.split(line)
    assert argv[:3] == ["python3", "-m", "mcec"], line
    return argv[3:]


def test_the_committed_support_recordings_are_what_the_readme_command_records(tmp_path: Path) -> None:
    argv = _readme_record()
    assert argv[argv.index("--record") + 1] == "examples/support/recordings"
    argv[argv.index("--record") + 1] = str(tmp_path / "recordings")
    done = _mcec(tmp_path, *argv, "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    committed = ROOT / "examples" / "support" / "recordings"
    made = sorted(p.name for p in (tmp_path / "recordings").iterdir())
    assert made == sorted(p.name for p in committed.iterdir()) == [f"{t}.mcerun.json" for t in TICKETS]
    for name in made:  # byte for byte: record them again with that command if this fails on purpose
        assert (tmp_path / "recordings" / name).read_text(encoding="utf-8") == (committed / name).read_text(
            encoding="utf-8"), name
