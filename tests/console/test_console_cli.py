"""``mcec console``'s bad input (issue 46): one line on stderr, exit status 2, no traceback — a
database it cannot open (its password never shown), a port in use, a host beyond loopback with no
token, the ``mcec[console]`` extra missing."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.console.server import console_env


def mcec_console(*args: str, cwd: Path, env: dict[str, str] | None = None,
                 prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}import sys; from mcec.cli import main; sys.exit(main(['console', *sys.argv[1:]]))"
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=console_env(env), capture_output=True,
                          text=True, timeout=120)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_database_it_cannot_open(tmp_path: Path) -> None:
    line = one_line(mcec_console("--db", "postgresql://me:hunter2-secret@127.0.0.1:1/runs", cwd=tmp_path))
    assert line.startswith("mcec console: cannot open the run database postgresql://me@127.0.0.1:1/runs: ")
    assert "hunter2" not in line


def test_a_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        line = one_line(mcec_console("--db", f"sqlite:///{tmp_path / 'runs.sqlite'}", "--port", str(port), cwd=tmp_path))
    assert line == f"mcec console: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    line = one_line(mcec_console("--host", "0.0.0.0", cwd=tmp_path))
    assert line == "mcec console: --host 0.0.0.0 serves beyond this machine: give a token (--token or MCEC_CONSOLE_TOKEN)"
    assert not (tmp_path / ".mcec").exists()  # refused before anything was opened


def test_without_the_console_extra(tmp_path: Path) -> None:
    line = one_line(mcec_console(cwd=tmp_path, prelude="import sys; sys.modules['uvicorn'] = None; "))
    assert line == "mcec console: needs the console extra (uvicorn is missing): pip install 'mcec[console]'"
