"""MCP tools as typed steps (docs/language.md §9), against real MCP servers.

Every test here starts the SDK-built server ``tests/mcp_servers/toolbox_server.py``
(or a deliberately broken command) as a subprocess and speaks MCP to it; nothing
of the protocol is mocked. A server start costs about a second, so each test
keeps one server up for all its calls with an explicit ``tool_scope()``.

Each server writes ``pid-<pid>`` into its folder at start-up; after every run
the test checks that each such process is gone.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from agentmonad import Err, Ok, ToolFailed, ToolUnavailable
from agentmonad import ToolUnavailableKind as Kind
from agentmonad.tools import StdioServer, call_tool, tool, tool_scope
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile
from mcec.check.typed import Program
from mcp_servers.pipelines import EchoArgs, Hits, SearchArgs

ROOT = Path(__file__).resolve().parents[2]
TOOLBOX = ROOT / "tests" / "mcp_servers" / "toolbox_server.py"


def box_command(folder: Path) -> str:
    return shlex.join([sys.executable, str(TOOLBOX), str(folder)])


SPEC = """
from typing import Any
from mcp_servers.pipelines import Hits, SearchArgs, EchoArgs
import mcp_servers.pipelines as px

server box = stdio COMMAND
tool search   : SearchArgs -> Hits     = box.search
tool echo     : EchoArgs -> str        = box.echo
tool add      : dict[str, Any] -> Any  = box.add
tool fail     : dict[str, Any] -> str  = box.fail
tool slow     : dict[str, Any] -> str  = box.slow
tool bad_hits : SearchArgs -> Hits     = box.bad_hits
tool hang     : dict[str, Any] -> str  = box.hang
tool crash    : dict[str, Any] -> str  = box.crash
tool missing  : dict[str, Any] -> Any  = box.missing
fn hit_count  : Hits -> int            = px.hit_count

