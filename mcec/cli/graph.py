"""``mcec graph FILE [--pipeline NAME] [--format mermaid|dot|svg]``: draw a spec's pipelines, and
``mcec graph --plan TEXT --toolbox SPEC[:NAME]``: draw a plan over a toolbox as it would run
(docs/language.md §12), checked as ``spawn`` checks it (:mod:`mcec.tools.graph`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from mcec import syntax
from mcec.check.env import suggest
from mcec.plans.check import check_plan, plan_scopes
from mcec.check.pyindex import PythonIndex
from mcec.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Reporter, Subparsers, color_wanted, load_source
from mcec.compiler import check_source
from mcec.diagnostics import Diagnostic, error
from mcec.render import DEFAULT_LIMIT, render_summary, render_text
from mcec.span import SourceFile, Span
from mcec.tools.graph import Graph, GraphvizMissing, build_graph, build_plan_graph, to_dot, to_mermaid, to_svg


_NO_DOT = (
    "mcec graph: --format svg needs Graphviz's `dot` program, which is not installed (or not on PATH).\n"
    "Install Graphviz (Debian/Ubuntu: `apt-get install graphviz`; macOS: `brew install graphviz`; "
    "see https://graphviz.org/download/), or use `--format dot` or `--format mermaid` instead."
)


def add_graph(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec graph FILE [--pipeline NAME] [--format mermaid|dot|svg]``, or
    ``mcec graph --plan TEXT --toolbox SPEC[:NAME] [--format …]``."""
    command = subparsers.add_parser(
        "graph",
        help="draw a spec's pipelines, or a plan over a toolbox (Mermaid, DOT or SVG)",
        usage="%(prog)s FILE [--pipeline NAME] [--format {mermaid,dot,svg}]\n"
        "       %(prog)s --plan TEXT --toolbox SPEC[:NAME] [--format {mermaid,dot,svg}]",
        description="Print a picture of the pipelines of a checked spec: Mermaid (default; renders on GitHub), "
        "Graphviz DOT, or SVG (runs Graphviz's `dot`). With --plan and --toolbox instead of FILE, check the plan "
        "text against the toolbox exactly as `spawn` does at run time and draw it as it would run. "
        "Exit 0 on success (a plan's warnings, if any, go to stderr), 1 when the spec does not check, "
        "names no such toolbox, or the plan is rejected (its diagnostics go to stderr), "
        "2 for usage problems (unknown pipeline, unreadable file, a spec with several toolboxes and no NAME, "
        "`dot` missing).",
    )
    command.add_argument("file", metavar="FILE", nargs="?", default=None, help="the .mce spec")
    command.add_argument("--pipeline", metavar="NAME", default=None, help="draw only this pipeline")
    command.add_argument(
        "--plan",
        metavar="TEXT",
        default=None,
        help="a plan: one .mce expression (`@FILE` reads it from FILE, `-` from stdin); needs --toolbox",
    )
    command.add_argument(
        "--toolbox",
        metavar="SPEC[:NAME]",
        default=None,
        help="the spec and toolbox the plan is checked against (NAME may be left out when the spec "
        "declares one toolbox)",
    )
    command.add_argument("--format", choices=("mermaid", "dot", "svg"), default="mermaid", help="output format")
    command.set_defaults(func=run_graph)


def run_graph(args: argparse.Namespace, out: TextIO) -> int:
    """Check the spec (or the plan), then print its picture on ``out`` (diagnostics go to stderr)."""
    if args.plan is not None or args.toolbox is not None:
        return _run_plan_graph(args, out)
    if args.file is None:
        return _usage("give a spec FILE, or --plan TEXT --toolbox SPEC[:NAME]")
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
    return _print(graph, args.format, out)


def _usage(message: str) -> int:
    print(f"mcec graph: {message}", file=sys.stderr)
    return EXIT_USAGE


def _print(graph: Graph, format: str, out: TextIO) -> int:
    if format == "mermaid":
        out.write(to_mermaid(graph))
    elif format == "dot":
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


def split_toolbox(argument: str) -> tuple[str, str | None]:
    """``SPEC[:NAME]`` as ``(SPEC, NAME or None)``: a path that exists as written is the whole SPEC
    (so ``C:\\specs\\box.mce`` keeps its colon); otherwise what follows the last ``:`` is NAME
    when it is an identifier."""
    if Path(argument).is_file():
        return argument, None
    spec, colon, name = argument.rpartition(":")
    if colon and spec and name.isidentifier():
        return spec, name
    return argument, None


