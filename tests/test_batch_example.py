"""examples/batch, as the README shows it: a durable batch killed with SIGKILL mid-run and resumed
from the command line with the same --run-id, to the Outcome of an uninterrupted run (issue 31).

The model is the example's scripted one (examples/batch/extractor.py), slowed down and logging
each request (``start ID`` / ``end ID``) so the test can count how often each document was asked
about: a document whose extraction was recorded before the kill is never asked about again; only
those in flight at the kill (at most ``each``'s limit, 8) are asked twice.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = json.loads((ROOT / "examples" / "batch" / "docs.json").read_text(encoding="utf-8"))
#: How many extractions must have finished before the run is killed.
KILL_AFTER = 12


def _readme_run() -> list[str]:
    """The durable run command of the README's batch section, as written (its `$(cat …)` input
    given as the argument it expands to)."""
    section = README.read_text(encoding="utf-8").split("## Durable runs", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the README's durable-runs section lost its commands"
    joined = block.group(1).replace("\\\n", " ")
    line = next(ln for ln in joined.splitlines() if "--durable" in ln and "mcec run " in ln)
    line = line.split("#", 1)[0].replace('"$(cat examples/batch/docs.json)"', "DOCS")
    argv = shlex.split(line)
    assert argv[:3] == ["python3", "-m", "mcec"], line
    return [sys.executable, *[json.dumps(DOCS) if a == "DOCS" else a for a in argv[1:]]]


def _environment(tmp_path: Path, delay: float, log: str = "requests.log") -> dict[str, str]:
    """The run's environment: no endpoint or key, the model's delay and log, the run database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "MCEC_DB", "BATCH_"))}
    env.update(
        BATCH_MODEL_DELAY=str(delay),
        BATCH_MODEL_LOG=str(tmp_path / log),
        MCEC_DB=str(tmp_path / "runs.sqlite"),
        NO_COLOR="1",
    )
    return env


def _log(tmp_path: Path) -> list[tuple[str, str]]:
    path = tmp_path / "requests.log"
    if not path.is_file():
        return []
    return [(line.split()[0], line.split()[1]) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _in_process(argv: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``mcec ARGV`` in this process (cheaper than another interpreter), in ``env``: its JSON output."""
    from mcec.cli import main

    for key in [k for k in os.environ if k.startswith(("MCEC_DB", "BATCH_"))]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        if key.startswith(("MCEC_DB", "BATCH_")):
            monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    status = main(argv)
    printed = capsys.readouterr()
    assert status == 0, printed.err
    return json.loads(printed.out)


def test_the_batch_dies_and_resumes_to_the_same_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    command = _readme_run()
    run_id = command[command.index("--run-id") + 1]

    # the uninterrupted run (not durable, in this process): its Outcome is what the resumed run must give
    plain = [arg for arg in command[3:] if arg != "--durable"]
    plain = plain[: plain.index("--run-id")] + plain[plain.index("--run-id") + 2 :]
    expected = _in_process(plain, _environment(tmp_path, 0, "reference.log"), capsys, monkeypatch)
    assert expected["ok"] is True and expected["value"]["documents"] == len(DOCS)

    # the durable run, killed once KILL_AFTER extractions have finished
    running = subprocess.Popen(command, cwd=ROOT, env=_environment(tmp_path, 0.25), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while sum(1 for what, _ in _log(tmp_path) if what == "end") < KILL_AFTER:
        assert running.poll() is None, running.communicate()
        assert time.monotonic() < deadline, "the batch never got going"
        time.sleep(0.05)
    running.send_signal(signal.SIGKILL)
    running.wait(timeout=30)
    assert running.returncode == -signal.SIGKILL
    before = _log(tmp_path)

    # what the run recorded: one `each` element per document, by its index
    record = _in_process(["runs", "show", run_id, "--format", "json"], _environment(tmp_path, 0), capsys, monkeypatch)
    assert record["status"] == "running"  # interrupted: not finished, not failed
    recorded = {DOCS[int(e["key"].split("/")[0].split(".")[1])]["id"] for e in record["effects"] if e["step"] == "extract"}
    assert len(recorded) >= KILL_AFTER - 8  # the journal kept up with the model (at most `limit` in flight)
    assert len(recorded) < len(DOCS)

    # the same command again resumes the run
    resumed = subprocess.run(command, cwd=ROOT, env=_environment(tmp_path, 0), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert outcome.pop("run_id") == run_id
    assert outcome == expected

    after = _log(tmp_path)[len(before) :]
    asked_again = Counter(doc for what, doc in after if what == "start")
    # exactly the documents not recorded are asked about, once each; none recorded is asked again
    assert set(asked_again) == {d["id"] for d in DOCS} - recorded
    assert set(asked_again.values()) == {1}
    asked = Counter(doc for what, doc in _log(tmp_path) if what == "start")
    assert all(asked[doc] == 1 for doc in recorded)  # every recorded document was extracted once
    assert sum(n - 1 for n in asked.values()) <= 8  # only those in flight at the kill ran twice
