"""The ReAct benchmark's tool server: a real MCP server over stdio (the MCP SDK's ``MCPServer``).

``python -m benchmarks.react.tool_server`` (from the repository root). Every
call waits ``$MCEC_BENCH_TOOL_DELAY`` seconds (default 0.005) before it answers:
the tools' own latency, the same for every agent that calls them.

- ``search(query)``: the facts whose key occurs in the query, as structured
  content ``{"query": …, "hits": [...]}``;
- ``add(a, b)``: the sum of two integers (structured ``{"result": n}``).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer

from benchmarks.react.impl import Hits

DELAY = float(os.environ.get("MCEC_BENCH_TOOL_DELAY", "0.005"))

FACTS: dict[str, str] = {
    "monad": "A monad sequences computations that carry context.",
    "mcp": "The Model Context Protocol connects agents to tools over JSON-RPC.",
}

server = MCPServer("bench-tools", instructions="Offline search and arithmetic for the mcec ReAct benchmark.")


@server.tool()
async def search(query: str) -> Hits:
    """Facts whose key occurs in ``query`` (case-insensitive), in key order."""
    await asyncio.sleep(DELAY)
    lowered = query.lower()
    return Hits(query=query, hits=[fact for key, fact in sorted(FACTS.items()) if key in lowered])


@server.tool()
async def add(a: int, b: int) -> int:
    """The sum of two integers."""
    await asyncio.sleep(DELAY)
    return a + b


def main() -> None:
    """Serve over stdio until the client closes stdin, then exit at once (no slow finalization)."""
    server.run()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
