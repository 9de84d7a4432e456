"""Pipelines of compiled modules as MCP tools over stdio: what ``python -m agentmonad serve`` and
``mcec serve`` share (docs/language.md §9), with the compiler or without it.

Each served pipeline is one tool named after it. Its input: a pydantic model's fields are the
tool's arguments; any other input type is one argument ``value`` (schema from pydantic's
``TypeAdapter``); arguments are validated as JSON, like ``run --input``. Each call is one run with
a fresh state. ``Ok`` → a result with ``structuredContent`` (a non-object value wrapped as
``{"result": value}``) and its JSON text; ``Err`` → ``isError: true`` with the error as text (type,
message, the failing step's site); a ``Defect``, invalid arguments, or a result that cannot be
rendered → ``isError: true`` with a clear text: no exception of a call reaches the MCP layer, and
the server keeps serving. An ``ask`` is asked of the client as a form elicitation
(:class:`~agentmonad.mcp.elicit.McpHuman`).

:func:`compiled_tools` makes the tools from a compiled module's ``SPEC_INFO`` (the runtime alone);
``mcec serve`` makes them from the checked program (``mcec.run.serve``), with the pipelines'
comments as descriptions. ``mcp`` and pydantic are imported when a server is made, not with this
module. While serving, stdout belongs to the protocol: the SDK points fd 1 at stderr for anything
else, so a step that prints cannot corrupt the stream.
"""

from __future__ import annotations

import json
import types as pytypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import Defect
from ..outcome import Err, Ok, Outcome
from .elicit import McpHuman
from .mcp_result import to_tool_result

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool
    from pydantic import ValidationError

__all__ = [
    "MAX_DEPTH",
    "PipelineTool",
    "ServeError",
    "StateError",
    "call_pipeline",
    "compiled_tools",
    "input_side",
    "output_schema",
    "render_outcome",
    "serve_stdio",
]

#: A result nested deeper than this (objects and arrays) is an ``isError``
#: result instead of a payload: JSON encoders, the SDK's included, fail on
#: deep nesting with errors that would escape as protocol errors.
MAX_DEPTH = 100


class ServeError(Exception):
    """The pipelines cannot be served (unknown pipeline, unbuildable state, …)."""


class StateError(ServeError):
    """``--state`` does not describe a valid state (exit 2, like ``run --state``)."""


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


def input_side(input_type: Any) -> tuple[dict[str, Any], Callable[[Mapping[str, Any]], Any]]:
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


def output_schema(output_type: Any) -> dict[str, Any] | None:
    """An output schema when the result's shape is certain: a pydantic model's
    own schema. Other types are left undeclared (a union may or may not be an
    object, and clients reject a result that misses a declared schema)."""
    from pydantic import BaseModel

    if isinstance(output_type, type) and issubclass(output_type, BaseModel):
        return output_type.model_json_schema(mode="serialization")
    return None


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

    from ..report import jsonable, safe_text

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
    from ..report import safe_text

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

    from ..report import safe_text

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


async def serve_stdio(tools: list[PipelineTool], name: str, version: str | None = None) -> None:
    """Serve ``tools`` over stdin/stdout until the client closes stdin; ``name`` and ``version``
    are the server's, as the client sees them (default version: the runtime's, which is mcec's)."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from .tools import tool_scope
    from mcp.types import CallToolRequestParams, ListToolsResult, PaginatedRequestParams, Tool

    if version is None:
        version = _runtime_version()
    by_name = {t.name: t for t in tools}
    listing = ListToolsResult(tools=[_tool_entry(Tool, t) for t in tools])

    async def list_tools(_ctx: Any, _params: PaginatedRequestParams | None) -> ListToolsResult:
        return listing

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        from ..context import hooks

        tool = by_name.get(params.name)
        if tool is None:
            return _error_result(f"unknown tool {params.name!r} (tools: {', '.join(sorted(by_name)) or 'none'})")
        # a question to a person in this call goes to this call's client
        with hooks(human=McpHuman(ctx.session, ctx.request_id)):
            return await call_pipeline(tool, params.arguments or {})

    server: Server[Any] = Server(name, version=version, on_list_tools=list_tools, on_call_tool=call_tool)
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


def _runtime_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agentmonad")
    except PackageNotFoundError:  # a source tree on sys.path, not installed
        return "0"


def _type_name(type_: Any) -> str:
    return type_.__name__ if isinstance(type_, type) else str(type_).replace("typing.", "")


def _compiled_state(state_type: Any, state_json: str | None) -> Callable[[], Any]:
    """Each call's fresh state: the state type built with its defaults, or ``state_json``
    validated anew (checked once here, so a bad one is said before anything is served)."""
    from ..spec import InputError, validated

    if state_type is None:
        if state_json is not None:
            raise StateError("--state was given, but the spec declares no state")
        return lambda: None
    if state_json is not None:
        try:
            validated(state_type, state_json, "--state")
        except InputError as exc:
            raise StateError(f"{exc} (the state type is {_type_name(state_type)})") from None
        return lambda: validated(state_type, state_json, "--state")
    try:
        state_type()
    except Exception as exc:
        raise ServeError(
            f"the state type {_type_name(state_type)} cannot be built without arguments ({exc}); "
            "give the state to start each call from with --state JSON"
        ) from None
    return lambda: state_type()


def compiled_tools(module: pytypes.ModuleType, names: list[str], *, state_json: str | None = None) -> list[PipelineTool]:
    """The tools for the pipelines ``names`` of the compiled ``module`` (its ``SPEC_INFO``: no
    compiler needed), each described by its signature; ``state_json`` is each call's state
    (default: the state type built with its defaults)."""
    from ..spec import spec_info

    info = spec_info(module)
    unknown = [name for name in names if info.pipeline(name) is None]
    if unknown:
        known = ", ".join(sorted(p.name for p in info.pipelines)) or "none"
        raise ServeError(f"{module.__name__} has no pipeline named {', '.join(map(repr, unknown))} (pipelines: {known})")
    new_state = _compiled_state(info.state, state_json)
    tools = []
    for name in dict.fromkeys(names):
        pipeline = info.pipeline(name)
        assert pipeline is not None
        try:
            input_schema, parse = input_side(pipeline.input)
        except Exception as exc:  # pydantic cannot build a schema for the type
            raise ServeError(f"pipeline {name}: its input type has no JSON schema ({exc})") from None
        errors = " | ".join(error.__name__ for error in pipeline.errors)
        signature = f"{_type_name(pipeline.input)} -> {_type_name(pipeline.output)}" + (f" ! {errors}" if errors else "")
        tools.append(
            PipelineTool(
                name,
                f"Pipeline {name} of {info.file}: {signature}.",
                input_schema,
                output_schema(pipeline.output),
                parse,
                pipeline.function,
                new_state,
            )
        )
    return tools
