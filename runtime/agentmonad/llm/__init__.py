"""LLM steps as typed async steps (docs/language.md §10).

A spec's ``model fast = openai "gpt-4o-mini"`` becomes a :class:`Model` and
``llm decide : Turn -> Answer | SearchArgs = fast "TEMPLATE"`` becomes an
async step made by :func:`llm_step`, much as MCP tools are made by
``agentmonad.tools.tool``::

    fast = Model("fast", "gpt-4o-mini")
    decide: AsyncStep[Chat, Turn, Answer | SearchArgs, LLMFailed | LLMUnavailable] = llm_step(
        fast, "Question: {{ question }}", Answer | SearchArgs, name="decide"
    )

Every pipeline that reaches an LLM step runs its body inside
:func:`llm_scope`, which owns one ``AsyncOpenAI`` client per model for the
run and counts its token usage; ``budget(N) e`` is ``async with budget(N):``
around the body of e.

The parts:

- :mod:`~agentmonad.llm.config` — :class:`Model`, the run's configuration
  (:class:`LLMConfig`, :class:`ModelSettings`, :func:`llm_config`), keys as
  :class:`Secret`;
- :mod:`~agentmonad.llm.options` — ``mcec run --model`` options
  (``parse_model_option``; not imported here: it imports :mod:`agentmonad.testing`,
  which imports this package);
- :mod:`~agentmonad.llm.prompt` — templates (:class:`Prompt`) and, for the
  checker, :func:`template_variables` (MCE023);
- :mod:`~agentmonad.llm.output` — output types, and for the checker
  :func:`output_problem` (MCE024);
- :mod:`~agentmonad.llm.scope` — :func:`llm_scope`, :class:`LLMRun`;
- :mod:`~agentmonad.llm.usage` — :class:`Usage`, :func:`usage`,
  :func:`budget`, :func:`record_usage` (defined in the core, :mod:`agentmonad.usage`);
- :mod:`~agentmonad.llm.wire` — :class:`LLMRequest`, :class:`LLMReply`,
  the :class:`Backend` protocol (what scripted models implement);
- :mod:`~agentmonad.llm.errors` — :class:`LLMFailed`, :class:`LLMUnavailable`,
  :class:`BudgetExceeded` (defined in the core, :mod:`agentmonad.errors`), :class:`PromptError`.

Importing this package needs only the standard library: ``jinja2`` and
``pydantic`` are imported when the first step is built, ``openai`` when a
real model is first called.
"""

from .config import (
    LLMConfig,
    Model,
    ModelSettings,
    Secret,
    current_config,
    llm_config,
)
from .errors import BudgetExceeded, LLMFailed, LLMFailedKind, LLMUnavailable, LLMUnavailableKind, PromptError
from .output import output_problem
from .prompt import Prompt, TemplateInfo, template_variables
from .scope import LLMRun, current_run, llm_scope
from .step import LLMStep, llm_step
from .usage import Budget, ModelUsage, Usage, budget, budget_checkpoint, current_usage, record_usage, usage
from .wire import Backend, LLMReply, LLMRequest, ToolCall, ToolSpec

__all__ = [
    "Model",
    "ModelSettings",
    "LLMConfig",
    "Secret",
    "llm_config",
    "current_config",
    "llm_step",
    "LLMStep",
    "llm_scope",
    "LLMRun",
    "current_run",
    "Usage",
    "ModelUsage",
    "usage",
    "current_usage",
    "record_usage",
    "Budget",
    "budget",
    "budget_checkpoint",
    "Prompt",
    "TemplateInfo",
    "template_variables",
    "output_problem",
    "Backend",
    "LLMRequest",
    "LLMReply",
    "ToolCall",
    "ToolSpec",
    "LLMFailed",
    "LLMFailedKind",
    "LLMUnavailable",
    "LLMUnavailableKind",
    "BudgetExceeded",
    "PromptError",
]
