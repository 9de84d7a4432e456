"""An ``ask`` in ``mcec serve``: moved to the runtime, :mod:`agentmonad.mcp.elicit` (a compiled
module served with ``python -m agentmonad serve`` asks its questions the same way); kept here for
the imports that name it."""

from __future__ import annotations

from agentmonad.mcp.elicit import ElicitationForm, McpHuman, elicitation_form

__all__ = ["ElicitationForm", "McpHuman", "elicitation_form"]
