"""MCP tools against misbehaving servers (issue 18, items 9, 11, 12, 13, 15 and 24).

Like ``test_9_mcp_tools.py``, every test starts real servers as subprocesses
and speaks MCP to them: the SDK-built ``tests/mcp_servers/toolbox_server.py``,
the hand-written ``tests/mcp_servers/raw_server.py`` (for an answer the SDK's
own server could not produce), or a command that fails on purpose.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agentmonad import AgentMonad, Err, Ok, ToolFailed, ToolUnavailable, lift_step
from agentmonad import ToolUnavailableKind as Kind
from agentmonad.mcp.tools import StdioServer, _current, call_tool, tool, tool_scope
from mcp_servers.pipelines import Hits
from test_mcp_tools import alive, assert_all_gone, box_command, server_pids

ROOT = Path(__file__).resolve().parents[2]
RAW = ROOT / "tests" / "mcp_servers" / "raw_server.py"


def box(folder: Path) -> StdioServer:
    return StdioServer("box", box_command(folder))


def connection_of(server: StdioServer) -> Any:
    scope = _current()
    assert scope is not None
    return scope.connections[server]


# ---------------------------------------------------------------- item 9: an error response is not a closed connection


def test_an_error_response_with_code_32000_leaves_the_server_up(tmp_path: Path) -> None:
    """-32000 is JSON-RPC's "server error", and also the code the SDK uses for a
    closed connection: the answer is an Err, and the same process serves the next call."""
    server = box(tmp_path)

    async def main() -> list[Any]:
        async with tool_scope():
            before = await tool(server, "echo", str)(None, {"text": "up"})
            refused = await tool(server, "server_error", str)(None, {"message": "busy, try later"})
            timeout_code = await tool(server, "server_error", str)(None, {"message": "slow", "code": -32001})
            after = await tool(server, "echo", str)(None, {"text": "still up"})
            return [before, refused, timeout_code, after, server_pids(tmp_path)]

    before, refused, timeout_code, after, pids = asyncio.run(main())
    assert before == Ok("up", None) and after == Ok("still up", None)
    assert refused == Err(
        ToolUnavailable("box", "server_error", "protocol error -32000: busy, try later", Kind.PROTOCOL_ERROR), None
    )
    # the SDK's time-out code, answered by the server, is not a time-out either
    assert isinstance(timeout_code, Err) and timeout_code.error.kind is Kind.PROTOCOL_ERROR
    assert len(pids) == 1  # one process served all four calls
    assert_all_gone(tmp_path, expected=1)


# ---------------------------------------------------------------- item 11: results too deep to decode


def test_json_text_too_deep_to_decode_is_tool_unavailable(tmp_path: Path) -> None:
    """``-> Any`` decodes JSON text; 100,000 levels are beyond ``json.loads``. The
    step gives ``Err(ToolUnavailable)``, which ``catch ToolUnavailable`` handles."""
    server = box(tmp_path)
    deep = tool(server, "deep_text", Any)
    step = lift_step(deep, name="deep", errors=(ToolFailed, ToolUnavailable), is_async=True)
    caught = step({"depth": 100_000}).catch(ToolUnavailable, lambda e: AgentMonad.pure(e.kind))

    async def main() -> tuple[Any, Any, Any]:
        async with tool_scope():
            outcome = await deep(None, {"depth": 100_000})
            handled = await caught.run(None)
            shallow = await deep(None, {"depth": 3})
            return outcome, handled, shallow

    outcome, handled, shallow = asyncio.run(main())
    assert isinstance(outcome, Err) and isinstance(outcome.error, ToolUnavailable)
    assert outcome.error.kind is Kind.INVALID_RESULT and "too deeply" in outcome.error.reason
    assert handled == Ok(Kind.INVALID_RESULT, None)
    assert shallow == Ok([[[]]], None)
    assert_all_gone(tmp_path, expected=1)


def test_an_answer_too_deep_to_parse_fails_its_call_at_once() -> None:
    """A response line the message parser rejects (structured content 100,000 deep)
    fails the call that waits for it, as an invalid result, well before its time-out;
    the connection stays usable."""
    server = StdioServer("raw", shlex.join([sys.executable, str(RAW), "100000"]))

    async def main() -> tuple[Any, Any]:
        async with tool_scope(timeout=25):
            await tool(server, "ping", str)(None, {})
            outcome = await tool(server, "deep", Any)(None, {})
            return outcome, await tool(server, "ping", str)(None, {})

    outcome, after = asyncio.run(main())
    # an invalid result, not the 25 s time-out's unavailable
    assert isinstance(outcome, Err) and outcome.error.kind is Kind.INVALID_RESULT
    assert "could not be parsed" in outcome.error.reason and "recursion limit" in outcome.error.reason
    assert after == Ok("pong", None)


# ---------------------------------------------------------------- item 12: the server's children end with the scope


def children(folder: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("child-")) for p in folder.glob("child-*"))


@pytest.mark.parametrize("crash", [False, True], ids=["scope-exit", "server-crash"])
def test_a_process_the_server_started_ends_with_the_scope(tmp_path: Path, crash: bool) -> None:
    """The toolbox exits by itself when its stdin closes; the child it started
    (which would sleep for a minute) is ended with it, crashed server or not."""
    server = box(tmp_path)

    async def main() -> Any:
        async with tool_scope():
            pid = await tool(server, "spawn", Any)(None, {"seconds": 60})
            assert isinstance(pid, Ok) and alive(pid.value)
            if crash:
                died = await tool(server, "crash", str)(None, {})
                assert isinstance(died, Err) and died.error.kind is Kind.CONNECTION_LOST
            return pid.value

    child = asyncio.run(main())
    assert children(tmp_path) == [child]
    deadline = time.monotonic() + 2.0
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(child), "a process the server started outlived the tool scope"
    assert_all_gone(tmp_path, expected=1)


# ---------------------------------------------------------------- item 13: a bounded stderr tail


def open_files() -> dict[tuple[int, int], int]:
    """The regular files this process holds open (temporary files included): their sizes, by
    device and inode."""
    held = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            st = os.fstat(int(fd))
        except OSError:
            continue
        if (st.st_mode & 0o170000) == 0o100000:
            held[(st.st_dev, st.st_ino)] = st.st_size
    return held


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc to see open files")
def test_stderr_is_kept_as_a_bounded_tail_and_quoted_on_failure(tmp_path: Path) -> None:
    """Three calls write 8 MB of stderr each: what the run holds of it, in memory or
    on disk, stays at most 64 KiB, and a failure still quotes its end."""
    server = box(tmp_path)
    before = open_files()  # the worker's own (an earlier test's database, pytest's files)

    async def main() -> tuple[list[int], list[int], Any]:
        async with tool_scope():
            held, files = [], []
            for n in range(3):
                assert await tool(server, "shout", str)(None, {"size": 8_000_000, "last": f"last words {n}"}) == Ok(
                    "ok", None
                )
                await asyncio.sleep(0.2)  # let the reader catch up with the pipe
                files.append(max((size for file, size in open_files().items() if file not in before), default=0))
                held.append(len(getattr(connection_of(server), "stderr", b"")))
            died = await tool(server, "crash", str)(None, {})
            return held, files, died

    held, files, died = asyncio.run(main())
    assert all(size < 1_000_000 for size in files), f"an open file grew to {max(files)} bytes"
    assert all(0 < h <= 64 * 1024 for h in held), held
    assert isinstance(died, Err) and died.error.kind is Kind.CONNECTION_LOST
    assert "its stderr ends with: …" in died.error.reason and died.error.reason.endswith("last words 2")
    assert_all_gone(tmp_path, expected=1)


def test_a_server_that_fails_to_start_quotes_its_stderr() -> None:
    """The tail is read from a pipe now: a server that dies at once still has it all quoted."""
    noisy = shlex.join([sys.executable, "-c", "import sys; print('x' * 100000, file=sys.stderr); sys.exit('bad config')"])
    outcome = asyncio.run(tool(StdioServer("s", noisy), "t", str)(None, {}))
    assert isinstance(outcome, Err) and outcome.error.kind is Kind.START_FAILED
    assert "exited during start-up" in outcome.error.reason and outcome.error.reason.endswith("bad config")


# ---------------------------------------------------------------- item 15: a kind per reason


def exits_at_once() -> str:
    return shlex.join([sys.executable, "-c", "import sys; sys.exit('no config file')"])


KIND_CASES: dict[Kind, Callable[[StdioServer], Awaitable[Any]]] = {
    Kind.START_FAILED: lambda box: tool(StdioServer("s", exits_at_once()), "echo", str)(None, {"text": "x"}),
    Kind.UNKNOWN_TOOL: lambda box: tool(box, "missing", str)(None, {}),
    Kind.TIMEOUT: lambda box: tool(box, "hang", str, timeout=0.5)(None, {}),
    Kind.CONNECTION_LOST: lambda box: tool(box, "crash", str)(None, {}),
    Kind.INVALID_RESULT: lambda box: tool(box, "bad_hits", Hits)(None, {"query": "q"}),
    Kind.PROTOCOL_ERROR: lambda box: tool(box, "server_error", str)(None, {"message": "no"}),
}

REASONS = {
    Kind.START_FAILED: "exited during start-up",
    Kind.UNKNOWN_TOOL: "has no tool 'missing'",
    Kind.TIMEOUT: "no answer within 0.5s",
    Kind.CONNECTION_LOST: "closed the connection",
    Kind.INVALID_RESULT: "does not validate",
    Kind.PROTOCOL_ERROR: "protocol error -32000: no",
}


@pytest.mark.parametrize("kind", list(KIND_CASES), ids=lambda k: k.name)
def test_each_kind_of_unavailability(tmp_path: Path, kind: Kind) -> None:
    """Each reason a tool is unavailable has its kind, next to the reason's text;
    the kind survives pickling and shows in the repr, and takes part in equality."""

    async def main() -> Any:
        async with tool_scope():
            return await KIND_CASES[kind](box(tmp_path))

    outcome = asyncio.run(main())
    assert isinstance(outcome, Err) and type(outcome.error) is ToolUnavailable, outcome
    error = outcome.error
    assert error.kind is kind and REASONS[kind] in error.reason
    assert pickle.loads(pickle.dumps(error)) == error
    assert f"kind=ToolUnavailableKind.{kind.name}" in repr(error)
    assert str(error).startswith(f"{error.server}.{error.tool} unavailable: ")
    assert error != ToolUnavailable(error.server, error.tool, error.reason)  # UNSPECIFIED
    assert_all_gone(tmp_path)


def test_a_server_that_died_between_calls_is_connection_lost(tmp_path: Path) -> None:
    """Killed while idle: the next call finds the connection closed, whatever code the SDK used."""
    server = box(tmp_path)

    async def main() -> tuple[Any, Any]:
        async with tool_scope():
            first = await tool(server, "echo", str)(None, {"text": "a"})
            (pid,) = server_pids(tmp_path)
            os.kill(pid, signal.SIGKILL)
            while alive(pid):
                await asyncio.sleep(0.02)
            return first, await tool(server, "echo", str)(None, {"text": "b"})

    first, second = asyncio.run(main())
    assert first == Ok("a", None)
    assert isinstance(second, Err) and second.error.kind is Kind.CONNECTION_LOST
    assert "closed the connection" in second.error.reason
    assert_all_gone(tmp_path, expected=1)


def test_call_tool_raises_with_the_kind(tmp_path: Path) -> None:
    async def main() -> None:
        with pytest.raises(ToolUnavailable) as info:
            await call_tool(box(tmp_path), "nope", {})
        assert info.value.kind is Kind.UNKNOWN_TOOL

    asyncio.run(main())


def test_without_the_mcp_package_a_tool_is_unavailable_not_an_exception() -> None:
    """The transport needs ``mcp``; without it the call is ``START_FAILED``, as before."""
    script = (
        "import asyncio, sys\n"
        "sys.modules['mcp'] = None  # as if it were not installed\n"
        "from agentmonad.tools import StdioServer, tool\n"
        "out = asyncio.run(tool(StdioServer('s', 'python -c pass'), 't', str)(None, {}))\n"
        "print(out.error.kind.name, '|', out.error.reason)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("START_FAILED | the `mcp` package is needed to call MCP tools")


def test_the_constructor_stays_compatible() -> None:
    old = ToolUnavailable("s", "t", "r")
    assert old.kind is Kind.UNSPECIFIED and (old.server, old.tool, old.reason) == ("s", "t", "r")
    assert ToolUnavailable("s", "t", "r", kind=Kind.TIMEOUT) == ToolUnavailable("s", "t", "r", Kind.TIMEOUT)
    assert hash(ToolUnavailable("s", "t", "r", Kind.TIMEOUT)) == hash(old)  # hash by the first field


# ---------------------------------------------------------------- item 24: `python` is the running interpreter


@pytest.mark.parametrize("program", ["python", "python3"])
def test_python_in_a_server_command_is_the_running_interpreter(tmp_path: Path, program: str) -> None:
    """A run started with a venv's ``bin/python`` and no python on ``PATH`` (the venv
    not activated) still starts ``stdio "python …"`` servers, with that interpreter."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    command = f"{program} tests/mcp_servers/toolbox_server.py {shlex.quote(str(tmp_path))}"
    script = (
        "import asyncio, sys\n"
        "from agentmonad.tools import StdioServer, call_tool\n"
        f"server = StdioServer('box', {command!r})\n"
        "print(asyncio.run(call_tool(server, 'echo', {'text': 'found'})))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = str(empty)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "found"
    assert_all_gone(tmp_path, expected=1)
