"""The research example's tool server: a real MCP server over stdio.

Run as ``python -m examples.research.search_server`` (from the repository
root; ``research.mce`` declares it with ``server search = stdio "…"``). Built
with the MCP SDK's ``MCPServer``; deterministic and offline:

- ``search(query)``: the facts of a small table whose key occurs in the query,
  as structured content ``{"query": …, "hits": [...]}`` (a ``SearchHits``);
- ``add(a, b)``: the sum of two integers (structured ``{"result": n}``).

Asking it for any other tool (the planner's ``guess``) is not possible: it is
not in ``tools/list``.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer

from examples.research.impl import SearchHits

#: The fact table behind ``search``: a fact is a hit when its key occurs in the query.
FACTS: dict[str, str] = {
    "monad": "A monad sequences computations that carry context: state, errors, effects.",
    "mcp": "The Model Context Protocol connects agents to tools over JSON-RPC.",
    "python": "Python is a programming language that lets you work quickly.",
}

server = MCPServer("search", instructions="Offline fact search and arithmetic for the mcec research example.")


@server.tool()
def search(query: str) -> SearchHits:
    """Facts whose key occurs in ``query`` (case-insensitive), in key order."""
    lowered = query.lower()
    return SearchHits(query=query, hits=[fact for key, fact in sorted(FACTS.items()) if key in lowered])


@server.tool()
def add(a: int, b: int) -> int:
    """The sum of two integers."""
    return a + b


def main() -> None:
    """Serve over stdio until the client closes stdin, then exit at once."""
    server.run()
    # Skip interpreter finalization: tearing down the SDK's many pydantic
    # models takes most of a second, and the client waits for the process to
    # end when a run closes its tool scope. Nothing here needs cleaning up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
