"""A warmed-up parent for the durable-run tests' ``mcec`` processes (run by :class:`tests.durable.
processes.Zygote`): ``python -m tests.durable.zygote SPEC…`` imports mcec and DBOS, checks and
compiles each SPEC and executes its module, once; then, for each command it reads, forks a child
that runs ``mcec ARGS`` as a process of its own.

A child is a real process — its own DBOS launch, its own database connections, its own run lock,
killed by SIGKILL like any other — that starts where every ``mcec`` process of a durable test
spent 2–3 s of its CPU: importing the compiler and DBOS and compiling the spec (the fork keeps
what :mod:`mcec.durable` compiled and executed, by the spec's text, so a child whose spec is
unchanged compiles nothing). That is what lets the kill-point and race properties run enough
examples in CI to find a one-in-ten race. Nothing here opens a database or starts a thread
before a fork: a child inherits no connection and no lock.

Protocol, one JSON object per line. In: ``{"id", "args", "cwd", "env", "replace_env", "stdout",
"stderr"}`` (the child's environment is the zygote's updated with ``env``, or ``env`` alone with
``replace_env``; its output goes to the two files). Out: ``{"id", "pid"}`` once the child is
forked, ``{"id", "status"}`` once it has ended (its exit status, or minus the signal that ended it).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import select
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, NoReturn


def _warm(specs: list[str]) -> None:
    """Import what an ``mcec`` process imports (libraries only: nothing that registers itself, as
    :mod:`mcec.durable` does with the runtime, and none of the user's modules), and compile each
    spec as its durable run will."""
    import agentmonad.durable.dbos  # noqa: F401  (DBOS and SQLAlchemy: most of the import time)
    import mcec.check  # noqa: F401
    import mcec.cli  # noqa: F401
    import mcec.codegen  # noqa: F401
    import mcec.compiler  # noqa: F401

    if specs:
        from mcec.durable import _version

        for spec in specs:
            _version(spec, interpret=False)


def _child(command: dict[str, Any]) -> NoReturn:
    """In the forked child: become ``python -m mcec ARGS`` in the command's folder, environment and
    files, and end as that process ends (:func:`_end`)."""
    for fd, name in ((1, "stdout"), (2, "stderr")):
        target = os.open(str(command[name]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # new stream objects over the new descriptors (the parent's may hold a lock mid-write)
    sys.stdout = sys.__stdout__ = open(1, "w", encoding="utf-8", closefd=False)
    sys.stderr = sys.__stderr__ = open(2, "w", encoding="utf-8", closefd=False)
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)
    cwd = str(command["cwd"])
    os.chdir(cwd)
    if command.get("replace_env"):
        os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in command["env"].items()})
    sys.path[0] = cwd  # what `python -m` puts first: the folder it started in
    try:
        import mcec.cli

        sys.argv = [str(Path(mcec.cli.__file__).with_name("__main__.py")), *map(str, command["args"])]
        status = mcec.cli.main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        traceback.print_exc()
        status = 1
    _end(status)


def _end(status: int) -> NoReturn:
    """End as an interpreter ends a process — its other threads waited for, its exit handlers run
    (DBOS's, OpenTelemetry's exporters), its streams flushed — but without tearing the modules
    down: that walked the whole heap inherited from the zygote (~0.4 s of CPU a child, most of
    the races' cost), which a process started from nothing does not have."""
    # the interpreter's own first two exit steps (private, both: what Py_FinalizeEx calls): the
    # threading module's exit hooks (thread pools told to stop) and the joins, then atexit's
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _say(message: dict[str, object]) -> None:
    sys.__stdout__.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
    sys.__stdout__.flush()  # type: ignore[union-attr]


def main(specs: list[str]) -> None:
    """Warm up, say ``{"ready": true}``, then fork a child per command until stdin closes."""
    _warm(specs)
    # what the warm-up made is never collected in a child: the collector need not walk it there
    # (and copy its pages, which are shared with the zygote until written)
    gc.freeze()
    _say({"ready": True})
    children: dict[int, object] = {}
    stdin = sys.stdin.buffer
    buffered = b""
    open_input = True
    while open_input or children:
        readable, _, _ = select.select([stdin] if open_input else [], [], [], 0.01)
        if readable:
            chunk = os.read(stdin.fileno(), 65536)
            if not chunk:
                open_input = False
            buffered += chunk
            while b"\n" in buffered:
                line, buffered = buffered.split(b"\n", 1)
                command = json.loads(line)
                pid = os.fork()
                if pid == 0:
                    _child(command)
                children[pid] = command["id"]
                _say({"id": command["id"], "pid": pid})
        while children:  # reap every child that ended
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            ident = children.pop(pid, None)
            if ident is not None:
                _say({"id": ident, "status": os.waitstatus_to_exitcode(wait_status)})


if __name__ == "__main__":
    main(sys.argv[1:])
