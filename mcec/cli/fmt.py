"""``mcec fmt PATH... [--check] [--diff]``: rewrite specs in the canonical layout (:mod:`mcec.tools.fmt`)."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path
from typing import TextIO

from mcec.cli.common import (
    EXIT_ERRORS,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    Reporter,
    Subparsers,
    collect_specs,
    color_wanted,
    load_source,
)
from mcec.cli.output import rewrite_file  # writes through symlinks and hard links (see mcec.cli.output)
from mcec.tools.fmt import FormatError, format_source


def add_fmt(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec fmt PATH... [--check] [--diff]``."""
    command = subparsers.add_parser(
        "fmt",
        help="rewrite specs in the canonical layout",
        description="Rewrite `.mce` specs in the canonical layout (folders are searched recursively). "
        "Exit 0 when nothing is wrong; 1 when a spec does not parse, or with --check when a file would change; "
        "2 for usage or I/O problems; 3 when the formatter's self-check refused a file (a bug).",
    )
    command.add_argument("paths", nargs="+", metavar="PATH", help="a .mce file, or a folder searched recursively")
    command.add_argument("--check", action="store_true", help="write nothing; list the files that would change")
    command.add_argument("--diff", action="store_true", help="write nothing; print a unified diff of the changes")
    command.set_defaults(func=run_fmt)


def run_fmt(args: argparse.Namespace, out: TextIO) -> int:
    """Format each spec named (or found below a folder); see :func:`add_fmt` for exit statuses."""
    dry_run = bool(args.check or args.diff)
    reporter = Reporter(out, "text", None, color_wanted(out))
    files, problems = collect_specs(args.paths)
    reporter.add(problems)
    io_failed = bool(problems)
    internal = False
    unparsable = 0
    changed: list[Path] = []
    unchanged = 0
    for path in files:
        source, problem = load_source(path)
        if problem is not None or source is None:
            reporter.add([problem] if problem is not None else [], source)
            io_failed = io_failed or (problem is not None and problem.code == "MCE005")
            continue
        try:
            result = format_source(source)
        except FormatError as exc:
            print(f"mcec fmt: internal error, {path} left unchanged: {exc}", file=sys.stderr)
            internal = True
            continue
        if result.text is None:
            reporter.add(result.diagnostics, source)
            unparsable += 1
            continue
        if not result.changed:
            unchanged += 1
            continue
        changed.append(path)
        if args.diff:
            out.writelines(
                difflib.unified_diff(
                    source.text.splitlines(keepends=True),
                    result.text.splitlines(keepends=True),
                    f"{path} (original)",
                    f"{path} (formatted)",
                )
            )
        if args.check:
            out.write(f"would reformat {path}\n")
        elif not args.diff:
            try:
                rewrite_file(path, result.text)
            except OSError as exc:
                print(f"mcec fmt: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
                io_failed = True
                continue
            print(f"reformatted {path}", file=sys.stderr)
    if reporter.diagnostics:
        reporter.flush()
    failed = unparsable
    verb = "would be reformatted" if dry_run else "reformatted"
    summary = [f"{len(changed)} file{'s' if len(changed) != 1 else ''} {verb}"]
    summary.append(f"{unchanged} file{'s' if unchanged != 1 else ''} left unchanged")
    if failed:
        summary.append(f"{failed} file{'s' if failed != 1 else ''} could not be formatted")
    print(", ".join(summary) + ".", file=sys.stderr)
    if internal:
        return EXIT_INTERNAL
    if io_failed:
        return EXIT_USAGE
    if reporter.has_errors or (args.check and changed):
        return EXIT_ERRORS
    return EXIT_OK


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_fmt]
