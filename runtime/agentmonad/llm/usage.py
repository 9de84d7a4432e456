"""Token usage and budgets, as ``agentmonad.llm`` has always exported them.

They are defined in :mod:`agentmonad.usage` (the core layer: ``budget(N) e`` is a
construct the combinators run); this module re-exports them where the docs and
existing code import them.
"""

from __future__ import annotations

from ..usage import Budget as Budget
from ..usage import ModelUsage as ModelUsage
from ..usage import Usage as Usage
from ..usage import budget as budget
from ..usage import budget_checkpoint as budget_checkpoint
from ..usage import current_usage as current_usage
from ..usage import record_usage as record_usage
from ..usage import usage as usage

__all__ = ["Usage", "ModelUsage", "usage", "current_usage", "record_usage", "Budget", "budget", "budget_checkpoint"]
