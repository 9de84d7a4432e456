"""``mcec check``: parse and check specs, reporting every diagnostic."""

from __future__ import annotations

import argparse
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
from mcec.compiler import check_source
from mcec.render import DEFAULT_LIMIT


def add_check(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec check PATH... [--format text|json] [--max-diagnostics N]``."""
    command = subparsers.add_parser(
        "check", help="parse and check specs, reporting diagnostics", description="Parse and check `.mce` specs."
    )
    command.add_argument("paths", nargs="+", metavar="PATH", help="a .mce file, or a folder searched recursively")
    command.add_argument("--format", choices=("text", "json"), default="text", help="diagnostic format")
    command.add_argument(
        "--max-diagnostics",
        type=non_negative,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show at most N diagnostics (default {DEFAULT_LIMIT}; 0 = no limit)",
    )
    command.set_defaults(func=run_check)


def run_check(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``mcec check``: report every diagnostic of every spec named."""
    limit = args.max_diagnostics or None
    reporter = Reporter(out, args.format, limit, color_wanted(out) and args.format == "text")
    files, problems = collect_specs(args.paths)
    io_failed = bool(problems)
    reporter.add(problems)
    for path in files:
        source, problem = load_source(path)
        if problem is not None:
            reporter.add([problem], source)
            io_failed = io_failed or problem.code == "MCE005"
            continue
        assert source is not None
        reporter.add(check_source(source).diagnostics, source)
    reporter.flush()
    if io_failed:
        return EXIT_USAGE
    return EXIT_ERRORS if reporter.has_errors else EXIT_OK


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_check]
