"""``mcec run``: compile a spec in memory, import it, run one pipeline.

Input and state arrive as JSON and are validated against the pipeline's
declared types with pydantic's ``TypeAdapter`` (dataclasses, models and
builtins alike); the Outcome is printed as JSON. Nothing is written to disk.
"""

from __future__ import annotations

import ast
import difflib
import json
import os
import sys
import traceback
import types as pytypes
from typing import Any, Final

from agentmonad import Defect, Outcome, Site
from agentmonad.context import HumanInput
from agentmonad.events import EventSink
from agentmonad.report import RunReport, defect_payload, describe_error, jsonable, report, run_function, safe_text, shown
from agentmonad.llm import LLMConfig
from agentmonad.llm.options import parse_model_option

from mcec.codegen import Generated, module_name_for
from mcec.diagnostics import Code, Diagnostic, error
from mcec.run.pyobjects import ResolveError, python_type
from mcec.sites import site_of
from mcec.span import Span
from mcec.check.typed import Program, TUsed


class RunError(Exception):
    """The run could not start: bad input, bad state, or the spec's modules failed to import."""


class LoadError(RunError):
    """Executing the generated module failed in the user's code (a missing
    implementation, a module that raises at import, …): carries the diagnostic,
    at the spec declaration or import whose generated line failed."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


#: The code of a spec whose Python side does not load: a module or attribute it
#: names does not exist, or importing a module it names raised. (The reference's
#: MCE002, "unknown name", is the closest registered code; see docs/language.md §8.)
LOAD_FAILED_CODE: Final[Code] = "MCE007"


def load_module(program: Program, generated: Generated) -> pytypes.ModuleType:
    """Execute generated code as a fresh module (registered in ``sys.modules``).

    Raises :class:`LoadError` when that fails, which is always the user's code
    failing: the generated module itself only imports and binds names. The
    modules of the specs it uses (docs/language.md §11) are generated from those
    specs and executed first, under their own names, so a run uses every spec as
    it is now, not the files beside them (which may be missing or stale).
    """
    from mcec.codegen import generate

    for used in _used_first(program):
        if used.module not in sys.modules or getattr(sys.modules[used.module], "__mcec_spec__", None) != used.spec:
            _execute(used.program, generate(used.program), used.module).__mcec_spec__ = used.spec  # type: ignore[attr-defined]
    return _execute(program, generated, module_name_for(program.path))


def _used_first(program: Program) -> list[TUsed]:
    """The pipelines' specs ``program`` uses, directly or through others, each once, a spec
    after the ones it uses (the checker has ruled cycles out)."""
    order: list[TUsed] = []
    seen: set[str] = set()
    stack: list[tuple[TUsed, bool]] = [(used, False) for used in reversed(program.uses)]
    while stack:
        used, expanded = stack.pop()
        if expanded:
            order.append(used)
            continue
        if used.module in seen:
            continue
        seen.add(used.module)
        stack.append((used, True))
        stack.extend((inner, False) for inner in reversed(used.program.uses))
    return order


def _execute(program: Program, generated: Generated, name: str) -> pytypes.ModuleType:
    """Run ``generated`` as the module ``name`` (registered in ``sys.modules``)."""
    module = pytypes.ModuleType(name)
    module.__file__ = f"<mcec {name}>"
    sys.modules[name] = module
    try:
        exec(compile(generated.code, module.__file__, "exec"), module.__dict__)
    except Exception as exc:
        del sys.modules[name]
        raise LoadError(load_diagnostic(exc, program, generated, module.__file__)) from exc
    return module


def load_diagnostic(exc: BaseException, program: Program, generated: Generated, filename: str) -> Diagnostic:
    """The diagnostic for ``exc``, raised while executing the generated module
    (compiled as ``filename``): at the spec construct behind the failing line,
    with the cause and where in the user's code it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    generated_lines = [f.lineno for f in frames if f.filename == filename and f.lineno is not None]
    line = generated_lines[-1] if generated_lines else None
    entry = generated.source_map.entry(line) if line is not None else None
    span = entry.span if entry is not None else Span.file_start(program.path)
    code_line = generated.code.splitlines()[line - 1].lstrip() if line is not None else ""
    cause = f"{type(exc).__name__}: {safe_text(exc)}"
    owner = getattr(exc, "obj", None)
    if isinstance(exc, AttributeError) and isinstance(owner, pytypes.ModuleType):
        missing = getattr(exc, "name", None)
        message = f"the implementation does not exist: module `{owner.__name__}` has no attribute `{missing}`"
        close = difflib.get_close_matches(str(missing), [n for n in dir(owner) if not n.startswith("__")], n=3)
        hint = f"did you mean {', '.join(f'`{c}`' for c in close)}?" if close else None
        return error(LOAD_FAILED_CODE, message, span, help=hint)
    where = _raised_at(exc, frames, filename)
    imported = _imported_module(code_line)
    if imported is not None:
        message = f"importing `{imported}` failed: {cause}"
    else:
        message = f"loading this declaration's Python object failed: {cause}"
    return error(LOAD_FAILED_CODE, message, span, help=f"raised at {where}" if where else None)


