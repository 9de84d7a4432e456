"""Running ``mcec`` with stderr on a pseudo-terminal, for the tests of what it draws there
(progress bars, the running step): rich draws only on a terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def on_a_terminal(argv: list[str], cwd: Path, **env: str) -> tuple[int, str, str]:
    """Run ``mcec ARGV`` in ``cwd`` with stderr on a 100-column pseudo-terminal (stdout a pipe):
    its exit status, its stdout, and everything it drew on the terminal."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "100", "PYTHONPATH": str(ROOT), **env}
    environment.pop("MCEC_DB", None)
    process = subprocess.Popen([sys.executable, "-m", "mcec", *argv], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=follower, text=True, env=environment)
    os.close(follower)
    drawn = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        assert ready, "no output from mcec on the terminal"
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
