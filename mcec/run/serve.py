"""Pipelines as MCP tools over stdio: the core of ``mcec serve`` (the command is :mod:`mcec.cli.serve`).

What needs the checked program is here (which pipelines are entries, their descriptions, the state
type); how tools are called and served is the runtime's, :mod:`agentmonad.mcp.server`, shared with
``python -m agentmonad serve``, which serves a compiled module without the compiler.

The spec is compiled in memory and loaded as ``mcec run`` does (``mcec.run.runner``);
a spec with errors, or whose Python side does not load, is reported on stderr
(exit 1) before anything is served. Then an MCP server (the SDK's low-level
``Server``) answers on stdin/stdout with one tool per served pipeline, named
after it (docs/language.md §9):

- which pipelines: by default the spec's *entry* pipelines, those no other
  pipeline of the file uses (helpers stay private); ``--pipeline NAME``
  (repeatable) serves exactly the pipelines named, helpers included;
- description: the ``#`` comment lines directly above the pipeline's
  declaration (no blank line between), without the ``#``; a pipeline without
  one is described by its signature;
- input: when the pipeline's A is a pydantic model, its fields are the tool's
  arguments (the input schema is the model's JSON schema); otherwise the tool
  takes one argument ``value`` of type A (schema from pydantic's TypeAdapter).
  Arguments are validated as JSON, like ``mcec run --input``;
- each call is one run with a fresh state: ``S()``, or the state ``--state JSON``
  describes (validated against S at start-up, like ``mcec run --state``; a state
  type with required fields needs it), ``None`` without ``state``;
- ``Ok`` → a result with ``structuredContent`` (a non-object value wrapped as
  ``{"result": value}``) and its JSON text; ``Err`` → ``isError: true`` with the
  error rendered as text (type, message, and the failing step's site);
- a ``Defect``, invalid arguments, or a result or error that cannot be rendered
  (a ``__str__`` that raises, a value nested deeper than :data:`MAX_DEPTH`) →
  ``isError: true`` with a clear text. No exception of a call reaches the MCP
  layer, so the client never sees a JSON-RPC error for a call, and the server
  keeps serving.

An ``ask`` step (a question to a person, docs/language.md §15) is asked of the MCP client as a
form *elicitation* (``elicitation/create``) carrying the question and a form for the answer type
(:mod:`mcec.run.serve_ask`: :class:`McpHuman`). Whatever the client does — answers, declines,
cannot elicit, replies with an error or with a malformed result — ends as the answer or as the
step's typed errors (``NoOneToAsk``, ``NoAnswer``, ``BadAnswer``), never as a Defect, so a spec's
``catch``/``orelse`` handles it, and an unhandled one is an ``isError`` result naming it.

While serving, stdout belongs to the protocol: the SDK points fd 1 at stderr
for everything else, so a step that prints cannot corrupt the stream.
"""

from __future__ import annotations

import dataclasses
import types as pytypes
from collections.abc import Callable
from typing import Any

from agentmonad.mcp.server import (
    MAX_DEPTH,
    PipelineTool,
    ServeError,
    StateError,
    call_pipeline,
    input_side,
    output_schema,
    render_outcome,
    serve_stdio,
)
from agentmonad.mcp.elicit import McpHuman

from mcec.run.pyobjects import ResolveError, python_type
from mcec.span import SourceFile
from mcec.check.typed import Program, RefKind, TPipeline, TRef

# pydantic is imported where schemas are made and arguments validated, not at
# module level: the CLI imports this module to register `serve` on every run.

__all__ = [
    "MAX_DEPTH",
    "PipelineTool",
    "ServeError",
    "StateError",
    "call_pipeline",
    "entry_pipelines",
    "pipeline_description",
    "pipeline_tools",
    "render_outcome",
    "serve_stdio",
    "McpHuman",
]


