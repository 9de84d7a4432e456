"""``python -m agentmonad serve MODULE:PIPELINE… [--state JSON] [--model NAME=VALUE]…``: pipelines
of a compiled module as MCP tools over stdio, on a production machine (the runtime alone, with its
``mcp`` extra). What is served and how is :mod:`agentmonad.mcp.server`, shared with ``mcec serve``,
which serves a spec's source instead."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from .common import EXIT_OK, EXIT_USAGE, Subparsers
from .run import TargetError, imported, target

__all__ = ["add_serve"]


def add_serve(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``serve MODULE:PIPELINE… [--state JSON] [--model NAME=VALUE]…``."""
    command = subparsers.add_parser("serve", help="serve pipelines of a compiled module as MCP tools over stdio",
                                    description="Serve pipelines of a compiled module as MCP tools over stdin/stdout, "
                                                "one tool per pipeline, until stdin closes.")
    command.add_argument("targets", nargs="+", metavar="MODULE:PIPELINE",
                         help="a pipeline of a compiled module (repeatable; all of one module)")
    command.add_argument("--state", default=None, metavar="JSON", help="the state each call starts from, as JSON")
    command.add_argument("--model", action="append", default=[], metavar="NAME=VALUE",
                         help="a model's backend: NAME=openai:MODEL, NAME=py:MODULE:ATTR… (repeatable)")
    command.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace, out: TextIO) -> int:
    """Import the module and check the pipelines (a problem: one line on stderr, exit 2), then serve
    until the client closes stdin."""
    from contextlib import nullcontext

    from ..durable.version import CompiledVersion, VersionError, llm_config_for
    from ..mcp.server import ServeError, compiled_tools, serve_stdio

    try:
        targets = [target(text) for text in args.targets]
        modules = sorted({name for name, _ in targets})
        if len(modules) > 1:
            raise TargetError(f"serve the pipelines of one module at a time (given: {', '.join(modules)})")
        try:
            import anyio
            import mcp  # noqa: F401  (said before the module is imported, not at the first call)
        except ImportError:
            raise TargetError("serving needs the `mcp` package: pip install 'agentmonad[mcp]'") from None
        module = imported(modules[0])
        tools = compiled_tools(module, [pipeline for _, pipeline in targets], state_json=args.state)
        llm = llm_config_for(CompiledVersion.of(module), list(args.model))
    except (TargetError, ServeError, VersionError) as exc:
        print(f"{args.program} serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{args.program} serve: {module.__name__}: serving {len(tools)} tool(s) on stdio: "
          f"{', '.join(t.name for t in tools)}", file=sys.stderr)
    from ..llm import llm_config

    # a ContextVar: the server's tasks, started inside, all see the configuration
    with llm_config(llm) if llm is not None else nullcontext():
        anyio.run(serve_stdio, tools, f"agentmonad:{module.__name__}")
    return EXIT_OK