pipeline find    : SearchArgs -> Hits ! ToolFailed | ToolUnavailable = search;
pipeline count   : SearchArgs -> int = search >>= hit_count;
pipeline say     : EchoArgs -> str = echo;
pipeline plus    : dict[str, Any] -> Any = add;
pipeline fails   : dict[str, Any] -> str = fail;
pipeline invalid : SearchArgs -> Hits = bad_hits;
pipeline stuck   : dict[str, Any] -> str = hang;
pipeline dies    : dict[str, Any] -> str = crash;
pipeline unknown : dict[str, Any] -> Any = missing;
pipeline three   : dict[str, Any] -> tuple[str, str, str] = par <slow, slow, slow>;
pipeline doomed  : dict[str, Any] -> tuple[str, str, str] = par <slow, slow, fail>;
"""


def compile_spec(folder: Path, command: str | None = None) -> tuple[Program, ModuleType]:
    text = SPEC.replace("COMMAND", json.dumps(command or box_command(folder)))
    result = compile_source(SourceFile("tools9.mce", text))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def server_pids(folder: Path) -> list[int]:
    return sorted(int(p.name.removeprefix("pid-")) for p in folder.glob("pid-*"))


def assert_all_gone(folder: Path, expected: int | None = None) -> None:
    pids = server_pids(folder)
    if expected is not None:
        assert len(pids) == expected, pids
    deadline = time.monotonic() + 2.0
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)  # the scope has awaited the kill; /proc may lag a moment
    assert not [p for p in pids if alive(p)], "a server process outlived its run"


def events(folder: Path) -> list[dict[str, Any]]:
    path = folder / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- outcomes, compiled vs interpreted


def test_tool_outcomes_compiled_and_interpreted_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kind of outcome, through the generated module and the reference
    interpreter, on one server shared by all calls of the scope; then the
    ``call_tool`` API on the same session."""
    program, module = compile_spec(tmp_path)
    server = StdioServer("box", box_command(tmp_path))
    assert module.box == server
    # Substitute the `hang` tool with a short timeout: a test may replace any step.
    quick_hang = tool(server, "hang", str, timeout=0.5)
    monkeypatch.setattr(module, "hang", quick_hang)

    cases: list[tuple[str, Any, Any]] = [
        ("find", SearchArgs(query="a b"), Ok(Hits(query="a b", hits=["hit:a", "hit:b"]), None)),
        ("count", SearchArgs(query="x y z"), Ok(3, None)),
        ("say", EchoArgs(text="héllo"), Ok("héllo", None)),
        ("plus", {"a": 2, "b": 40}, Ok(42, None)),
        ("fails", {"message": "rate limited"}, ToolFailed),
        ("unknown", {}, ToolUnavailable),
        ("invalid", SearchArgs(query="abc"), ToolUnavailable),
        ("stuck", {}, ToolUnavailable),
        ("plus", {"a": "not a number", "b": 1}, ToolFailed),  # the server rejects its arguments
    ]
    outcomes: dict[str, Any] = {}

    async def main() -> None:
        async with tool_scope():
            for name, value, expected in cases:
                compiled = await getattr(module, name)(None, value)
                interpreted = await interpret(program, name, None, value, overrides={"hang": quick_hang})
                assert compiled == interpreted, name
                if isinstance(expected, type):
                    assert isinstance(compiled, Err) and type(compiled.error) is expected, (name, compiled)
                    assert compiled.site is not None and compiled.site.file == "tools9.mce"
                else:
                    assert compiled == expected, name
                outcomes.setdefault(name, compiled)
            # the tool sees no state: it hands back the state it got
            assert await module.say("kept", EchoArgs(text="x")) == Ok("x", "kept")

            # call_tool, for steps that pick a tool at run time: returns or raises
            assert await call_tool(server, "add", {"a": 1, "b": 2}) == 3
            assert await call_tool(server, "search", SearchArgs(query="q"), Hits) == Hits(query="q", hits=["hit:q"])
            assert await call_tool(server, "echo", {"text": "t"}, str) == "t"
            with pytest.raises(ToolFailed, match="m!"):
                await call_tool(server, "fail", {"message": "m!"})
            with pytest.raises(ToolUnavailable, match="no tool 'nope'"):
                await call_tool(server, "nope", {})
            with pytest.raises(TypeError, match="pydantic model or a dict"):
                await call_tool(server, "echo", "just a string")

    asyncio.run(main())
    assert_all_gone(tmp_path, expected=1)  # one server for the whole scope

    failed, unknown, invalid, stuck = (outcomes[n].error for n in ("fails", "unknown", "invalid", "stuck"))
    assert (failed.server, failed.tool) == ("box", "fail") and "rate limited" in failed.text
    assert unknown.reason == (
        "the server has no tool 'missing' (it lists: add, bad_hits, block, crash, deep_text, echo, fail, hang, "
        "search, server_error, shout, slow, spawn)"
    )
    assert "invalid result" in invalid.reason or "does not validate" in invalid.reason
    assert stuck.reason == "no answer within 0.5s"


def test_crash_mid_run(tmp_path: Path) -> None:
    """A server that dies during a call: ToolUnavailable, and later calls in the
    run fail at once with the same reason instead of hanging."""
    _program, module = compile_spec(tmp_path)

    async def main() -> tuple[Any, Any, Any]:
        async with tool_scope():
            before = await module.say(None, EchoArgs(text="up"))
            died = await module.dies(None, {})
            after = await module.say(None, EchoArgs(text="still there?"))
            return before, died, after

    before, died, after = asyncio.run(main())
    assert before == Ok("up", None)
    assert isinstance(died, Err) and isinstance(died.error, ToolUnavailable)
    assert "closed the connection" in died.error.reason
    assert isinstance(after, Err) and after.error.reason == died.error.reason
    assert_all_gone(tmp_path, expected=1)  # the later call started no server again: it had the first one's failure


