"""``mcec graph FILE [--pipeline NAME] [--format mermaid|dot|svg]``: draw a spec's pipelines (:mod:`mcec.tools.graph`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from mcec.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Reporter, Subparsers, color_wanted, load_source
from mcec.compiler import check_source
from mcec.render import DEFAULT_LIMIT
from mcec.tools.graph import GraphvizMissing, build_graph, to_dot, to_mermaid, to_svg


_NO_DOT = (
    "mcec graph: --format svg needs Graphviz's `dot` program, which is not installed (or not on PATH).\n"
    "Install Graphviz (Debian/Ubuntu: `apt-get install graphviz`; macOS: `brew install graphviz`; "
    "see https://graphviz.org/download/), or use `--format dot` or `--format mermaid` instead."
)


def add_graph(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec graph FILE [--pipeline NAME] [--format mermaid|dot|svg]``."""
    command = subparsers.add_parser(
        "graph",
        help="draw a spec's pipelines (Mermaid, DOT or SVG)",
        description="Print a picture of the pipelines of a checked spec: Mermaid (default; renders on GitHub), "
        "Graphviz DOT, or SVG (runs Graphviz's `dot`). Exit 0 on success, 1 when the spec does not check, "
        "2 for usage problems (unknown pipeline, unreadable file, `dot` missing).",
    )
    command.add_argument("file", metavar="FILE", help="the .mce spec")
    command.add_argument("--pipeline", metavar="NAME", default=None, help="draw only this pipeline")
    command.add_argument("--format", choices=("mermaid", "dot", "svg"), default="mermaid", help="output format")
    command.set_defaults(func=run_graph)


def run_graph(args: argparse.Namespace, out: TextIO) -> int:
    """Check the spec, then print its picture on ``out`` (diagnostics go to stderr)."""
    reporter = Reporter(sys.stderr, "text", DEFAULT_LIMIT, color_wanted(sys.stderr))
    source, problem = load_source(Path(args.file))
    if problem is not None or source is None:
        reporter.add([problem] if problem is not None else [], source)
        reporter.flush()
        return EXIT_USAGE if problem is None or problem.code == "MCE005" else EXIT_ERRORS
    result = check_source(source)
    if result.program is None:
        reporter.add(result.diagnostics, source)
        reporter.flush()
        return EXIT_ERRORS
    try:
        graph = build_graph(result.program, args.pipeline)
    except KeyError:
        names = ", ".join(p.name for p in sorted(result.program.pipelines, key=lambda p: p.span.start))
        print(
            f"mcec graph: no pipeline named `{args.pipeline}` in {args.file}; "
            + (f"its pipelines are: {names}" if names else "it has no pipelines"),
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.format == "mermaid":
        out.write(to_mermaid(graph))
    elif args.format == "dot":
        out.write(to_dot(graph))
    else:
        try:
            out.write(to_svg(graph))
        except GraphvizMissing:
            print(_NO_DOT, file=sys.stderr)
            return EXIT_USAGE
        except RuntimeError as exc:
            print(f"mcec graph: Graphviz's dot failed: {exc}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_OK


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_graph]
