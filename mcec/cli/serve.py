"""``mcec serve FILE [--pipeline NAME]... [--state JSON] [--model NAME=VALUE]...``: a spec's
pipelines as MCP tools over stdio.

What is served and how is :mod:`mcec.run.serve`; this module reads the spec,
compiles and loads it as ``mcec run`` does, and starts the server. ``--model``
configures the spec's models as ``mcec run --model`` does, for every call the
server answers (a scripted model then answers offline).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from mcec.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Subparsers
from mcec.cli.compile import add_model_option, compile_to_run, load_compiled


def add_serve(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec serve FILE [--pipeline NAME]... [--state JSON] [--model NAME=VALUE]...``."""
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
        help="serve this pipeline (repeatable; default: the entry pipelines, those no other pipeline uses)",
    )
    command.add_argument(
        "--state",
        default=None,
        metavar="JSON",
        help="the state each call starts from, as JSON (default: S())",
    )
    add_model_option(command)
    command.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Check and load the spec (problems on stderr, exit 1 or 2), then serve until stdin closes."""
    from contextlib import nullcontext
    from pathlib import Path

    # the runtime and the MCP server: what serving needs, imported when serving (not by `mcec --help`)
    from agentmonad.llm import llm_config
    from mcec.run.runner import RunError, llm_run_config
    from mcec.run.serve import ServeError, StateError, pipeline_tools, serve_stdio

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
    module = load_compiled(result)
    if isinstance(module, int):
        return module
    try:
        tools = pipeline_tools(result.program, module, args.pipeline, source=result.source, state_json=args.state)
        llm = llm_run_config(result.program, args.model)
    except (StateError, RunError) as exc:
        print(f"mcec serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ServeError as exc:
        print(f"mcec serve: {exc}", file=sys.stderr)
        return EXIT_ERRORS
    print(f"mcec serve: {spec}: serving {len(tools)} tool(s) on stdio: {', '.join(t.name for t in tools)}", file=sys.stderr)
    import anyio

    # A ContextVar: the server's tasks, started inside, all see the configuration.
    with llm_config(llm) if llm is not None else nullcontext():
        anyio.run(serve_stdio, tools, f"mcec:{spec.stem}")
    return EXIT_OK


#: The sub-commands this module adds to ``mcec`` (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_serve]