def _plan_text(argument: str) -> tuple[str | None, str | None]:
    """The plan's text from ``--plan``: ``(text, None)``, or ``(None, problem)``."""
    if argument == "-":
        return sys.stdin.read(), None
    if argument.startswith("@"):
        path = Path(argument[1:])
        try:
            return path.read_text(encoding="utf-8"), None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            return None, f"cannot read the plan from `{path}`: {reason}"
    return argument, None


def _run_plan_graph(args: argparse.Namespace, out: TextIO) -> int:
    """``--plan TEXT --toolbox SPEC[:NAME]``: check the plan as ``spawn`` does, then draw it (§12)."""
    if args.plan is None:
        return _usage("--toolbox goes with --plan TEXT (the plan to draw)")
    if args.toolbox is None:
        return _usage("--plan needs --toolbox SPEC[:NAME]: the toolbox the plan is checked against")
    if args.file is not None:
        return _usage(f"give either a spec FILE or --plan with --toolbox, not both (got `{args.file}`)")
    if args.pipeline is not None:
        return _usage("--pipeline draws a pipeline of a spec; a plan is drawn whole")
    text, unreadable = _plan_text(args.plan)
    if text is None:
        return _usage(unreadable or "cannot read the plan")
    spec_path, name = split_toolbox(args.toolbox)
    reporter = Reporter(sys.stderr, "text", DEFAULT_LIMIT, color_wanted(sys.stderr))
    source, problem = load_source(Path(spec_path))
    if problem is not None or source is None:
        reporter.add([problem] if problem is not None else [], source)
        reporter.flush()
        return EXIT_USAGE if problem is None or problem.code == "MCE005" else EXIT_ERRORS
    # the spec is read as `mcec check` and the run-time plan engine read it (mcec.plans.engine.engine)
    parsed = syntax.parse(source)
    if parsed.module is None or any(d.is_error for d in parsed.diagnostics):
        reporter.add(parsed.diagnostics, source)
        reporter.flush()
        return EXIT_ERRORS
    scopes, diagnostics = plan_scopes(parsed.module, source, PythonIndex.for_directory(spec=source.path))
    if any(d.is_error for d in diagnostics):
        reporter.add(diagnostics, source)
        reporter.flush()
        return EXIT_ERRORS
    if name is None:
        if len(scopes) > 1:
            listed = ", ".join(f"{spec_path}:{n}" for n in sorted(scopes))
            return _usage(f"{spec_path} declares {len(scopes)} toolboxes; name one: {listed}")
        name = next(iter(scopes), None)
    scope = scopes.get(name) if name is not None else None
    if scope is None:
        # no excerpt: the diagnostic is about the spec as a whole (`-->` names it)
        missing = [_no_such_toolbox(source, name, sorted(scopes))]
        sys.stderr.write(render_text(missing, {}, color=reporter.color) + render_summary(missing, color=reporter.color))
        return EXIT_ERRORS
    from mcec.plans.engine import plan_file  # the runtime's engine (imports agentmonad): only here

    plan_source = SourceFile(plan_file(scope.name), text)
    checked = check_plan(scope, plan_source)
    if checked.diagnostics:
        # the plan's labels may point into the spec too (the toolbox's declared types)
        reporter.add(checked.diagnostics, plan_source)
        reporter.sources.setdefault(source.path, source)
        reporter.flush()
    if checked.body is None:
        return EXIT_ERRORS
    return _print(build_plan_graph(scope.program, scope.toolbox, checked.body), args.format, out)


def _no_such_toolbox(source: SourceFile, name: str | None, names: list[str]) -> Diagnostic:
    """MCE031, as for ``spawn(t)`` naming no declared toolbox (with the close matches)."""
    if name is None:
        message = f"`{source.path}` declares no toolbox: a plan is checked against a `toolbox` declaration"
        hint = "declare one: `toolbox t : A -> B ! E = step1, step2, …`"
    else:
        message = f"unknown toolbox `{name}`: `{source.path}` declares no toolbox of that name"
        listed = ", ".join(f"`{n}`" for n in names)
        hint = " ".join(
            part
            for part in (suggest(name, names), f"its toolboxes are {listed}" if names else "it declares no toolbox")
            if part
        )
    return error("MCE031", message, Span.file_start(source.path), help=hint)


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_graph]
