"""When MCP servers start and stop, against the clock of the run (issue 29 items 15, 16; issue 37 item 1).

- A ``timeout(S)`` around a tool's first call times the call, not the start of
  its server (a server that takes 3 s to start, ``timeout(1)`` around the call:
  it succeeds), compiled, interpreted and from ``mcec run``; a start that takes
  longer than the start timeout is ``ToolUnavailable(START_FAILED)``.
- A server still busy with a request that timed out is stopped at once, and a
  zombie in its process group (where nothing reaps orphans) does not hold the
  run: the timed-out call plus the scope's close take well under 1.5 s, and no
  process is left running.
- A scope that closes while a server is being spawned waits for that process,
  so nothing exits after the event loop has closed (``Loop … that handles pid
  N is closed`` on stderr).

Every server here is the real ``tests/mcp_servers/toolbox_server.py``, whose
optional second argument makes it sleep before it serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentmonad import Err, Ok, Timeout, ToolUnavailable
from agentmonad import ToolUnavailableKind as Kind
from agentmonad.control import Deadline
from agentmonad.tools import StdioServer, tool, tool_scope
from mcec.check.typed import Program
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile
from mcp_servers.pipelines import Counter, EchoArgs
from test_mcp_tools import TOOLBOX, assert_all_gone, box_command

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

#: Seconds the slow server sleeps before it serves: longer than the timeouts around its calls.
START_DELAY = 3.0


def slow_command(folder: Path, delay: float = START_DELAY) -> str:
    return shlex.join([sys.executable, str(TOOLBOX), str(folder), str(delay)])


SPEC = """
from typing import Any
from mcp_servers.pipelines import Counter, EchoArgs, Refused
import mcp_servers.pipelines as px

state Counter
error Refused

server box = stdio COMMAND
tool echo   : EchoArgs -> str       = box.echo
tool slow   : dict[str, Any] -> str = box.slow
step refuse : EchoArgs -> str ! Refused = px.refuse

