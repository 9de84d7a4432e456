"""Evaluators: Python functions and LLM judges, as pydantic-evals ``Evaluator`` values.

- :class:`PythonEvaluator` calls ``function(case, output)`` — ``case`` the dataset's
  pydantic-evals ``Case`` (``name``, ``inputs``, ``expected_output``, ``metadata``), ``output``
  the pipeline's value — and takes what it returns as pydantic-evals does: a ``bool`` is an
  assertion, an ``int``/``float`` a score, a ``str`` a label (an ``EvaluationReason`` adds a
  reason, a mapping gives several results). A coroutine function is awaited.
- :class:`JudgeEvaluator` runs a pipeline of a ``.mce`` spec (an ordinary ``llm`` step) on the
  case and the output; its typed verdict becomes the results (:func:`verdict_fields`).
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_json
from pydantic_evals import Case
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext, EvaluatorOutput

from agentmonad import Err
from agentmonad.llm import LLMConfig, Usage, llm_config, usage

__all__ = [
    "EvaluatorError",
    "JudgeEvaluator",
    "PythonEvaluator",
    "judge_input_problem",
    "python_evaluator",
    "verdict_fields",
    "verdict_results",
]

#: The fields a judge's input type may have: what it is shown of a case and its output.
JUDGE_FIELDS = ("input", "output", "expected", "metadata")


class EvaluatorError(Exception):
    """An evaluator cannot be used: a function that cannot be imported, a judge whose types do not fit."""


@dataclass(repr=False)
class PythonEvaluator(Evaluator[Any, Any, Any]):
    """A Python function ``(case, output) -> bool | float | label`` (see the module docstring)."""

    reference: str
    function: Callable[[Case[Any, Any, Any], Any], Any] = field(compare=False)
    #: The dataset's name of each run's case (a repeated case's runs are ``NAME [i/k]``).
    case_names: Mapping[str, str] = field(default_factory=dict, compare=False)

    def get_default_evaluation_name(self) -> str:
        """The function's name: the column of the report."""
        return str(getattr(self.function, "__name__", self.reference))

    def build_serialization_arguments(self) -> dict[str, Any]:
        """The reference only (``module:function``), never the function object."""
        return {"reference": self.reference}

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluatorOutput:
        """``function(case, output)``, awaited when it is a coroutine."""
        case: Case[Any, Any, Any] = Case(
            name=self.case_names.get(ctx.name or "", ctx.name),
            inputs=ctx.inputs,
            expected_output=ctx.expected_output,
            metadata=ctx.metadata,
        )
        result = self.function(case, ctx.output)
        if inspect.isawaitable(result):
            result = await result
        return typing.cast(EvaluatorOutput, result)


def python_evaluator(reference: str) -> PythonEvaluator:
    """The evaluator ``MODULE:FUNCTION`` names (``EvaluatorError`` when it cannot be imported or
    is not callable)."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise EvaluatorError(f"--evaluator {reference}: expected MODULE:FUNCTION")
    try:
        found: object = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except Exception as exc:
        raise EvaluatorError(f"--evaluator {reference}: {type(exc).__name__}: {exc}") from None
    if not callable(found):
        raise EvaluatorError(f"--evaluator {reference}: not a function but {type(found).__name__}")
    return PythonEvaluator(reference, typing.cast(Callable[[Case[Any, Any, Any], Any], Any], found))


class JudgeFailed(Exception):
    """The judge's pipeline ended in an error (the evaluator's failure in the report)."""


@dataclass(repr=False)
class JudgeEvaluator(Evaluator[Any, Any, Any]):
    """An LLM judge: ``pipeline`` of the spec ``reference`` names (``SPEC:PIPELINE``), run on a
    value of its input type built from the case and the output (its fields among ``input``,
    ``output``, ``expected``, ``metadata``); the verdict is turned into results by
    :func:`verdict_results`. The tokens it spends are added to :attr:`spent`, by run."""

    reference: str
    pipeline: str = field(compare=False, default="")
    run: Callable[[Any, Any], Any] = field(compare=False, default=lambda state, value: None)
    state: Any = field(compare=False, default=None)
    input_type: Any = field(compare=False, default=None)
    llm: LLMConfig | None = field(compare=False, default=None)
    #: The tokens the judge spent on each run (by the run's name in the report).
    spent: dict[str, Usage] = field(compare=False, default_factory=dict)

    def get_default_evaluation_name(self) -> str:
        """The judge pipeline's name (a verdict that is one value is named so)."""
        return self.pipeline

    def build_serialization_arguments(self) -> dict[str, Any]:
        """The reference only (``SPEC:PIPELINE``)."""
        return {"reference": self.reference}

    async def evaluate(self, ctx: EvaluatorContext[Any, Any, Any]) -> EvaluatorOutput:
        """Run the judge on the case and the output; its verdict as results."""
        shown = {"input": ctx.inputs, "output": ctx.output, "expected": ctx.expected_output, "metadata": ctx.metadata}
        graded = TypeAdapter(self.input_type).validate_json(to_json(shown, fallback=repr))
        with usage() as used:
            if self.llm is not None:
                with llm_config(self.llm):
                    outcome = await self.run(self.state, graded)
            else:
                outcome = await self.run(self.state, graded)
        self.spent[ctx.name or ""] = used
        if isinstance(outcome, Err):
            raise JudgeFailed(f"{type(outcome.error).__name__}: {outcome.error}")
        return verdict_results(self.pipeline, outcome.value)