def test_a_scope_with_restart_failed_starts_a_crashed_server_again(tmp_path: Path) -> None:
    """``tool_scope(restart_failed=True)`` (what ``mcec serve`` holds): the call after
    a crash gets a new server; both processes are gone when the scope exits."""
    _program, module = compile_spec(tmp_path)

    async def main() -> tuple[Any, Any, Any]:
        async with tool_scope(restart_failed=True):
            before = await module.say(None, EchoArgs(text="up"))
            died = await module.dies(None, {})
            after = await module.say(None, EchoArgs(text="back"))
            return before, died, after

    before, died, after = asyncio.run(main())
    assert before == Ok("up", None) and after == Ok("back", None)
    assert isinstance(died, Err) and isinstance(died.error, ToolUnavailable)
    assert_all_gone(tmp_path, expected=2)


def test_a_server_that_keeps_crashing_does_not_pile_up_in_a_long_lived_scope(tmp_path: Path) -> None:
    """Under ``restart_failed`` a crashed connection is kept only until its process is gone."""
    from agentmonad.mcp.tools import _current

    _program, module = compile_spec(tmp_path)

    async def main() -> tuple[list[Any], int]:
        async with tool_scope(restart_failed=True):
            results = []
            for n in range(4):
                results.append(await module.say(None, EchoArgs(text=f"up {n}")))
                results.append(await module.dies(None, {}))
            results.append(await module.say(None, EchoArgs(text="last")))
            scope = _current()
            assert scope is not None
            return results, len(scope.retired)

    results, retired = asyncio.run(main())
    assert results[::2] == [Ok(f"up {n}", None) for n in range(4)] + [Ok("last", None)]
    assert all(isinstance(r, Err) and isinstance(r.error, ToolUnavailable) for r in results[1::2])
    assert retired <= 2  # 4 without pruning: one per crash
    assert_all_gone(tmp_path, expected=5)


