"""A project module that passes a runtime error on (``agents.reexports`` imports it from here)."""

from agentmonad.llm import BudgetExceeded

__all__ = ["BudgetExceeded"]
