"""The build-time check of a durable run (docs/language.md §13): MCE033.

A durable run records, as typed JSON through pydantic (never pickle), every
value that crosses the effect seam: each effect's value (a step's, a tool's,
an ``llm`` step's output), each error it fails with, and the state after it;
and the run's own input and outcome. :func:`check_durable` asks, before the
run starts, whether each of those *types* round-trips: pydantic must build a
schema for it and render that schema as JSON, in both directions
(``TypeAdapter(t).json_schema(mode=…)``) — a probe of the type, not of a
value, so a run never finds out half-way that its fifth step's output cannot
be written down. What is checked is what the pipeline reaches: the steps,
tools and ``llm`` steps in its body and in the pipelines it calls, the entries
of a toolbox it spawns plans over, and the pipelines of other specs it uses
(with their state). Pure ``fn``s re-run on replay and record nothing.

Unlike the rest of the checker, this imports the spec's Python classes
(:mod:`mcec.check.pyclasses`): pydantic needs the real ones. It runs only when
a durable run is asked for (``mcec check --durable``, ``mcec run --durable``).

Errors are recorded by their class and fields: the runtime's own errors always
can be; a user's error class that is a dataclass or pydantic model must
round-trip like any value; a plain ``Exception`` subclass is recorded as its
``args`` (its message), which needs it not to define an ``__init__`` of its own.
"""

from __future__ import annotations

import collections.abc
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.pyclasses import ResolveError, class_fields, class_kind, python_type
from mcec.check.typed import (
    Program,
    RefKind,
    TLlm,
    TAsk,
    TPipeline,
    TRef,
    TSpawn,
    TStep,
    TTool,
    TUsed,
    children,
    references,
)
from mcec.check.types import ClassRef, Type, members
from mcec.diagnostics import Diagnostic
from mcec.span import Span

__all__ = ["check_durable", "recorded_problem"]


@dataclass(frozen=True, slots=True)
class _Recorded:
    """One value a durable run records: its spec type, what it is (``the output of step
    `extract```), and the span of the declaration that gives it the type."""

    type: Type
    role: str
    span: Span


def check_durable(program: Program, pipeline_name: str) -> list[Diagnostic]:
    """MCE033 at each declaration whose type a durable run of ``pipeline_name`` cannot record,
    naming the type and why; an empty list when every recorded value round-trips as JSON.

    ``KeyError`` when ``program`` has no pipeline of that name (the caller names the choices)."""
    pipeline = next((p for p in program.pipelines if p.name == pipeline_name), None)
    if pipeline is None:
        raise KeyError(pipeline_name)
    problems: dict[Type, str | None] = {}
    found: dict[Span, Diagnostic] = {}  # one per declaration: the first role that reaches it names it
    for recorded in _recorded(program, pipeline, _Spans.of(program), set()):
        if recorded.type not in problems:
            problems[recorded.type] = _type_problem(recorded.type)
        why = problems[recorded.type]
        if why is not None and recorded.span not in found:
            found[recorded.span] = report.not_recordable(recorded.role, recorded.type, why, recorded.span)
    return sorted(found.values(), key=Diagnostic.sort_key)


def recorded_problem(tp: Any) -> str | None:
    """Why values of the Python type ``tp`` cannot be recorded as JSON (``a `Callable```,
    ```Doc.hook` is a `Callable```…), or None when they can."""
    if not _fails(tp):
        return None
    return _why(tp, set())


# ---------------------------------------------------------------- what a run records


