"""``mcec serve FILE [--pipeline NAME]...``: a spec's pipelines as MCP tools over stdio.

The spec is compiled in memory and loaded as ``mcec run`` does (``mcec.runner``);
a spec with errors is reported on stderr (exit 1) before anything is served.
Then an MCP server (the SDK's low-level ``Server``) answers on stdin/stdout
with one tool per pipeline, named after it (LANGUAGE.md §9):

- input: when the pipeline's A is a pydantic model, its fields are the tool's
  arguments (the input schema is the model's JSON schema); otherwise the tool
  takes one argument ``value`` of type A (schema from pydantic's TypeAdapter).
  Arguments are validated as JSON, like ``mcec run --input``;
- each call is one run: a fresh state ``S()`` (``None`` without ``state``),
  and its own tool scope, so MCP servers the pipeline uses start and stop
  within the call;
- ``Ok`` → a result with ``structuredContent`` (a non-object value wrapped as
  ``{"result": value}``) and its JSON text; ``Err`` → ``isError: true`` with the
  error rendered as text (type, message, and the failing step's site);
- a ``Defect`` or invalid arguments → ``isError: true`` with a clear text; the
  server keeps serving.

While serving, stdout belongs to the protocol: the SDK points fd 1 at stderr
for everything else, so a step that prints cannot corrupt the stream.
"""

from __future__ import annotations

import argparse
import json
import sys
import types as pytypes
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from agentmonad import Defect, Err, Ok, Outcome, to_tool_result

from mcec.cli import EXIT_ERRORS, EXIT_OK, EXIT_USAGE
from mcec.commands import Subparsers, compile_to_run
from mcec.pyobjects import ResolveError, python_type
from mcec.typed import Program, TPipeline

if TYPE_CHECKING:
    from mcp.types import CallToolResult, Tool
    from pydantic import ValidationError

# pydantic is imported where schemas are made and arguments validated, not at
# module level: the CLI imports this module to register `serve` on every run.

__all__ = ["COMMANDS", "PipelineTool", "add_serve", "pipeline_tools", "run_serve"]


class ServeError(Exception):
    """The spec cannot be served (unknown pipeline, unbuildable state, …)."""


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


def _state_factory(program: Program) -> Callable[[], Any]:
    if program.state is None:
        return lambda: None
    try:
        state_type = python_type(program.state)
        state_type()
    except ResolveError as exc:
        raise ServeError(str(exc)) from exc
    except Exception as exc:
        raise ServeError(f"the state type cannot be built without arguments ({exc}), so calls cannot start") from exc
    return lambda: state_type()


def pipeline_tools(program: Program, module: pytypes.ModuleType, names: list[str] | None = None) -> list[PipelineTool]:
    """The tools for the pipelines ``names`` (default: all) of a loaded program."""
    declared = {p.name: p for p in program.pipelines}
    chosen: list[TPipeline]
    if names:
        unknown = [n for n in names if n not in declared]
        if unknown:
            known = ", ".join(sorted(declared)) or "none"
            raise ServeError(f"no pipeline named {', '.join(map(repr, unknown))} (pipelines: {known})")
        chosen = [declared[n] for n in dict.fromkeys(names)]
    else:
        chosen = list(program.pipelines)
    new_state = _state_factory(program)
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
        description = f"Pipeline {pipeline.name} of {program.path}: {pipeline.sig}."
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


def _render_outcome(outcome: Outcome[Any, Any, Any]) -> CallToolResult:
    from mcp.types import CallToolResult

    from mcec.runner import jsonable

    if isinstance(outcome, Ok):
        wire = to_tool_result(Ok(jsonable(outcome.value), None))
        return CallToolResult.model_validate(wire)
    if isinstance(outcome, Err):
        text = f"{type(outcome.error).__name__}: {outcome.error}"
        if outcome.site is not None:
            text += f" (at {outcome.site})"
        return _error_result(text)
    return _error_result(f"internal error: the pipeline returned {type(outcome).__name__}, not an Outcome")


async def call_pipeline(tool: PipelineTool, arguments: Mapping[str, Any]) -> CallToolResult:
    """Run one call: validate, run with a fresh state, render; never raises (but for cancellation)."""
    from pydantic import ValidationError

    try:
        value = tool.parse(arguments)
    except ValidationError as exc:
        return _error_result(f"invalid arguments for {tool.name}: {_validation_text(exc)}")
    except ValueError as exc:
        return _error_result(f"invalid arguments for {tool.name}: {exc}")
    try:
        outcome = await tool.run(tool.new_state(), value)
    except Defect as defect:
        return _error_result(f"defect (a bug in the pipeline's implementation, not an error it declares): {defect}")
    except Exception as exc:
        return _error_result(f"internal error in {tool.name}: {type(exc).__name__}: {exc}")
    return _render_outcome(outcome)


async def serve_stdio(tools: list[PipelineTool], name: str) -> None:
    """Serve ``tools`` over stdin/stdout until the client closes stdin."""
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    from agentmonad.tools import tool_scope
    from mcp.types import CallToolRequestParams, ListToolsResult, PaginatedRequestParams, Tool

    from mcec import __version__

    by_name = {t.name: t for t in tools}
    listing = ListToolsResult(tools=[_tool_entry(Tool, t) for t in tools])

    async def list_tools(_ctx: Any, _params: PaginatedRequestParams | None) -> ListToolsResult:
        return listing

    async def call_tool(_ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _error_result(f"unknown tool {params.name!r} (tools: {', '.join(sorted(by_name)) or 'none'})")
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


# ---------------------------------------------------------------- the command


def add_serve(subparsers: Subparsers) -> None:
    """``mcec serve FILE [--pipeline NAME]...``."""
    command = subparsers.add_parser(
        "serve",
        help="serve a spec's pipelines as MCP tools over stdio",
        description="Compile a spec in memory and serve its pipelines as MCP tools over stdin/stdout.",
    )
    command.add_argument("file", metavar="FILE", help="the .mce spec")
    command.add_argument(
        "--pipeline",
        action="append",
        default=None,
        metavar="NAME",
        help="serve only this pipeline (repeatable; default: every pipeline)",
    )
    command.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Check and load the spec (problems on stderr, exit 1 or 2), then serve until stdin closes."""
    from pathlib import Path

    from mcec.runner import RunError, load_module

    spec = Path(args.file)
    result = compile_to_run(spec)
    if isinstance(result, int):
        return result
    assert result.program is not None and result.generated is not None
    try:
        import mcp  # noqa: F401  (fail early, with a clear message)
    except ImportError:
        print("mcec serve: the `mcp` package is needed; pip install 'mcec[mcp]'", file=sys.stderr)
        return EXIT_USAGE
    try:
        module = load_module(result.program, result.generated)
        tools = pipeline_tools(result.program, module, args.pipeline)
    except (RunError, ServeError) as exc:
        print(f"mcec serve: {exc}", file=sys.stderr)
        return EXIT_ERRORS
    print(f"mcec serve: {spec}: serving {len(tools)} tool(s) on stdio: {', '.join(t.name for t in tools)}", file=sys.stderr)
    import anyio

    anyio.run(serve_stdio, tools, f"mcec:{spec.stem}")
    return EXIT_OK


#: The sub-commands this module adds to ``mcec`` (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_serve]