def judge_input_problem(input_type: Any) -> str | None:
    """Why a judge's input type cannot be built from a case (None: it can)."""
    names = _field_names(input_type)
    if names is None:
        return f"its input type `{_type_name(input_type)}` is not a class with fields (a pydantic model or dataclass)"
    unknown = [n for n in names if n not in JUDGE_FIELDS]
    if unknown:
        return (f"its input type `{_type_name(input_type)}` has the field(s) {', '.join(f'`{n}`' for n in unknown)}; "
                f"a judge is shown {', '.join(f'`{n}`' for n in JUDGE_FIELDS)}")
    return None


def verdict_fields(verdict_type: Any) -> str | None:
    """Why a judge's verdict type cannot be scores (None: it can): a verdict is a ``bool``
    (an assertion), a number (a score), a ``str``, ``Literal`` or enum (a label), or a class
    whose fields are such values (one result per field; a ``str`` field named ``reason`` is
    the reason of the others)."""
    if _scalar(verdict_type):
        return None
    hints = _field_types(verdict_type)
    if hints is None:
        return f"its verdict type `{_type_name(verdict_type)}` is neither a bool, a number, a label nor a class of them"
    bad = [name for name, hint in hints.items() if not _scalar(hint)]
    if bad:
        return (f"the field(s) {', '.join(f'`{n}`' for n in bad)} of its verdict type `{_type_name(verdict_type)}` "
                f"are not a bool, a number or a label")
    return None


def verdict_results(name: str, verdict: Any) -> EvaluatorOutput:
    """A verdict as pydantic-evals results: one value named ``name``, or one per field."""
    if _scalar_value(verdict):
        return _plain(verdict)
    values = _field_values(verdict)
    reason = values.pop("reason", None)
    reason_text = reason if isinstance(reason, str) else None
    return {key: EvaluationReason(_plain(value), reason_text) for key, value in values.items()}


def _plain(value: Any) -> bool | int | float | str:
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a verdict's value is a bool, a number or a label, not {type(value).__name__}")


def _scalar_value(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str, enum.Enum))


def _scalar(tp: Any) -> bool:
    if tp in (bool, int, float, str):
        return True
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return True
    if typing.get_origin(tp) is typing.Literal:
        return all(isinstance(v, (bool, int, float, str)) for v in typing.get_args(tp))
    return False


def _field_types(tp: Any) -> dict[str, Any] | None:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return {name: info.annotation for name, info in tp.model_fields.items()}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        return {f.name: hints.get(f.name, f.type) for f in dataclasses.fields(tp)}
    return None


def _field_names(tp: Any) -> list[str] | None:
    hints = _field_types(tp)
    return None if hints is None else list(hints)


def _field_values(value: Any) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return {name: getattr(value, name) for name in type(value).model_fields}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"a verdict is a bool, a number, a label or a class of them, not {type(value).__name__}")


def _type_name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp)
