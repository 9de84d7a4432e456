"""A recording of each shipped example's run replays offline with the same Outcome (docs/language.md
§17): ``mcec run … --record FILE`` with the scripted models and the real MCP server the examples
use, then ``mcec replay FILE`` with no model configured, the OpenAI endpoint pointing at a closed
port: every effect is answered from the file, none runs (``performed`` 0), and a model call or a
tool call would have failed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (example, folder to run in, spec, pipeline, input, --model options, what the person answers on stdin)
RUNS: dict[str, tuple[str, str, str, str, list[str], str]] = {
    "research react": (".", "examples/research/research.mce", "react", '"what is a monad and 2 plus 40"',
                       ["planner=py:examples.research.planner:plan"], ""),
    "research answer (MCP)": (".", "examples/research/research.mce", "answer_all", '["what is mcp", "2 plus 40"]', [], ""),
    "briefing": (".", "examples/briefing/briefing.mce", "summarized_briefing", '{"city": "Oslo"}',
                 ["writer=py:examples.briefing.writer:summarize"], ""),
    "meta": (".", "examples/meta/meta.mce", "solve", '{"goal": "monads and agents"}',
             ["planner=py:examples.meta.planner:plan", "writer=py:examples.meta.writer:synthesize"], ""),
    "support (asks a person)": (".", "examples/support/support.mce", "handle",
                                '{"id": "T-2", "customer": "bo", "amount": 250, "reason": "broken"}', [],
                                '{"approve": true, "note": "ok"}\n'),
    "batch": (".", "examples/batch/batch.mce", "extract_all", (ROOT / "examples/batch/docs.json").read_text(),
              ["extractor=py:examples.batch.extractor:extract"], ""),
    "project": ("examples/project", "greeter/greet.mce", "hello", '"  ada "', [], ""),
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _mcec(args: list[str], cwd: Path, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcec", *args], cwd=cwd, capture_output=True, text=True,
                          input=stdin, timeout=180, env=env)


@pytest.mark.parametrize("name", list(RUNS))
def test_a_recording_of_each_example_replays_offline_with_the_same_outcome(name: str, tmp_path: Path) -> None:
    folder, spec, pipeline, value, models, answers = RUNS[name]
    cwd = ROOT / folder
    ledger = tmp_path / "ledger.txt"  # where the support desk pays refunds (examples/support/desk.py)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}, "SUPPORT_LEDGER": str(ledger)}
    recording = tmp_path / f"{name.split()[0]}.mcerun.json"
    options = [o for m in models for o in ("--model", m)]
    ran = _mcec(["run", spec, pipeline, "--input", value, *options, "--record", str(recording)], cwd, env, answers)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads(ran.stdout)
    data = json.loads(recording.read_text())
    assert data["version"] == 1 and data["pipeline"] == pipeline and data["effects"]
    assert data["outcome"]["ok"] is not None and "err" not in data["outcome"]

    offline = {**env, "OPENAI_BASE_URL": f"http://127.0.0.1:{_closed_port()}/v1", "OPENAI_API_KEY": "sk-nothing-here"}
    replayed = _mcec(["replay", str(recording)], cwd, offline)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    result = json.loads(replayed.stdout)
    assert result["same_outcome"] is True and result["performed"] == 0
    assert result["outcome"] == data["outcome"]
    assert result["outcome"]["ok"] == report["value"]  # the value `mcec run` printed, as recorded
    paid = ledger.read_text().splitlines() if ledger.exists() else []
    assert paid == (["T-2 paid 250.00 to bo"] if name.startswith("support") else [])  # the recorded run paid; the replay did not
    # the other runner replays the same recording too (the effects are the same, docs/language.md §7)
    again = _mcec(["replay", str(recording), "--interpret"], cwd, offline)
    assert again.returncode == 0 and json.loads(again.stdout)["outcome"] == data["outcome"], again.stdout + again.stderr
    assert (ledger.read_text().splitlines() if ledger.exists() else []) == paid