class _Spans:
    """Where each declaration of a spec writes its types (from the syntax tree of its file):
    the checked program keeps only whole-declaration spans."""

    def __init__(self, module: syntax.Module | None) -> None:
        self.state: Span | None = None
        self.errors: dict[str, Span] = {}
        self.decls: dict[str, syntax.Decl] = {}
        for decl in module.decls if module is not None else ():
            # Only three kinds of declaration write a recorded type; a new kind of effect is a new
            # RefKind, which `_reached` must handle (its match ends in assert_never).
            match decl:
                case syntax.StateDecl(type=written):
                    self.state = written.span
                case syntax.ErrorDecl(type=written):
                    self.errors[_text(written)] = written.span
                case syntax.StepDecl(name=name) | syntax.ToolDecl(name=name) | syntax.LlmDecl(name=name):
                    self.decls[name.text] = decl
                case syntax.PipelineDecl(name=name):
                    self.decls[name.text] = decl
                case _:
                    pass

    @classmethod
    def of(cls, program: Program) -> _Spans:
        """The spans of ``program``'s file, parsed again (the file a declaration's span is in)."""
        source = next((decl.span.source for decl in program.decls if hasattr(decl, "span")), None)
        if source is None:
            return cls(None)
        return cls(syntax.parse(source).module)

    def output(self, name: str, fallback: Span) -> Span:
        """The output type of declaration ``name`` as written, else ``fallback``."""
        match self.decls.get(name):
            case syntax.StepDecl(output=written) | syntax.ToolDecl(output=written) | syntax.LlmDecl(output=written):
                return written.span
            case syntax.PipelineDecl(output=written):
                return written.span
            case _:
                return fallback

    def input(self, name: str, fallback: Span) -> Span:
        """The input type of pipeline ``name`` as written, else ``fallback``."""
        match self.decls.get(name):
            case syntax.PipelineDecl(input=written):
                return written.span
            case _:
                return fallback

    def error(self, error: Type, fallback: Span) -> Span:
        """The ``error T`` declaration of ``error``, else ``fallback`` (the built-in errors have none)."""
        spelling = error.spelling if isinstance(error, ClassRef) else str(error)
        return self.errors.get(spelling, fallback)


def _text(written: syntax.TypeExpr) -> str:
    """An error type's name as written (the checker allows only a name there)."""
    match written:
        case syntax.Name(text=text):
            return text
        case syntax.QualName():
            return written.dotted
        case _:
            return ""  # not a name: no error type is written so


def _recorded(program: Program, pipeline: TPipeline, spans: _Spans, seen: set[tuple[str, str]]) -> Iterator[_Recorded]:
    """Every value a durable run of ``pipeline`` records: its input and outcome, the state, and
    what each effect it reaches gives; pipelines it calls, and other specs' pipelines it uses,
    are walked once each."""
    seen.add((program.path, pipeline.name))
    if program.state is not None:
        yield _Recorded(program.state, "the state", spans.state or pipeline.span)
    yield _Recorded(pipeline.sig.input, f"the input of pipeline `{pipeline.name}`", spans.input(pipeline.name, pipeline.span))
    yield _Recorded(pipeline.sig.output, f"the output of pipeline `{pipeline.name}`", spans.output(pipeline.name, pipeline.span))
    for error in sorted(pipeline.sig.errors, key=str):
        yield _Recorded(error, f"error `{error}` of pipeline `{pipeline.name}`", spans.error(error, pipeline.span))
    for ref in _effects(program, pipeline):
        yield from _reached(program, ref, spans, seen)


def _effects(program: Program, pipeline: TPipeline) -> Iterator[TRef]:
    """The references in ``pipeline``'s body, and the entries of every toolbox it spawns plans
    over (a plan may run any of them)."""
    yield from references(pipeline.body)
    stack = [pipeline.body]
    while stack:
        node = stack.pop()
        if isinstance(node, TSpawn):
            toolbox = next((t for t in program.toolboxes if t.name == node.toolbox), None)
            if toolbox is not None:
                yield from toolbox.entries
        stack.extend(children(node))


def _reached(program: Program, ref: TRef, spans: _Spans, seen: set[tuple[str, str]]) -> Iterator[_Recorded]:
    """What a run records of one reference: an effect's output and errors, or what a called
    pipeline records."""
    match ref.kind:
        case RefKind.STEP | RefKind.TOOL | RefKind.LLM | RefKind.ASK:
            declared: list[TStep | TTool | TLlm | TAsk] = [*program.steps, *program.tools, *program.llms, *program.asks]
            decl = next((d for d in declared if d.name == ref.name), None)
            span = decl.span if decl is not None else ref.span
            yield _Recorded(ref.sig.output, f"the output of {ref.kind.word} `{ref.name}`", spans.output(ref.name, span))
            for error in sorted(ref.sig.errors, key=str):
                yield _Recorded(error, f"error `{error}` of {ref.kind.word} `{ref.name}`", spans.error(error, span))
        case RefKind.FN:
            return  # pure: re-run on replay, nothing recorded
        case RefKind.PIPELINE:
            yield from _called(program, ref.name, spans, seen)
        case _:
            assert_never(ref.kind)


