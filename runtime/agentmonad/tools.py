"""MCP tools, where the docs, the examples and modules generated before
``agentmonad.mcp`` existed import them: re-exports of :mod:`agentmonad.mcp.tools`."""

from __future__ import annotations

from .mcp.tools import DEFAULT_START_TIMEOUT as DEFAULT_START_TIMEOUT
from .mcp.tools import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from .mcp.tools import START_TIMEOUT_ENV as START_TIMEOUT_ENV
from .mcp.tools import TIMEOUT_ENV as TIMEOUT_ENV
from .mcp.tools import StdioServer as StdioServer
from .mcp.tools import ToolStep as ToolStep
from .mcp.tools import call_tool as call_tool
from .mcp.tools import tool as tool
from .mcp.tools import tool_scope as tool_scope

__all__ = [
    "StdioServer",
    "ToolStep",
    "tool",
    "tool_scope",
    "call_tool",
    "DEFAULT_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "TIMEOUT_ENV",
    "START_TIMEOUT_ENV",
]
