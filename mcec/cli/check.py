"""``mcec check``: parse and check specs, reporting every diagnostic."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from mcec.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    Reporter,
    Subparsers,
    collect_specs,
    color_wanted,
    load_source,
    non_negative,
)
from mcec.check.pyindex import PythonIndex, package_root
from mcec.cli.durable_check import add_durable_arguments, durable_diagnostics
from mcec.codegen.mypy_check import CACHE_DIR, MypyRuns, check_in_memory, used_modules
from mcec.compiler import CompileResult, check_source, compile_source
from mcec.render import DEFAULT_LIMIT


def add_check(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec check PATH... [--fast] [-q] [--verbose] [--format text|json] [--max-diagnostics N] [--durable [--pipeline NAME]…]``."""
    command = subparsers.add_parser(
        "check",
        help="check specs: everything `mcec compile` would report, without writing anything",
        description="Parse and check `.mce` specs, reading the Python modules they name (never running them), "
        "then generate each clean spec's module in memory and run mypy --strict on it (cached in .mcec/), so "
        "that `check` reports every error `compile` would. --fast skips mypy.",
    )
    command.add_argument("--fast", action="store_true", help="do not run mypy on the generated code")
    command.add_argument(
        "-q", "--quiet", action="store_true", help="print nothing when no spec has an error (not the `checked …` line)"
    )
    command.add_argument("--verbose", action="store_true", help="show each diagnostic's note (mypy's own words)")
    command.add_argument("paths", nargs="+", metavar="PATH", help="a .mce file, or a folder searched recursively")
    command.add_argument("--format", choices=("text", "json"), default="text", help="diagnostic format")
    command.add_argument(
        "--max-diagnostics",
        type=non_negative,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show at most N diagnostics (default {DEFAULT_LIMIT}; 0 = no limit)",
    )
    add_durable_arguments(command)
    command.add_argument("--against", default=None, metavar="OLD_SPEC",
                         help="say, for each effect site of OLD_SPEC, whether runs in flight there carry over to PATH "
                         "(docs/language.md §13, \"Changing a spec with runs in flight\")")
    command.add_argument("--db", default=None, metavar="URL",
                         help="with --against: count the live runs of OLD_SPEC at each site in this run database")
    command.set_defaults(func=run_check)


def run_check(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``mcec check``: report every diagnostic of every spec named."""
    if args.against is not None or args.db is not None:
        return run_against(args, out)
    limit = args.max_diagnostics or None
    reporter = Reporter(out, args.format, limit, color_wanted(out) and args.format == "text", verbose=args.verbose)
    files, problems = collect_specs(args.paths)
    io_failed = bool(problems)
    reporter.add(problems)
    indexes: dict[Path, PythonIndex] = {}  # one per package root: modules are read once per run
    clean: list[tuple[Path, CompileResult]] = []
    unknown = 0
    runs = MypyRuns()
    for path in files:
        source, problem = load_source(path)
        if problem is not None:
            reporter.add([problem], source)
            io_failed = io_failed or problem.code == "MCE005"
            continue
        assert source is not None
        root = package_root(path)
        spec_index = indexes.setdefault(root, PythonIndex.for_directory(spec=path))
        result = check_source(source, index=spec_index) if args.fast else compile_source(source, index=spec_index)
        reporter.add(result.diagnostics, source)
        if args.durable and result.program is not None:
            reporter.add(durable_diagnostics(path, result.program, args.pipeline), source)
        unknown += result.unknown_relations
        if result.ok and result.generated is not None:
            clean.append((path, result))
    if clean:
        modules = [(str(path), r.generated.code, r.generated.source_map) for path, r in clean if r.generated is not None]
        roots = sorted({package_root(path) for path, _ in clean})
        used = {u.module: u for _, r in clean if r.program is not None for u in used_modules(r.program)}
        reporter.add(check_in_memory(modules, CACHE_DIR, roots, [used[name] for name in sorted(used)], runs))
        unknown = 0  # mypy settled them
    summary: dict[str, object] = {"unknown_relations": unknown, "mypy": not args.fast, "mypy_started": runs.started, "mypy_reused": runs.reused}
    reporter.flush(summary=summary)
    if io_failed:
        return EXIT_USAGE
    if reporter.has_errors:
        return EXIT_ERRORS
    if args.format == "text" and not args.quiet:
        print(checked_line(files, len(reporter.diagnostics), fast=args.fast), file=sys.stderr)
    return EXIT_OK


def run_against(args: argparse.Namespace, out: TextIO) -> int:
    """``mcec check NEW --against OLD [--db URL]``: one line per effect site of OLD (what becomes
    of the runs there, :mod:`mcec.durable.against`); exit 1 when runs at some site cannot carry over."""
    from agentmonad.durable.errors import DurableError

    from mcec.durable.against import CANNOT, compare, shown

    if args.against is None or len(args.paths) != 1:
        print("mcec check: --against OLD_SPEC takes one new spec (and --db needs --against)", file=sys.stderr)
        return EXIT_USAGE
    try:
        changes, added = compare(args.against, args.paths[0], db=args.db)
    except DurableError as exc:
        print(f"mcec check: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for line in shown(changes, added):
        out.write(line + "\n")
    return EXIT_ERRORS if any(c.verdict == CANNOT for c in changes) else EXIT_OK


def checked_line(files: list[Path], warnings: int, *, fast: bool) -> str:
    """What a check without errors says on stderr, as ``mcec compile`` says ``compiled X -> Y``:
    ``checked a.mce: no errors`` (``checked 3 specs``, ``, 2 warnings``; ``--fast`` says mypy
    did not run), so that success is seen, not guessed from silence."""
    what = str(files[0]) if len(files) == 1 else f"{len(files)} specs"
    said = f", {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""
    return f"checked {what}: no errors{said}" + (" (--fast: without mypy)" if fast else "")


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_check]
