"""MCP tools as typed async steps (docs/language.md §9): a subpackage above the core.

- :mod:`~agentmonad.mcp.tools` — :class:`StdioServer`, :func:`tool`,
  :func:`tool_scope`, :func:`call_tool` (what generated code calls);
- :mod:`~agentmonad.mcp.mcp_result` — a step's ``Outcome`` to and from an MCP
  ``CallToolResult`` (:class:`ToolResult`, :func:`to_tool_result`,
  :func:`from_tool_result`);
- :mod:`~agentmonad.mcp._stdio` — the runtime's own stdio transport.

The core (combinators, interpreter, compiled helpers) imports nothing from
here; this package imports the core. Importing it needs only the standard
library: ``mcp`` and ``anyio`` are imported when a server is first used.
"""

from __future__ import annotations

from .mcp_result import TextContent, ToolResult, from_tool_result, to_jsonable, to_tool_result
from .tools import StdioServer, ToolStep, call_tool, tool, tool_scope

__all__ = [
    "StdioServer",
    "ToolStep",
    "tool",
    "tool_scope",
    "call_tool",
    "ToolResult",
    "TextContent",
    "to_tool_result",
    "from_tool_result",
    "to_jsonable",
]