def _state_factory(program: Program, state_json: str | None = None) -> Callable[[], Any]:
    """A function making each call's fresh state: ``S()``, or ``--state`` validated anew."""
    from agentmonad.report import safe_text

    if program.state is None:
        if state_json is not None:
            raise StateError("--state was given, but the spec declares no state")
        return lambda: None
    try:
        state_type = python_type(program.state)
    except ResolveError as exc:
        raise ServeError(str(exc)) from exc
    if state_json is not None:
        from mcec.run.runner import RunError, _validated

        try:
            _validated(state_type, state_json, "--state")
        except RunError as exc:
            raise StateError(f"{exc} (the state type is {program.state})") from exc
        return lambda: _validated(state_type, state_json, "--state")
    try:
        state_type()
    except Exception as exc:
        raise ServeError(
            f"the state type {program.state} cannot be built without arguments ({safe_text(exc)}); "
            "give the state to start each call from with --state JSON"
        ) from exc
    return lambda: state_type()


def _pipeline_refs(pipeline: TPipeline) -> set[str]:
    """The names of the pipelines ``pipeline``'s body uses (any node kind: the
    walk goes through every field of every typed-IR node, so constructs added
    to ``mcec.check.typed`` later are covered)."""
    used: set[str] = set()
    stack: list[object] = [pipeline.body]
    while stack:  # iterative: bodies may nest deeply
        node = stack.pop()
        if isinstance(node, TRef):
            if node.kind is RefKind.PIPELINE:
                used.add(node.name)
        elif isinstance(node, tuple | list):
            stack.extend(node)
        elif dataclasses.is_dataclass(node) and type(node).__module__ == TRef.__module__:  # typed IR, not spans or types
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
    return used


def entry_pipelines(program: Program) -> list[str]:
    """The pipelines no other pipeline of the program uses, in declaration order."""
    used: set[str] = set()
    for pipeline in program.pipelines:
        used |= _pipeline_refs(pipeline) - {pipeline.name}
    ordered = sorted(program.pipelines, key=lambda p: p.span.start)
    return [p.name for p in ordered if p.name not in used]


def pipeline_description(pipeline: TPipeline, program: Program, source: SourceFile | None) -> str:
    """The ``#`` comment lines directly above the pipeline's declaration, or its signature."""
    lines: list[str] = []
    if source is not None and source.text:
        text_lines = source.text.splitlines()
        row = pipeline.span.line - 2  # the line above, 0-based
        while 0 <= row < len(text_lines) and text_lines[row].lstrip().startswith("#"):
            lines.append(text_lines[row].lstrip()[1:])
            row -= 1
        lines.reverse()
    if lines:
        import textwrap

        described = textwrap.dedent("\n".join(lines)).strip()
        if described:
            return described
    return f"Pipeline {pipeline.name} of {program.path}: {pipeline.sig}."


def pipeline_tools(
    program: Program,
    module: pytypes.ModuleType,
    names: list[str] | None = None,
    *,
    source: SourceFile | None = None,
    state_json: str | None = None,
) -> list[PipelineTool]:
    """The tools for the pipelines ``names`` (default: the entry pipelines) of a
    loaded program; ``source`` gives the descriptions (comments above each
    pipeline), ``state_json`` each call's state (default ``S()``)."""
    declared = {p.name: p for p in program.pipelines}
    chosen: list[TPipeline]
    if names:
        unknown = [n for n in names if n not in declared]
        if unknown:
            known = ", ".join(sorted(declared)) or "none"
            raise ServeError(f"no pipeline named {', '.join(map(repr, unknown))} (pipelines: {known})")
        chosen = [declared[n] for n in dict.fromkeys(names)]
    else:
        chosen = [declared[n] for n in entry_pipelines(program)]
    new_state = _state_factory(program, state_json)
    tools = []
    for pipeline in chosen:
        try:
            input_type = python_type(pipeline.sig.input)
            output_type = python_type(pipeline.sig.output)
            input_schema, parse = input_side(input_type)
        except ResolveError as exc:
            raise ServeError(f"pipeline {pipeline.name}: {exc}") from exc
        except Exception as exc:  # pydantic cannot build a schema for the type
            raise ServeError(f"pipeline {pipeline.name}: its input type has no JSON schema ({exc})") from exc
        description = pipeline_description(pipeline, program, source)
        tools.append(
            PipelineTool(
                pipeline.name,
                description,
                input_schema,
                output_schema(output_type),
                parse,
                getattr(module, pipeline.name),
                new_state,
            )
        )
    return tools
