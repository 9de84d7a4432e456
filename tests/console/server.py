"""A real ``mcec console`` for the tests: the command itself, as a subprocess (uvicorn), on a free
port it picks (``--port 0``) and prints; stopped (SIGINT, then killed) when the test is done."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The support example (examples/support/support.mce): its `approve` asks a person.
SUPPORT = ROOT / "examples" / "support" / "support.mce"


@dataclass(frozen=True)
class Console:
    """A running console: its base URL (``http://127.0.0.1:PORT``) and its process."""

    url: str
    process: subprocess.Popen[str]


def console_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a console process: the checkout importable (the support example's
    modules; a resumed run imports them), no token from the caller's environment."""
    env = {k: v for k, v in os.environ.items() if k != "MCEC_CONSOLE_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra or {})
    return env


@contextmanager
def console(db: str, cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> Iterator[Console]:
    """``mcec console --db DB --port 0 ARGS…`` running in ``cwd`` until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mcec", "console", "--db", db, "--port", "0", *args],
        cwd=cwd, env=console_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"on (http://[^/\s]+)/", line)
        if found is None:
            process.kill()
            _, err = process.communicate(timeout=30)
            raise AssertionError(f"mcec console did not start: {line!r} {err!r}")
        url = found.group(1).replace("0.0.0.0", "127.0.0.1")
        _until_serving(url)
        yield Console(url, process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _until_serving(url: str) -> None:
    """Wait until the console answers (its socket listens before it prints; uvicorn serves just after)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/static/console.css", timeout=10).close()
            return
        except urllib.error.HTTPError:
            return  # it answers (a token is needed, say)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
