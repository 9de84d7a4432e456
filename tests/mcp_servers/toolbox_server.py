"""A test MCP server (the SDK's ``MCPServer`` over stdio) with well- and ill-behaved tools.

Run as ``python tests/mcp_servers/toolbox_server.py DIR [START_DELAY]``. It
sleeps ``START_DELAY`` seconds (default 0) before it serves, like a server that
is slow to start on a busy machine. It writes its pid to ``DIR/pid-<pid>`` at
start-up (so tests can check that no server outlives a
run) and appends one JSON line per tool event (``start``, ``end``,
``cancelled``, with ``time.monotonic()``) to ``DIR/events.jsonl``, which lets
tests observe overlap and cancellation from outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

DIR = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
START_DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
server = MCPServer("toolbox")


def record(event: str, **fields: Any) -> None:
    """Append one event line (small appends are atomic, so concurrent tools do not mix)."""
    line = json.dumps({"event": event, "pid": os.getpid(), "t": time.monotonic(), **fields})
    with open(DIR / "events.jsonl", "a", encoding="utf-8") as log:
        log.write(line + "\n")


class Hits(BaseModel):
    """Search results."""

    query: str
    hits: list[str]


@server.tool()
def search(query: str) -> Hits:
    """Deterministic search: one hit per word."""
    return Hits(query=query, hits=[f"hit:{word}" for word in query.split()])


@server.tool()
def echo(text: str) -> str:
    """The text back."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """a + b."""
    return a + b


@server.tool()
async def fail(message: str, delay: float = 0.0) -> str:
    """After ``delay`` seconds, an error result (isError: true) with ``message`` as its text."""
    await anyio.sleep(delay)
    raise ToolError(message)


@server.tool()
def bad_hits(query: str) -> dict[str, int]:
    """Structured content that is not a ``Hits``."""
    return {"query": len(query)}


@server.tool()
async def slow(tag: str, seconds: float) -> str:
    """Sleep, recording start, end, or cancellation."""
    record("start", tag=tag)
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        record("cancelled", tag=tag)
        raise
    record("end", tag=tag)
    return tag


@server.tool()
async def hang() -> str:
    """Never answers."""
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def block(seconds: float) -> str:
    """Sleep ``seconds`` in a worker thread: neither a cancellation nor the end of
    stdin can stop it, so the server stays busy (and alive) until it is done. Then it writes
    ``DIR/block-done-<pid>``: a server that got that far was waited for, not stopped."""
    time.sleep(seconds)
    (DIR / f"block-done-{os.getpid()}").touch()
    return "done"


@server.tool()
def crash() -> str:
    """The process dies in the middle of the call."""
    os._exit(7)


@server.tool()
def server_error(message: str, code: int = -32000) -> str:
    """A JSON-RPC error response (default -32000, the standard "server error"); the server stays up."""
    raise MCPError(code=code, message=message)


@server.tool(structured_output=False)
def deep_text(depth: int) -> str:
    """Text (only text: no structured content) that is JSON nested ``depth`` deep."""
    return "[" * depth + "]" * depth


@server.tool()
def spawn(seconds: float) -> int:
    """Start a child that sleeps ``seconds``, sharing our stdio as children do; its pid.

    The child writes ``DIR/child-<pid>`` so that tests can check it is gone."""
    code = f"import os, time; open({str(DIR)!r} + f'/child-{{os.getpid()}}', 'w').close(); time.sleep({seconds})"
    child = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 10
    while not (DIR / f"child-{child.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return child.pid


@server.tool()
def shout(size: int, last: str) -> str:
    """Write about ``size`` bytes of noise to stderr, then the line ``last``."""
    line = "noise " * 100 + "\n"
    for _ in range(size // len(line) + 1):
        sys.stderr.write(line)
    sys.stderr.write(last + "\n")
    sys.stderr.flush()
    return "ok"


if __name__ == "__main__":
    (DIR / f"pid-{os.getpid()}").write_text(str(os.getpid()))
    time.sleep(START_DELAY)
    server.run()
    # stdin closed: we are done. Skip interpreter finalization, which spends
    # most of a second tearing down the SDK's pydantic models while the client
    # waits for the process to end.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