def _imported_module(code_line: str) -> str | None:
    """The module a generated import line imports (None: not an import)."""
    try:
        statement = ast.parse(code_line).body[0]
    except (SyntaxError, IndexError):
        return None
    if isinstance(statement, ast.ImportFrom):
        return statement.module
    if isinstance(statement, ast.Import):
        return statement.names[0].name
    return None


def _raised_at(exc: BaseException, frames: traceback.StackSummary, filename: str) -> str | None:
    """``file:line`` in the user's code where ``exc`` was raised (not mcec's or importlib's)."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{_shown(exc.filename)}:{exc.lineno}"
    inside = [i for i, frame in enumerate(frames) if frame.filename == filename]
    deeper = frames[inside[-1] + 1 :] if inside else []  # below the generated line: the user's code
    for frame in reversed(deeper):
        if not frame.filename.startswith("<frozen "):
            return f"{_shown(frame.filename)}:{frame.lineno}"
    return None


def _shown(path: str) -> str:
    """A path relative to the working directory when it is inside it."""
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _validated(type_: Any, text: str, what: str) -> Any:
    """:func:`agentmonad.spec.validated`, its error a :class:`RunError`."""
    from agentmonad.spec import InputError, validated

    try:
        return validated(type_, text, what)
    except InputError as exc:
        raise RunError(str(exc)) from exc


def prepare(program: Program, pipeline: str, input_json: str, state_json: str | None) -> tuple[Any, Any]:
    """Validate the input and state JSON against the pipeline's declared types
    (:func:`agentmonad.spec.run_values`, as a compiled module's ``SPEC_INFO.prepare`` does)."""
    from agentmonad.spec import InputError, run_values

    declared = {p.name: p for p in program.pipelines}
    if pipeline not in declared:
        known = ", ".join(sorted(declared)) or "none"
        raise RunError(f"no pipeline named {pipeline!r} (pipelines: {known})")
    try:
        input_type = python_type(declared[pipeline].sig.input)
        state_type: Any = python_type(program.state) if program.state is not None else None
    except ResolveError as exc:
        raise RunError(str(exc)) from exc
    except Exception as exc:  # importing a module of the spec raised (load_module reports it at its import)
        raise RunError(f"the spec's types could not be loaded: {type(exc).__name__}: {safe_text(exc)}") from exc
    try:
        return run_values(input_type, state_type, input_json, state_json)
    except InputError as exc:
        raise RunError(str(exc)) from exc


def run_pipeline(
    module: pytypes.ModuleType,
    pipeline: str,
    state: Any,
    value: Any,
    llm: LLMConfig | None = None,
    *,
    events: EventSink | None = None,
    site: Site | None = None,
    human: HumanInput | None = None,
) -> RunReport:
    """Run one pipeline of a loaded module to completion.

    With ``llm`` (a spec with llm steps), the run is under that configuration
    (``mcec run --model``) and the report carries the run's token ``usage``.
    With ``events``, the run tells that sink what it does (``agentmonad.events``:
    ``mcec run --trace``, the progress display), as a run of ``pipeline``
    declared at ``site``; without, nothing is attached (the run's fast path). With ``human``,
    the run's ``ask`` steps ask it (docs/language.md §15: ``mcec run`` asks on the terminal).
    """
    return run_function(getattr(module, pipeline), pipeline, state, value, llm=llm, site=site, events=events,
                        human=human)


def pipeline_site(program: Program, pipeline: str) -> Site | None:
    """Where ``pipeline`` is declared, as the runtime's sites say it (the file's name)."""
    for declared in program.pipelines:
        if declared.name == pipeline:
            span = declared.span
            return site_of(pipeline, span)
    return None


def defect_report(defect: Defect) -> RunReport:
    """The JSON report of a run that ended with a Defect."""
    return RunReport(defect_payload(defect), 1)


def llm_run_config(program: Program, options: list[str]) -> LLMConfig | None:
    """The configuration ``mcec run --model NAME=VALUE …`` gives a spec's models (None: the spec
    has no llm step). Raises :class:`RunError` for a malformed option or an undeclared model."""
    if not program.llms:
        if options:
            raise RunError("--model: the spec declares no llm step")
        return None
    declared = [m.name for m in program.models]
    entries: dict[str, Any] = {}
    for option in options:
        try:
            name, entry = parse_model_option(option)
        except (ValueError, ImportError) as exc:
            raise RunError(f"--model {option}: {exc}") from None
        if name != "*" and name not in declared:
            close = difflib.get_close_matches(name, declared, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else f" (it declares {', '.join(declared)})"
            raise RunError(f"--model {option}: the spec declares no model `{name}`{hint}")
        entries[name] = entry
    return LLMConfig(models=entries)


def dumps(payload: dict[str, Any]) -> str:
    """The report as pretty JSON."""
    return json.dumps(payload, indent=2, ensure_ascii=False)
