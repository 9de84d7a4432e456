"""Implementations that name the runtime's built-in errors through its re-exports (issue 29,
item 10): each is the one class wherever it is imported from — ``agentmonad.llm.LLMUnavailable``
is ``agentmonad.LLMUnavailable``, defined in ``agentmonad.llm.errors``."""

from __future__ import annotations

import agentmonad.llm
from agentmonad import Outcome
from agentmonad.llm import LLMFailed
from agentmonad.plans import PlanRejected

from agents.errors_again import BudgetExceeded
from agents.models import Chat, Turn


def ask(state: Chat, value: Turn) -> Outcome[Chat, agentmonad.llm.LLMUnavailable | LLMFailed, Turn]:
    raise NotImplementedError


def planned(state: Chat, value: Turn) -> Outcome[Chat, PlanRejected | BudgetExceeded, Turn]:
    raise NotImplementedError