pipeline say    : EchoArgs -> str = echo;
pipeline first  : EchoArgs -> str = timeout(1) echo;
pipeline late   : dict[str, Any] -> str = timeout(1) slow;
pipeline racing : EchoArgs -> tuple[str, str] = par <echo, refuse>;
"""


def write_spec(folder: Path, command: str, name: str = "lifecycle") -> Path:
    path = folder / f"{name}.mce"
    path.write_text(SPEC.replace("COMMAND", json.dumps(command)), encoding="utf-8")
    return path


def compile_spec(path: Path) -> tuple[Program, ModuleType]:
    result = compile_source(SourceFile(path.name, path.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def mcec_run(spec: Path, pipeline: str, value: object, *, linger: float = 0.0) -> subprocess.Popen[str]:
    """``mcec run SPEC PIPELINE`` from ``tests/`` (so ``mcp_servers`` imports), as the CLI runs it.

    ``linger``: the interpreter waits that long after the CLI is done before it exits,
    as a longer-lived program would, so that what asyncio's child watcher logs after
    the run's event loop has closed has the time to reach stderr.
    """
    argv = ["run", str(spec), pipeline, "--input", json.dumps(value)]
    code = (
        "import atexit, sys, time\n"
        f"atexit.register(time.sleep, {linger!r})\n"
        "from mcec.cli import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], cwd=TESTS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


# ---------------------------------------------------------------- issue 29 item 16: a deadline does not time the start


def test_a_timeout_around_the_first_call_does_not_time_the_server_start(tmp_path: Path) -> None:
    """``timeout(1) echo`` on a server that takes 3 s to start succeeds: from ``mcec run``
    (compiled), the compiled module and the interpreter, each run starting its own server."""
    spec = write_spec(tmp_path, slow_command(tmp_path))
    cli = mcec_run(spec, "first", {"text": "from the command line"})
    program, module = compile_spec(spec)

    async def both() -> tuple[Any, Any]:
        # Two tasks, two contexts: each run's scope is its own outermost one.
        compiled = module.first(Counter(), EchoArgs(text="compiled"))
        interpreted = interpret(program, "first", Counter(), EchoArgs(text="interpreted"))
        return tuple(await asyncio.gather(compiled, interpreted))  # type: ignore[return-value]

    started = time.monotonic()
    compiled, interpreted = asyncio.run(both())
    took = time.monotonic() - started
    out, err = cli.communicate(timeout=120)
    assert compiled == Ok("compiled", Counter())
    assert interpreted == Ok("interpreted", Counter())
    assert took >= START_DELAY  # the start really was slower than the deadline
    assert cli.returncode == 0, err
    assert json.loads(out)["value"] == "from the command line"
    assert_all_gone(tmp_path, expected=3)


def test_the_deadline_resumes_once_the_server_has_started(tmp_path: Path) -> None:
    """The held deadline restarts with the time it had left: ``timeout(1)`` around a first
    call that itself takes 5 s is still a ``Timeout``, 1 s after the start."""
    spec = write_spec(tmp_path, slow_command(tmp_path))
    program, module = compile_spec(spec)

    async def main() -> tuple[Any, Any]:
        return tuple(  # type: ignore[return-value]
            await asyncio.gather(
                module.late(Counter(), {"tag": "c", "seconds": 5}),
                interpret(program, "late", Counter(), {"tag": "i", "seconds": 5}),
            )
        )

    started = time.monotonic()
    compiled, interpreted = asyncio.run(main())
    took = time.monotonic() - started
    for outcome in (compiled, interpreted):  # not the call's answer, 5 s after it began
        assert isinstance(outcome, Err) and outcome.error == Timeout(1.0), outcome
    assert took >= START_DELAY + 1.0  # the deadline's second ran after the start
    assert_all_gone(tmp_path, expected=2)


def test_a_server_slower_than_its_start_timeout_is_unavailable(tmp_path: Path) -> None:
    """The start is bounded by its own timeout, not by the call's deadline: with a start
    timeout of 1 s the call is ``ToolUnavailable(START_FAILED)``, naming the server and
    the time it was given, not a ``Timeout``."""
    spec = write_spec(tmp_path, slow_command(tmp_path))
    _program, module = compile_spec(spec)

    async def main() -> Any:
        async with tool_scope(start_timeout=1.0):
            return await module.first(Counter(), EchoArgs(text="x"))

    outcome = asyncio.run(main())
    assert isinstance(outcome, Err) and isinstance(outcome.error, ToolUnavailable), outcome
    error = outcome.error
    assert (error.server, error.tool, error.kind) == ("box", "echo", Kind.START_FAILED)
    assert error.reason.startswith("the server did not start (initialize, tools/list) within 1s")
    assert "$MCEC_TOOL_START_TIMEOUT" in error.reason
    assert_all_gone(tmp_path)  # (killed within its 1 s, it may not have written its pid yet)


def test_held_deadlines_stop_their_clocks() -> None:
    """``deadlines_held`` stops every deadline around it (nested ones too), and each resumes
    with what it had left: the inner one (0.3 s) runs out 0.1 + 0.5 (held) + 0.2 s after the
    start, the outer one (0.6 s) 0.6 + 0.5 (held) s after it. One that has already run out
    (its cancellation on its way) is left alone."""
    from agentmonad.control import deadlines_held

    cut_short: list[str] = []

    async def five_seconds(by: str) -> None:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cut_short.append(by)
            raise

    async def nested() -> tuple[bool, float, bool, float]:
        loop = asyncio.get_running_loop()
        started = loop.time()
        outer, inner = Deadline(0.6), Deadline(0.3)
        with contextlib.suppress(TimeoutError):
            async with outer:
                with contextlib.suppress(TimeoutError):
                    async with inner:
                        await asyncio.sleep(0.1)
                        with deadlines_held():
                            await asyncio.sleep(0.5)  # longer than either has left
                        await five_seconds("inner")
                inner_at = loop.time() - started
                await five_seconds("outer")
        return inner.expired(), inner_at, outer.expired(), loop.time() - started

    async def run_out() -> bool:
        deadline = Deadline(0.05)
        with contextlib.suppress(TimeoutError):
            async with deadline:
                try:
                    await asyncio.sleep(5)
                except asyncio.CancelledError:
                    with deadlines_held():  # run out: nothing to hold
                        pass
                    raise
        return deadline.expired()

    inner_expired, inner_at, outer_expired, outer_at = asyncio.run(nested())
    # each ran out after the hold (not before: the lower bounds), inside its 5 s sleep
    assert inner_expired and inner_at >= 0.79, inner_at
    assert outer_expired and outer_at >= 1.09, outer_at
    assert cut_short == ["inner", "outer"]
    assert asyncio.run(run_out())


# ---------------------------------------------------------------- issue 37 item 1: a timed-out call does not hold the close

#: Run in a subprocess that is the reaper of orphans and never reaps them
#: (PR_SET_CHILD_SUBREAPER), as an init without `--init` does: a process of the
#: server's group left by its parent stays a zombie until the script exits.
NON_REAPING_RUN = """
import asyncio, ctypes, json, os, sys, time
from agentmonad.control import Deadline
from agentmonad.tools import StdioServer, call_tool, tool, tool_scope

PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
server = StdioServer("box", sys.argv[1])
how = sys.argv[2]

def stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return {"state": fields[0], "ppid": int(fields[1]), "pgrp": int(fields[2])}

async def run():
    async with tool_scope():
        child = await call_tool(server, "spawn", {"seconds": 60})  # a second member of the group
        leader = stat(child)["pgrp"]
        started = time.monotonic()
        if how == "call_tool":
            try:
                await call_tool(server, "block", {"seconds": 5}, timeout=0.5)
            except Exception as exc:
                outcome = type(exc).__name__ + ": " + str(exc)
        else:
            deadline = Deadline(0.5)
            try:
                async with deadline:
                    await tool(server, "block", str)(None, {"seconds": 5})
            except TimeoutError:
                outcome = "Timeout" if deadline.expired() else "TimeoutError"
    return outcome, started, child, leader

outcome, started, child, leader = asyncio.run(run())
took = time.monotonic() - started
group = {pid: stat(pid) for pid in os.listdir("/proc") if pid.isdigit()}
live = [pid for pid, s in group.items() if s and s["pgrp"] == leader and s["state"] not in "ZXx"]
print(json.dumps({"outcome": outcome, "took": took, "child": stat(child), "me": os.getpid(), "live": live}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs prctl and /proc")
@pytest.mark.parametrize("how", ["call_tool", "deadline"])
def test_a_timed_out_call_does_not_hold_the_run(tmp_path: Path, how: str) -> None:
    """The issue's ReAct agent: ``call_tool(…, timeout=0.5)`` (or a ``timeout(0.5)`` around a
    tool step) on a tool that works for 5 s, its server unable to stop on end of input,
    and a process of its group left a zombie by a reaper that does not reap. The scope's close
    stops the server instead of waiting for the tool's 5 s (it did wait: 4.5 s after the
    timeout), and no process of the group is left running."""
    done = subprocess.run(
        [sys.executable, "-c", NON_REAPING_RUN, box_command(tmp_path), how],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    if how == "call_tool":
        assert report["outcome"] == "ToolUnavailable: box.block unavailable: no answer within 0.5s"
    else:
        assert report["outcome"] == "Timeout"
    assert report["live"] == []
    assert not list(tmp_path.glob("block-done-*")), "the close waited for the blocked tool to finish"
    # the case the test is about: the server's child ended as a zombie nobody reaps
    assert report["child"] == {"state": "Z", "ppid": report["me"], "pgrp": report["child"]["pgrp"]}
    assert_all_gone(tmp_path, expected=1)


# ---------------------------------------------------------------- issue 29 item 15: nothing exits after the loop has closed

LOOP_CLOSED = "that handles pid"


def test_a_scope_closed_while_its_server_spawns_waits_for_the_process(tmp_path: Path) -> None:
    """``par <echo, refuse>``: ``refuse`` fails at once, so the run ends while ``echo``'s
    server is being spawned. The process is still waited for before the run returns,
    so asyncio's child watcher never reports it to a closed loop."""
    spec = write_spec(tmp_path, box_command(tmp_path))
    _program, module = compile_spec(spec)
    late: list[str] = []

    class Late(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            late.append(record.getMessage())

    handler = Late()
    logging.getLogger("asyncio").addHandler(handler)
    try:
        for n in range(3):
            outcome = asyncio.run(module.racing(Counter(), EchoArgs(text=f"run {n}")))
            assert isinstance(outcome, Err) and type(outcome.error).__name__ == "Refused"
        time.sleep(0.5)  # a process killed but not awaited is reaped by the watcher's thread meanwhile
    finally:
        logging.getLogger("asyncio").removeHandler(handler)
    assert [m for m in late if LOOP_CLOSED in m] == []
    assert_all_gone(tmp_path)


def test_mcec_run_with_tools_prints_nothing_about_closed_loops(tmp_path: Path) -> None:
    """The same race and a plain successful call, as ``mcec run`` subprocesses: stderr stays empty."""
    spec = write_spec(tmp_path, box_command(tmp_path))
    runs = [
        mcec_run(spec, "racing", {"text": "x"}, linger=0.5),
        mcec_run(spec, "racing", {"text": "y"}, linger=0.5),
        mcec_run(spec, "say", {"text": "z"}, linger=0.5),
    ]
    results = [run.communicate(timeout=120) for run in runs]
    for run, (out, err) in zip(runs, results):
        assert run.returncode in (0, 1), err
        assert json.loads(out)["ok"] is (run is runs[2])
        assert err == "", err
    assert_all_gone(tmp_path)
