"""agentmonad: the runtime of compiled ``.mce`` pipelines.

- ``Ok``/``Err``/``Outcome``/``Site``: results and where they came from.
- ``AgentMonad``: a lazy, stack-safe ``S -> IO (Outcome)`` with ``par``/``each``.
- ``lift_step``/``lift_fn``: step implementations → Kleisli arrows.
- ``merge_states``, ``Append``, ``Sum``: merging parallel branches' states.
- ``Defect`` and the built-in errors ``MergeConflict``, ``ToolFailed``, ``ToolUnavailable``
  (whose ``kind`` is a ``ToolUnavailableKind``), ``LoopExhausted`` and ``Timeout``.
- ``to_tool_result``/``from_tool_result``: the MCP mapping.
- ``agentmonad.compiled``: what generated code calls.
- ``agentmonad.control``: retry pauses (and their replaceable clock) and deadlines.
- ``agentmonad.llm``: LLM steps (``Model``, ``llm_step``, ``llm_scope``, ``budget``, usage);
  its built-in errors ``LLMFailed``, ``LLMUnavailable`` (with ``LLMFailedKind``,
  ``LLMUnavailableKind``) and ``BudgetExceeded`` are re-exported here.
- ``agentmonad.plans``: checked plans (``spawn``), with ``PlanRejected`` and ``PlanRequest``
  re-exported here.
- ``agentmonad.testing``: scripted models for tests.
"""

from .errors import (
    Defect,
    LoopExhausted,
    MergeConflict,
    Timeout,
    ToolFailed,
    ToolUnavailable,
    ToolUnavailableKind,
)
from .human import BadAnswer, NoAnswer, NoOneToAsk
from .llm.errors import BudgetExceeded, LLMFailed, LLMFailedKind, LLMUnavailable, LLMUnavailableKind
from .mcp.mcp_result import TextContent, ToolResult, from_tool_result, to_tool_result
from .merge import Append, Merge, Reducer, Sum, merge_states
from .monad import AgentMonad
from .outcome import Err, Ok, Outcome, Site
from .plans import PlanRejected, PlanRequest
from .steps import lift_fn, lift_step

__all__ = [
    "Ok",
    "Err",
    "Outcome",
    "Site",
    "AgentMonad",
    "lift_step",
    "lift_fn",
    "Defect",
    "MergeConflict",
    "ToolFailed",
    "ToolUnavailable",
    "ToolUnavailableKind",
    "LoopExhausted",
    "Timeout",
    "LLMFailed",
    "LLMFailedKind",
    "LLMUnavailable",
    "LLMUnavailableKind",
    "BudgetExceeded",
    "PlanRejected",
    "PlanRequest",
    "NoOneToAsk",
    "NoAnswer",
    "BadAnswer",
    "Append",
    "Sum",
    "Reducer",
    "Merge",
    "merge_states",
    "ToolResult",
    "TextContent",
    "to_tool_result",
    "from_tool_result",
]
