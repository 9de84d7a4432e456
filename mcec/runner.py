"""``mcec run``: compile a spec in memory, import it, run one pipeline.

Input and state arrive as JSON and are validated against the pipeline's
declared types with pydantic's ``TypeAdapter`` (dataclasses, models and
builtins alike); the Outcome is printed as JSON. Nothing is written to disk.
"""

from __future__ import annotations

import asyncio
import json
import sys
import types as pytypes
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from agentmonad import Defect, Err, Ok, Outcome

from mcec.codegen import Generated, module_name_for
from mcec.pyobjects import ResolveError, python_type
from mcec.typed import Program


class RunError(Exception):
    """The run could not start: bad input, bad state, or the spec's modules failed to import."""


@dataclass(frozen=True, slots=True)
class RunReport:
    """A finished run: the JSON to print and the exit status (0 Ok, 1 Err or Defect)."""

    payload: dict[str, Any]
    status: int


def load_module(program: Program, generated: Generated) -> pytypes.ModuleType:
    """Execute generated code as a fresh module (registered in ``sys.modules``)."""
    name = module_name_for(program.path)
    module = pytypes.ModuleType(name)
    module.__file__ = f"<mcec {name}>"
    sys.modules[name] = module
    try:
        exec(compile(generated.code, module.__file__, "exec"), module.__dict__)
    except ImportError as exc:
        del sys.modules[name]
        raise RunError(f"the spec's Python modules could not be imported: {exc}") from exc
    return module


def _validated(type_: Any, text: str, what: str) -> Any:
    try:
        return TypeAdapter(type_).validate_json(text)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
        raise RunError(f"invalid {what}: {details}") from exc


def prepare(program: Program, pipeline: str, input_json: str, state_json: str | None) -> tuple[Any, Any]:
    """Validate the input and state JSON against the pipeline's declared types."""
    declared = {p.name: p for p in program.pipelines}
    if pipeline not in declared:
        known = ", ".join(sorted(declared)) or "none"
        raise RunError(f"no pipeline named {pipeline!r} (pipelines: {known})")
    try:
        input_type = python_type(declared[pipeline].sig.input)
        state_type: Any = python_type(program.state) if program.state is not None else type(None)
    except ResolveError as exc:
        raise RunError(str(exc)) from exc
    value = _validated(input_type, input_json, "--input")
    if state_json is not None:
        state = _validated(state_type, state_json, "--state")
    elif program.state is None:
        state = None
    else:
        try:
            state = state_type()  # the declared state class, built with its defaults
        except Exception as exc:
            raise RunError(f"the state type cannot be built without arguments ({exc}); pass --state") from exc
    return value, state


def jsonable(value: Any) -> Any:
    """A JSON-compatible rendering of any value (models, dataclasses, exceptions …)."""
    return to_jsonable_python(value, fallback=repr)


def describe_error(error: object) -> dict[str, Any]:
    """An error value as JSON: its type, its message, and its fields when it has any."""
    described: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    fields = {k: v for k, v in getattr(error, "__dict__", {}).items() if not k.startswith("_")}
    if fields:
        described["fields"] = jsonable(fields)
    return described


def report(outcome: Outcome[Any, Any, Any]) -> RunReport:
    """The JSON report of an Outcome."""
    if isinstance(outcome, Ok):
        return RunReport({"ok": True, "value": jsonable(outcome.value), "state": jsonable(outcome.state)}, 0)
    assert isinstance(outcome, Err)
    error = describe_error(outcome.error)
    if outcome.site is not None:
        error["site"] = str(outcome.site)
    return RunReport({"ok": False, "error": error, "state": jsonable(outcome.state)}, 1)


def run_pipeline(module: pytypes.ModuleType, pipeline: str, state: Any, value: Any) -> RunReport:
    """Run one pipeline of a loaded module to completion."""
    try:
        outcome = asyncio.run(getattr(module, pipeline)(state, value))
    except Defect as defect:
        payload = {
            "ok": False,
            "defect": {
                "message": str(defect),
                "site": str(defect.site) if defect.site is not None else None,
                "cause": describe_error(defect.cause) if defect.cause is not None else None,
            },
            "state": jsonable(defect.state),
        }
        return RunReport(payload, 1)
    return report(outcome)


def dumps(payload: dict[str, Any]) -> str:
    """The report as pretty JSON."""
    return json.dumps(payload, indent=2, ensure_ascii=False)
