"""A finished run as the JSON both command lines print (``mcec run``, ``python -m agentmonad run``,
a durable run's Outcome): ``{"ok": true, "value", "state"}``, ``{"ok": false, "error", "state"}``
or ``{"ok": false, "defect", "state"}``, with ``usage`` when models were called."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from .context import HumanInput, hooks
from .errors import Defect
from .events import EventSink
from .outcome import Err, Ok, Outcome, Site

__all__ = ["RunReport", "defect_payload", "describe_error", "jsonable", "report", "run_function", "safe_text", "shown"]


@dataclass(frozen=True, slots=True)
class RunReport:
    """A finished run: the JSON to print and the exit status (0 Ok, 1 Err or Defect)."""

    payload: dict[str, Any]
    status: int


def safe_text(value: object) -> str:
    """``str(value)``, even when its ``__str__`` raises."""
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__} whose str() failed>"


def jsonable(value: Any) -> Any:
    """A JSON-compatible rendering of any value (models, dataclasses, exceptions …): what
    pydantic cannot convert is its repr. Raises when the value cannot be converted at all
    (nested too deep, a ``__repr__`` that raises): a server turns that into an error result,
    a run's report into a note (:func:`shown`)."""
    return to_jsonable_python(value, fallback=repr)


def shown(value: Any) -> Any:
    """:func:`jsonable`, or a note naming the value's type when it cannot be converted: a
    run's report always prints."""
    try:
        return jsonable(value)
    except Exception:
        return f"<{type(value).__name__} that cannot be shown as JSON>"


def describe_error(error: object) -> dict[str, Any]:
    """An error value as JSON: its type, its message, and its fields when it has any."""
    described: dict[str, Any] = {"type": type(error).__name__, "message": safe_text(error)}
    try:
        attributes = dict(getattr(error, "__dict__", {}))
    except Exception:
        attributes = {}
    fields = {k: v for k, v in attributes.items() if isinstance(k, str) and not k.startswith("_")}
    if fields:
        described["fields"] = shown(fields)
    return described


def report(outcome: Outcome[Any, Any, Any]) -> RunReport:
    """The JSON report of an Outcome."""
    if isinstance(outcome, Ok):
        return RunReport({"ok": True, "value": shown(outcome.value), "state": shown(outcome.state)}, 0)
    assert isinstance(outcome, Err)
    error = describe_error(outcome.error)
    if outcome.site is not None:
        error["site"] = str(outcome.site)
    return RunReport({"ok": False, "error": error, "state": shown(outcome.state)}, 1)


def defect_payload(defect: Defect) -> dict[str, Any]:
    """The report of a run that ended with ``defect``."""
    return {
        "ok": False,
        "defect": {
            "message": safe_text(defect),
            "site": str(defect.site) if defect.site is not None else None,
            "cause": describe_error(defect.cause) if defect.cause is not None else None,
        },
        "state": shown(defect.state),
    }


def run_function(function: Any, name: str, state: Any, value: Any, *, llm: Any = None, site: Site | None = None,
                 events: EventSink | None = None, human: HumanInput | None = None) -> RunReport:
    """Run a pipeline's generated ``function`` (``name``, declared at ``site``) on ``state`` and
    ``value`` to completion in a new event loop: its report. ``llm``: the
    :class:`~agentmonad.llm.LLMConfig` its model calls run under (the report then carries their
    ``usage``); ``events``/``human``: attached to the run (its fast path attaches nothing)."""
    from .observe import run_observed

    if events is not None or human is not None:
        with hooks(events=events, human=human):
            return run_function(function, name, state, value, llm=llm, site=site)
    if llm is not None:
        from .llm import llm_config, usage

        with llm_config(llm), usage() as used:
            result = run_function(function, name, state, value, site=site)
        result.payload["usage"] = used.as_dict()
        return result
    try:
        outcome = asyncio.run(run_observed(name, site, lambda: function(state, value)))
    except Defect as defect:
        return RunReport(defect_payload(defect), 1)
    return report(outcome)
