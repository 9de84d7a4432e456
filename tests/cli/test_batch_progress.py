"""The batch example shows its progress (issue 33): the README's ``mcec run examples/batch/…``
command on a terminal (a pseudo-terminal the test opens) draws the ``each``'s progress bar up to
40/40 while the scripted model answers, and prints the result alone on stdout."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BATCH = ROOT / "examples" / "batch"


def _on_a_terminal(argv: list[str], **env: str) -> tuple[int, str, str]:
    """Run ``mcec`` with stderr on a 100-column pseudo-terminal: its exit status, its stdout, and
    everything it drew on the terminal."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "PYTHONPATH": str(ROOT), **env}
    environment.pop("MCEC_DB", None)
    process = subprocess.Popen([sys.executable, "-m", "mcec", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=follower, text=True, env=environment)
    os.close(follower)
    drawn = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        assert ready, "no output from mcec run on the terminal"
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed: the process exited
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    out, _ = process.communicate(timeout=60)
    return process.returncode, out, drawn.decode("utf-8", "replace")


def test_the_batch_example_shows_the_each_progress_on_a_terminal() -> None:
    docs = (BATCH / "docs.json").read_text(encoding="utf-8")
    status, out, screen = _on_a_terminal(
        ["run", "examples/batch/batch.mce", "extract_all", "--input", docs,
         "--model", "extractor=py:examples.batch.extractor:extract"],
        BATCH_MODEL_DELAY="0.2",  # five rounds of eight answers, 0.2 s each: the bar is drawn climbing
    )
    assert status == 0, screen
    result = json.loads(out)
    assert result["ok"] and result["value"]["documents"] == 40, out
    assert "each (batch.mce:" in screen, screen  # the each's bar, named by its line
    counts = {n for n in range(41) if f"{n}/40" in screen}
    assert 40 in counts and len(counts) >= 3, screen  # it climbed, and was drawn complete
