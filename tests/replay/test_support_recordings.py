"""examples/support's recorded runs, one per ticket (issue 45, item 3): made by the README's ``mcec eval
… --record examples/support/recordings`` with the example's scripted writer, and replayed here, each
through the pytest plugin's own replay (``replay_recording``, what a ``pytest --mce`` item runs), so
the suite fails when a recording goes stale: the spec or its code changed before a recorded effect,
or the run no longer gives the recorded Outcome. The plugin also collects the folder as 20 tests."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcec.integrations.pytest_plugin import ReplayFailed, replay_recording
from pytest_runs import QUIET

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "examples" / "support" / "recordings"
RECORDINGS = sorted(FOLDER.glob("*.mcerun.json"))
TICKETS = [f"T-{n}" for n in range(1001, 1021)]


def test_there_is_a_recording_per_ticket() -> None:
    assert [p.name for p in RECORDINGS] == [f"{ticket}.mcerun.json" for ticket in TICKETS]
    tickets = [json.loads(line)["name"] for line in (ROOT / "examples/support/tickets.jsonl").read_text().splitlines()]
    assert tickets == TICKETS


@pytest.mark.parametrize("recording", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_each_support_recording_replays_with_its_outcome(recording: Path) -> None:
    replay_recording(recording, ROOT)


EDITED = """\
from examples.support.desk import Ticket
from examples.support.replies import Answer

model writer = openai "gpt-4o-mini" (temperature=0)

llm triage : Ticket -> Answer = writer \"\"\"Sort ticket {{ id }}.\"\"\"

pipeline respond : Ticket -> Answer ! LLMFailed | LLMUnavailable = triage;
"""


def test_a_recording_of_a_spec_edited_before_its_effect_fails_at_the_spec_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reply.mce with its model step renamed (the run asks the model `triage` where the recording
    holds `draft`): the replay fails with MCE040 at that line, not with a pass."""
    monkeypatch.syspath_prepend(str(ROOT))  # the edited spec imports the example's classes
    spec = tmp_path / "reply.mce"
    spec.write_text(EDITED, encoding="utf-8")
    data = json.loads((FOLDER / "T-1001.mcerun.json").read_text(encoding="utf-8"))
    data["spec"]["path"] = str(spec)
    stale = tmp_path / "T-1001.mcerun.json"
    stale.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReplayFailed) as failed:
        replay_recording(stale, ROOT)
    text = str(failed.value)
    assert "MCE040" in text and "reply.mce:8:" in text, text
    assert re.search(r"the recording holds the model `draft` at reply\.mce:\d+:\d+ \(effect 0\)", text), text


def test_a_recording_whose_outcome_is_no_longer_given_fails(tmp_path: Path) -> None:
    data = json.loads((FOLDER / "T-1002.mcerun.json").read_text(encoding="utf-8"))
    data["outcome"]["ok"]["decision"] = "refund"  # the recorded answer says escalate
    stale = tmp_path / "T-1002.mcerun.json"  # its spec, examples/support/reply.mce, found from the rootdir
    stale.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ReplayFailed, match="the replay's Outcome is not the recorded one"):
        replay_recording(stale, ROOT)


def test_the_plugin_collects_the_folder_one_test_per_ticket() -> None:
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *QUIET, "--mce", "--collect-only",
                          "-q", "--rootdir", str(FOLDER), "-c", "/dev/null", str(FOLDER)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    collected = [line for line in run.stdout.splitlines() if "::" in line]
    assert collected == [f"{ticket}.mcerun.json::{ticket}.mcerun.json" for ticket in TICKETS], run.stdout