def test_servers_that_cannot_start(tmp_path: Path) -> None:
    """Not found, exits at once (its stderr is quoted), never answers ``initialize``.
    The first two are called outside any scope: each call gets a scope of its own."""
    pid_file = tmp_path / "pid-silent"
    silent = shlex.join(
        [sys.executable, "-c", f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"]
    )
    exits = shlex.join([sys.executable, "-c", "import sys; sys.exit('no config file, giving up')"])

    async def never_answers() -> Any:
        async with tool_scope(start_timeout=1.0):
            return await tool(StdioServer("s", silent), "anything", str)(None, {})

    async def main() -> list[Any]:
        not_found = call_tool(StdioServer("s", "/definitely/not/a/program --flag"), "anything", {})
        return list(
            await asyncio.gather(
                not_found, tool(StdioServer("s", exits), "anything", str)(None, {}), never_answers(), return_exceptions=True
            )
        )

    not_found, exited, never = asyncio.run(main())
    assert not_found == ToolUnavailable(
        "s", "anything", "cannot start `/definitely/not/a/program --flag`: command not found", Kind.START_FAILED
    )
    assert isinstance(exited, Err) and isinstance(exited.error, ToolUnavailable)
    assert "exited during start-up" in exited.error.reason and "no config file" in exited.error.reason
    assert isinstance(never, Err) and isinstance(never.error, ToolUnavailable)
    assert never.error.reason == (
        "the server did not start (initialize, tools/list) within 1s"
        " (its start timeout: $MCEC_TOOL_START_TIMEOUT or tool_scope(start_timeout=...))"
    )
    assert not alive(int(pid_file.read_text()))


# ---------------------------------------------------------------- concurrency and cancellation


def test_par_of_tool_calls_overlaps_and_cancels(tmp_path: Path) -> None:
    """Three calls on one server run at once; a failing branch cancels the
    in-flight calls, and the server sees the cancellation. The scope then exits
    with an exception, which stops the server too."""
    _program, module = compile_spec(tmp_path)
    results: list[Any] = []

    async def main() -> None:
        async with tool_scope():
            await module.say(None, EchoArgs(text="warm up"))  # start the server first
            results.append(await module.three(None, {"tag": "p", "seconds": 0.8}))
            results.append(await module.doomed(None, {"tag": "c", "seconds": 30, "message": "boom", "delay": 0.5}))
            # The server learns of the cancellations after the run has moved on; a server
            # that owes answers when the scope closes is ended at once, so wait for them here.
            deadline = time.monotonic() + 10
            while len([e for e in events(tmp_path) if e["event"] == "cancelled"]) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            raise LookupError("the caller fails after the calls")

    with pytest.raises(LookupError):
        asyncio.run(main())
    assert_all_gone(tmp_path, expected=1)

    together, doomed = results
    assert together == Ok(("p", "p", "p"), None)
    starts = [e["t"] for e in events(tmp_path) if e["tag"] == "p" and e["event"] == "start"]
    ends = [e["t"] for e in events(tmp_path) if e["tag"] == "p" and e["event"] == "end"]
    assert len(starts) == 3 and max(starts) < min(ends), "the three calls did not overlap on the server"

    assert isinstance(doomed, Err) and isinstance(doomed.error, ToolFailed) and "boom" in doomed.error.text
    # the 30 s branches were not waited for: the server saw both cancelled, neither end
    cancelled = [e for e in events(tmp_path) if e["tag"] == "c" and e["event"] == "cancelled"]
    assert len(cancelled) == 2, events(tmp_path)
    assert not [e for e in events(tmp_path) if e["tag"] == "c" and e["event"] == "end"]


def test_scope_lifetime_and_cancellation(tmp_path: Path) -> None:
    """Servers start at first use; nested scopes (a pipeline's own) share the
    outer session; cancelling the task that owns the scope, in the middle of a
    call, stops the server."""
    _program, module = compile_spec(tmp_path)
    reached: list[str] = []

    async def run() -> None:
        async with tool_scope():
            await asyncio.sleep(0.1)
            assert server_pids(tmp_path) == []  # nothing starts before the first call
            async with tool_scope():  # nested: the same session
                assert await module.say(None, EchoArgs(text="1")) == Ok("1", None)
            assert await module.say(None, EchoArgs(text="2")) == Ok("2", None)
            assert len(server_pids(tmp_path)) == 1
            reached.append("calling")
            await module.stuck(None, {})  # never answers (30 s timeout)
            reached.append("answered")

    async def main() -> None:
        task = asyncio.create_task(run())
        while not reached and not task.done():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # let the call reach the server
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert reached == ["calling"]
    assert_all_gone(tmp_path, expected=1)


def test_runtime_imports_no_mcp() -> None:
    """``import agentmonad`` and ``agentmonad.tools`` stay free of third-party packages,
    and the compiler imports ``mcp`` only when a command serves or calls tools."""
    code = "import sys, agentmonad, agentmonad.tools; assert 'mcp' not in sys.modules and 'anyio' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    code = "import sys, mcec.cli, mcec.run.serve, mcec.run.interpret; mcec.cli.build_parser(); assert 'mcp' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_timeout_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad $MCEC_TOOL_TIMEOUT is a clear ToolUnavailable, not a crash; bad arguments are refused."""
    monkeypatch.setenv("MCEC_TOOL_START_TIMEOUT", "soon")

    async def main() -> Any:
        async with tool_scope():
            return await tool(StdioServer("s", "true"), "t", str)(None, {})

    outcome = asyncio.run(main())
    assert outcome == Err(
        ToolUnavailable(
            "s", "t", "$MCEC_TOOL_START_TIMEOUT must be a positive number of seconds, not 'soon'", Kind.START_FAILED
        ),
        None,
    )
    with pytest.raises(ValueError):
        tool(StdioServer("s", "true"), "t", str, timeout=0)


def test_abandoned_run_closes_quietly() -> None:
    """A run's coroutine dropped mid-flight and closed from another context
    (as garbage collection does) neither raises nor awaits in its scope's exit."""
    import contextvars
    from collections.abc import Generator

    class Pause:
        def __await__(self) -> Generator[None, None, None]:
            yield  # suspends without needing an event loop

    async def run() -> None:
        async with tool_scope():
            await Pause()

    problems: list[BaseException | None] = []
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: problems.append(u.exc_value)
    try:
        coro = run()
        contextvars.copy_context().run(coro.send, None)  # suspended inside the scope, in its own context
        coro.close()
    finally:
        sys.unraisablehook = hook
    assert problems == []
