"""The compiler's version, in the lowest layer: the facade, the generated modules' headers, the
build state and the MCP server all name it, and none of them may import the facade."""

from __future__ import annotations

__version__ = "0.1.0"
