"""Pipelines as MCP tools over stdio: the core of ``mcec serve`` (the command is :mod:`mcec.cli.serve`).

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
import json
import types as pytypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentmonad import Defect, Err, Ok, Outcome, to_tool_result

from mcec.run.pyobjects import ResolveError, python_type
from mcec.span import SourceFile
from mcec.check.typed import Program, RefKind, TPipeline, TRef
from mcec.run.serve_ask import McpHuman

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool
    from pydantic import ValidationError

# pydantic is imported where schemas are made and arguments validated, not at
# module level: the CLI imports this module to register `serve` on every run.

__all__ = [
    "MAX_DEPTH",
    "PipelineTool",
    "ServeError",
    "StateError",
    "entry_pipelines",
    "pipeline_description",
    "pipeline_tools",
    "serve_stdio",
    "McpHuman",
]

#: A result nested deeper than this (objects and arrays) is an ``isError``
#: result instead of a payload: JSON encoders, the SDK's included, fail on
#: deep nesting with errors that would escape as protocol errors.
MAX_DEPTH = 100


class ServeError(Exception):
    """The spec cannot be served (unknown pipeline, unbuildable state, …)."""


class StateError(ServeError):
    """``--state`` does not describe a valid state (exit 2, like ``mcec run``)."""


def _validation_text(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
    )


def _hoist_defs(schema: dict[str, Any], into: dict[str, Any]) -> dict[str, Any]:
    """Move a nested schema's ``$defs`` to the document root, where its ``#/$defs/…`` refs point."""
    defs = schema.pop("$defs", None)
    if defs:
        into.setdefault("$defs", {}).update(defs)
    return schema