def _called(program: Program, name: str, spans: _Spans, seen: set[tuple[str, str]]) -> Iterator[_Recorded]:
    """What a called pipeline records: a pipeline of this spec, or one of another spec (walked in
    that spec, its diagnostics shown at the import that uses it)."""
    local = next((p for p in program.pipelines if p.name == name), None)
    if local is not None:
        if (program.path, name) not in seen:
            yield from _recorded(program, local, spans, seen)
        return
    used: TUsed | None = next((u for u in program.uses if u.name == name), None)
    if used is None:
        return
    target = next((p for p in used.program.pipelines if p.name == used.pipeline), None)
    if target is None or (used.program.path, used.pipeline) in seen:
        return
    for inner in _recorded(used.program, target, _Spans.of(used.program), seen):
        yield _Recorded(inner.type, f"{inner.role} in {used.spec} (used as `{name}`)", used.span)


# ---------------------------------------------------------------- can a type be recorded


def _type_problem(tp: Type) -> str | None:
    """Why a spec type's values cannot be recorded, or None."""
    try:
        python = python_type(tp)
    except ResolveError as exc:
        return f"its class cannot be imported ({exc})"
    if all(isinstance(m, ClassRef) and m.is_runtime for m in members(tp)):
        return None  # the runtime's own errors: recorded by their fields
    error = _error_problem(python)
    if error is not _NOT_AN_ERROR:
        return error
    return recorded_problem(python)


#: What :func:`_error_problem` says of a class that is no exception.
_NOT_AN_ERROR = "not an error"


def _error_problem(python: Any) -> str | None:
    """For an exception class: why it cannot be recorded, or None; else :data:`_NOT_AN_ERROR`."""
    if not (isinstance(python, type) and issubclass(python, BaseException)):
        return _NOT_AN_ERROR
    if class_kind(python) == "exception" and not class_fields(python):
        if "__init__" in vars(python) or any("__init__" in vars(b) for b in python.__mro__[1:] if b.__module__ != "builtins"):
            return (
                f"an exception class with an `__init__` of its own, whose arguments cannot be read back "
                "from its `args` (make it a dataclass, so that its fields are recorded)"
            )
        return None  # recorded as its args
    return recorded_problem(python)


def _fails(tp: Any) -> bool:
    """True when pydantic cannot make a JSON schema of ``tp``, to validate or to serialise."""
    return _schema_error(tp) is not None


def _schema_error(tp: Any) -> str | None:
    """Pydantic's own first line of why it cannot make a JSON schema of ``tp``, or None."""
    from pydantic import TypeAdapter

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(tp)
        adapter.json_schema(mode="validation")
        adapter.json_schema(mode="serialization")
    except Exception as exc:  # pydantic's schema errors, and whatever a user's class raises making one
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return None


def _why(tp: Any, seen: set[int]) -> str:
    """The first part of a failing type that fails on its own, in words: the fields on the way
    to it (```Bundle.items` → `Locked.guard` is …``), then what it is."""
    path: list[str] = []
    reason = _culprit(tp, seen, path)
    return f"{' → '.join(path)} is {reason}" if path else reason


def _culprit(tp: Any, seen: set[int], path: list[str]) -> str:
    """What fails in ``tp``, appending the fields on the way to it to ``path``."""
    origin = typing.get_origin(tp)
    if tp is collections.abc.Callable or origin is collections.abc.Callable or tp is typing.Callable:
        return "a `Callable`"
    if origin is not None:
        for arg in typing.get_args(tp):
            if arg is not Ellipsis and not isinstance(arg, (str, int)) and _fails(arg):
                return _culprit(arg, seen, path)
        return f"`{tp}`, which pydantic cannot describe: {_schema_error(tp)}"
    if not isinstance(tp, type):
        return f"`{tp}`, which pydantic cannot describe: {_schema_error(tp)}"
    name = tp.__qualname__
    kind = class_kind(tp)
    if kind == "class" or (kind == "exception" and not class_fields(tp)):
        return f"`{name}`, an arbitrary class without a schema (not a dataclass, pydantic model, TypedDict or enum)"
    if id(tp) not in seen:
        seen.add(id(tp))
        for field, annotation in class_fields(tp):
            if _fails(annotation):
                path.append(f"`{name}.{field}`")
                return _culprit(annotation, seen, path)
    return f"`{name}` ({kind}), which pydantic cannot describe: {_schema_error(tp)}"
