"""``mcec`` as a subprocess for the durable-run tests: the environment the spec helpers read
(``MCEC_EFFECTS``: the file a step appends a line to per call; ``MCEC_PACE``: its pause), the
lines that file holds, and :class:`Zygote`, which forks ``mcec`` processes that start warm."""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def environment(**variables: str) -> dict[str, str]:
    """This environment, with the repository importable, ``variables`` set, and no ``MCEC_DB``
    (each test names its database)."""
    found = {**os.environ, "PYTHONPATH": str(ROOT), **variables}
    found.pop("MCEC_DB", None)
    return found


def env(effects: Path, pace: float = 0) -> dict[str, str]:
    """:func:`environment` with the effects file and the pace set."""
    return environment(MCEC_EFFECTS=str(effects), MCEC_PACE=str(pace))


def mcec_with(args: list[str], cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """``mcec ARGS`` in ``cwd``, in :func:`environment` with ``variables``: a process of its own,
    forked from this test process's :func:`shared_zygote` (it starts with the libraries imported);
    with ``MCEC_TESTS_FRESH=1`` in the tests' environment, started from nothing as a user's is."""
    if os.environ.get("MCEC_TESTS_FRESH") == "1":
        return fresh_mcec_with(args, cwd, **variables)
    return shared_zygote().run(args, cwd, environ=environment(**variables))


def fresh_mcec_with(args: list[str], cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """:func:`mcec_with` in a process started from nothing (``python -m mcec``): for what only a
    new interpreter shows."""
    return subprocess.run([sys.executable, "-m", "mcec", *args], capture_output=True, text=True, cwd=cwd,
                          env=environment(**variables), timeout=120)


def mcec(args: list[str], cwd: Path, effects: Path, pace: float = 0) -> subprocess.CompletedProcess[str]:
    """``mcec ARGS`` in ``cwd``, its steps noting their calls in ``effects`` (after ``pace`` seconds)."""
    return mcec_with(args, cwd, MCEC_EFFECTS=str(effects), MCEC_PACE=str(pace))


def lines(path: Path) -> list[str]:
    """The lines of ``path`` (none when it does not exist)."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def until(ready: Callable[[], bool], what: str, timeout: float = 60, every: float = 0.005) -> None:
    """Wait until ``ready()``, asking every ``every`` seconds; the test fails, saying ``what`` it
    waited for, after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(every)


class Child:
    """An ``mcec`` process forked by a :class:`Zygote`: its pid, and (once it ended) its exit
    status and output."""

    def __init__(self, ident: int, stdout: Path, stderr: Path) -> None:
        self.ident, self._stdout, self._stderr = ident, stdout, stderr
        self._pid: int | None = None
        self._status: int | None = None
        self._changed = threading.Condition()

    def _set(self, message: dict[str, int]) -> None:
        with self._changed:
            if "pid" in message:
                self._pid = message["pid"]
            if "status" in message:
                self._status = message["status"]
            self._changed.notify_all()

    @property
    def pid(self) -> int:
        """The child's process id (waits until it is forked)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._pid is not None, timeout=120):
                raise TimeoutError("the zygote forked no child")
            assert self._pid is not None
            return self._pid

    def poll(self) -> int | None:
        """The exit status once the child ended (minus the signal that ended it), else None."""
        return self._status

    def kill(self, how: signal.Signals = signal.SIGKILL) -> None:
        """Send ``how`` (SIGKILL unless told) to the child (it may have ended already)."""
        try:
            os.kill(self.pid, how)
        except ProcessLookupError:
            pass

    def stderr_so_far(self) -> str:
        """What the child wrote on stderr until now (it may still run: a worker's log)."""
        return self._stderr.read_text(encoding="utf-8") if self._stderr.exists() else ""

    def wait(self, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Wait for the child to end: its exit status and output, as ``subprocess.run`` gives them."""
        with self._changed:
            if not self._changed.wait_for(lambda: self._status is not None, timeout=timeout):
                raise TimeoutError(f"mcec child {self._pid} did not end within {timeout} s")
        assert self._status is not None
        return subprocess.CompletedProcess([], self._status, self._stdout.read_text(encoding="utf-8"),
                                           self._stderr.read_text(encoding="utf-8"))


class Zygote:
    """A warmed-up parent of ``mcec`` processes (:mod:`tests.durable.zygote`): each :meth:`start`
    forks one, a real process of its own that skips the imports and the compile of ``specs``."""

    def __init__(self, specs: list[Path], folder: Path) -> None:
        self._folder = folder
        self._process = subprocess.Popen([sys.executable, "-m", "tests.durable.zygote", *map(str, specs)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                                         env=environment())
        assert self._process.stdout is not None and self._process.stdin is not None
        ready = self._process.stdout.readline()
        if json.loads(ready or "{}").get("ready") is not True:
            self._process.kill()
            raise RuntimeError(f"the zygote did not start: {ready!r}")
        self._children: dict[int, Child] = {}
        self._lock = threading.Lock()
        self._count = itertools.count()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            message = json.loads(line)
            with self._lock:
                child = self._children[message["id"]]
            child._set(message)

    def start(self, args: list[str], cwd: Path, environ: dict[str, str] | None = None, **variables: str) -> Child:
        """Fork ``mcec ARGS`` in ``cwd`` with ``variables`` set in its environment (``environ``:
        the whole environment, which must keep :func:`environment`'s ``PYTHONPATH``: a fork keeps
        the zygote's import path)."""
        if environ is not None and environ.get("PYTHONPATH") != str(ROOT):
            raise ValueError("a forked mcec keeps the zygote's PYTHONPATH: use fresh_mcec_with")
        ident = next(self._count)
        out, err = self._folder / f"child-{ident}.out", self._folder / f"child-{ident}.err"
        child = Child(ident, out, err)
        with self._lock:
            self._children[ident] = child
            command = {"id": ident, "args": args, "cwd": str(cwd), "stdout": str(out), "stderr": str(err),
                       "env": {**(environ or {}), **variables}, "replace_env": environ is not None}
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(command) + "\n")
            self._process.stdin.flush()
        return child

    def run(self, args: list[str], cwd: Path, timeout: float = 120, environ: dict[str, str] | None = None,
            **variables: str) -> subprocess.CompletedProcess[str]:
        """``mcec ARGS`` in a forked child, waited for (``subprocess.TimeoutExpired`` after ``timeout``
        seconds, the child killed, as ``subprocess.run`` does)."""
        child = self.start(args, cwd, environ, **variables)
        try:
            return child.wait(timeout)
        except TimeoutError:
            child.kill()
            raise subprocess.TimeoutExpired(["mcec", *args], timeout) from None

    def close(self) -> None:
        """Stop forking: the zygote ends once its children have."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            self._process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


_shared: list[Zygote] = []
_shared_lock = threading.Lock()


def shared_zygote() -> Zygote:
    """This test process's zygote (no spec compiled: libraries imported), started when first
    needed and ended with the process."""
    with _shared_lock:
        if not _shared:
            folder = Path(tempfile.mkdtemp(prefix="mcec-zygote-"))
            _shared.append(Zygote([], folder))

            def end() -> None:
                _shared[0].close()
                shutil.rmtree(folder, ignore_errors=True)

            atexit.register(end)
        return _shared[0]