@dataclass(frozen=True)
class PipelineTool:
    """One pipeline as an MCP tool: its schemas and how to call it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    #: arguments → the pipeline's input value (raises ``ValidationError``)
    parse: Callable[[Mapping[str, Any]], Any]
    #: the pipeline's compiled function ``async (state, value) -> Outcome``
    run: Callable[[Any, Any], Any]
    #: a fresh state for each call
    new_state: Callable[[], Any]


def _input_side(input_type: Any) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], Any]]:
    """The input schema and argument parser for a pipeline taking ``input_type``."""
    from pydantic import BaseModel, TypeAdapter

    if isinstance(input_type, type) and issubclass(input_type, BaseModel):
        model: type[BaseModel] = input_type

        def parse_model(arguments: Mapping[str, Any]) -> Any:
            return model.model_validate_json(json.dumps(dict(arguments)))

        return model.model_json_schema(), parse_model
    adapter: TypeAdapter[Any] = TypeAdapter(input_type)
    schema: dict[str, Any] = {"type": "object", "required": ["value"], "additionalProperties": False}
    schema["properties"] = {"value": _hoist_defs(adapter.json_schema(), schema)}

    def parse_value(arguments: Mapping[str, Any]) -> Any:
        extra = sorted(set(arguments) - {"value"})
        if extra:
            raise ValueError(f"unexpected argument(s) {', '.join(extra)}: this tool takes one argument, `value`")
        if "value" not in arguments:
            raise ValueError("missing the argument `value`")
        return adapter.validate_json(json.dumps(arguments["value"]))

    return schema, parse_value


def _output_schema(output_type: Any) -> dict[str, Any] | None:
    """An output schema when the result's shape is certain: a pydantic model's
    own schema. Other types are left undeclared (a union may or may not be an
    object, and clients reject a result that misses a declared schema)."""
    from pydantic import BaseModel

    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        return output_type.model_json_schema(mode="serialization")
    return None


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
            input_schema, parse = _input_side(input_type)
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
                _output_schema(output_type),
                parse,
                getattr(module, pipeline.name),
                new_state,
            )
        )
    return tools


def _error_result(text: str) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests dicts and lists more than ``limit`` levels deep (iteratively)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def _render_outcome(outcome: Outcome[Any, Any, Any]) -> CallToolResult:
    """The MCP result of an Outcome; may raise (see :func:`render_outcome`)."""
    from mcp.types import CallToolResult

    from agentmonad.report import jsonable, safe_text

    if isinstance(outcome, Ok):
        value = jsonable(outcome.value)
        if _too_deep(value):
            return _error_result(f"the result is nested more than {MAX_DEPTH} levels deep, too deep to send as JSON")
        result = CallToolResult.model_validate(to_tool_result(Ok(value, None)))
        result.model_dump_json(by_alias=True, exclude_none=True)  # it must serialise: fail here, not in the SDK
        return result
    if isinstance(outcome, Err):
        text = f"{type(outcome.error).__name__}: {safe_text(outcome.error)}"
        if outcome.site is not None:
            text += f" (at {safe_text(outcome.site)})"
        return _error_result(text)
    return _error_result(f"internal error: the pipeline returned {type(outcome).__name__}, not an Outcome")


def render_outcome(tool: PipelineTool, outcome: Outcome[Any, Any, Any]) -> CallToolResult:
    """The MCP result of an Outcome; never raises: a result or error that cannot
    be rendered becomes an ``isError`` result saying so."""
    from agentmonad.report import safe_text

    try:
        return _render_outcome(outcome)
    except Exception as exc:
        what = "result" if isinstance(outcome, Ok) else "error"
        return _error_result(
            f"the {what} of {tool.name} could not be rendered as an MCP result: {type(exc).__name__}: {safe_text(exc)}"
        )


async def call_pipeline(tool: PipelineTool, arguments: Mapping[str, Any]) -> CallToolResult:
    """Run one call: validate, run with a fresh state, render; never raises (but for cancellation)."""
    from pydantic import ValidationError

    from agentmonad.report import safe_text

    try:
        value = tool.parse(arguments)
    except ValidationError as exc:
        return _error_result(f"invalid arguments for {tool.name}: {_validation_text(exc)}")
    except ValueError as exc:
        return _error_result(f"invalid arguments for {tool.name}: {safe_text(exc)}")
    except Exception as exc:
        return _error_result(f"invalid arguments for {tool.name}: {type(exc).__name__}: {safe_text(exc)}")
    try:
        outcome = await tool.run(tool.new_state(), value)
    except Defect as defect:
        return _error_result(
            f"defect (a bug in the pipeline's implementation, not an error it declares): {safe_text(defect)}"
        )
    except Exception as exc:
        return _error_result(f"internal error in {tool.name}: {type(exc).__name__}: {safe_text(exc)}")
    return render_outcome(tool, outcome)


async def serve_stdio(tools: list[PipelineTool], name: str) -> None:
    """Serve ``tools`` over stdin/stdout until the client closes stdin."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from agentmonad.mcp import tool_scope
    from mcp.types import CallToolRequestParams, ListToolsResult, PaginatedRequestParams, Tool

    from mcec.version import __version__

    by_name = {t.name: t for t in tools}
    listing = ListToolsResult(tools=[_tool_entry(Tool, t) for t in tools])

    async def list_tools(_ctx: Any, _params: PaginatedRequestParams | None) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        from agentmonad.context import hooks

        tool = by_name.get(params.name)
        if tool is None:
            return _error_result(f"unknown tool {params.name!r} (tools: {', '.join(sorted(by_name)) or 'none'})")
        # a question to a person in this call goes to this call's client
        with hooks(human=McpHuman(ctx.session, ctx.request_id)):
            return await call_pipeline(tool, params.arguments or {})

    server: Server[Any] = Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)
    # One tool scope for the server's whole life: the MCP servers the pipelines
    # call start at first use and are shared by every call (each call's own
    # scope nests in this one), instead of a process start per call; one that
    # fails is started again at its next call. All stop when the client leaves.
    async with tool_scope(restart_failed=True), stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _tool_entry(tool_class: type[Tool], tool: PipelineTool) -> Tool:
    return tool_class(
        name=tool.name, description=tool.description, input_schema=tool.input_schema, output_schema=tool.output_schema
    )
