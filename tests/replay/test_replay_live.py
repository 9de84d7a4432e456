"""``mcec replay --live-models`` and ``--only-tools`` (docs/language.md §17): the model calls (or
the steps and the model calls) run for real, each result that differs from the recorded one is
shown, and the Outcome decides; the rest is answered from the recording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLANNER = "planner=py:examples.research.planner:plan"


@pytest.fixture
def recording(tmp_path: Path, mcec_in_process: Any) -> Path:
    path = tmp_path / "react.mcerun.json"
    done = mcec_in_process("run", "examples/research/research.mce", "react", "--input", '"what is a monad and 2 plus 40"',
                           "--model", PLANNER, "--record", str(path), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return path


def test_live_models_call_the_models_again_and_agree(recording: Path, mcec_in_process: Any) -> None:
    done = mcec_in_process("replay", str(recording), "--live-models", cwd=ROOT)  # the recorded --model options
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["performed"] == 3 and result["replayed"] == 5 and result["same_outcome"] is True
    assert "another result" not in done.stderr


def test_live_models_that_answer_otherwise_show_each_difference_and_the_outcome_decides(
    recording: Path, mcec_in_process: Any
) -> None:
    # `test`: made-up valid answers; the first decision is recorded as a search, and is an addition now,
    # so the run then asks for the addition tool where the recording holds the search
    done = mcec_in_process("replay", str(recording), "--live-models", "--model", "planner=test", cwd=ROOT)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "mcec replay: effect 1 (model at research.mce:56:77 (decide)) gave another result than recorded" in done.stderr
    assert "recorded: {'ok': {'query': 'what is a monad'}" in done.stderr
    assert ("error[MCE040]: the replay asks for `add_numbers` here, where the recording holds the tool `search_facts` "
            "at research.mce:58:39 (effect 3)") in done.stderr


def test_only_tools_runs_the_steps_and_models_and_answers_the_tools(recording: Path, mcec_in_process: Any) -> None:
    data = json.loads(recording.read_text())
    tools = [e for e in data["effects"] if e["kind"] == "tool"]
    done = mcec_in_process("replay", str(recording), "--only-tools", cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["replayed"] == len(tools) == 2 and result["performed"] == len(data["effects"]) - 2
    assert result["outcome"] == data["outcome"]
