"""The ``mcec`` command line: the only package of the compiler that does file I/O.

Structure: :func:`build_parser` creates one argparse sub-command per entry of
:data:`COMMAND_MODULES`: each of those modules has a ``COMMANDS`` list of small
``add_<name>(subparsers)`` functions that declare a command's arguments and set
``func`` to the function running it, ``run_<name>(args, out) -> int``. To add a
command, write those two functions in a module of this package, list the module in
:data:`COMMAND_MODULES` and the command in :data:`COMMAND_OF`; shared helpers are in
:mod:`mcec.cli.common`. ``mcec CMD`` imports only the module of ``CMD``: most of a
short command's time is its imports, and one command's (the compiler, the runtime) are
no business of another's, so a command module imports at its top only what declaring
its arguments needs.

Exit status: 0 no error (warnings allowed), 1 an error was reported, 2 usage or
I/O problem (a missing file is an MCE005 diagnostic), 3 internal compiler error
(a bug, reported in one tidy line instead of a traceback).

Diagnostics go to stdout (they are the output of ``check``); in text mode a
summary line (``error: 2 errors, 1 warning emitted``) follows them. Text is
coloured only when stdout is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from mcec.cli.common import EXIT_ERRORS, EXIT_INTERNAL, EXIT_USAGE, Subparsers, UsageError

__all__ = ["COMMAND_MODULES", "COMMAND_OF", "build_parser", "main"]


#: The modules that add sub-commands; each has a ``COMMANDS`` list of ``add_<name>`` functions.
COMMAND_MODULES: list[str] = [
    "mcec.cli.check",
    "mcec.cli.compile",
    "mcec.cli.fmt",
    "mcec.cli.graph",
    "mcec.cli.serve",
    "mcec.cli.explain",
    "mcec.cli.lsp",
    "mcec.cli.runs",
    "mcec.cli.worker",
    "mcec.cli.console",
    "mcec.cli.eval",
    "mcec.cli.replay",
]


#: The module of :data:`COMMAND_MODULES` that adds each sub-command, so that ``mcec CMD`` imports
#: that module only (tests/cli/test_cli_startup.py holds that this agrees with the modules). A
#: command missing here still works, through the parser of every module.
COMMAND_OF: dict[str, str] = {
    "check": "mcec.cli.check",
    "compile": "mcec.cli.compile",
    "build": "mcec.cli.compile",
    "run": "mcec.cli.compile",
    "fmt": "mcec.cli.fmt",
    "graph": "mcec.cli.graph",
    "serve": "mcec.cli.serve",
    "explain": "mcec.cli.explain",
    "lsp": "mcec.cli.lsp",
    "runs": "mcec.cli.runs",
    "worker": "mcec.cli.worker",
    "console": "mcec.cli.console",
    "eval": "mcec.cli.eval",
    "replay": "mcec.cli.replay",
}


def _commands(modules: Sequence[str]) -> list[Callable[[Subparsers[argparse.ArgumentParser]], None]]:
    """The ``add_<name>`` functions of ``modules``."""
    adders: list[Callable[[Subparsers[argparse.ArgumentParser]], None]] = []
    for name in modules:
        adders.extend(importlib.import_module(name).COMMANDS)
    return adders


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argparse parser with every sub-command of :data:`COMMAND_MODULES`; given a ``command``
    of :data:`COMMAND_OF`, with the sub-commands of its module only (a parser for ``mcec
    COMMAND …``, which imports nothing the others need)."""
    from mcec.version import __version__

    parser = argparse.ArgumentParser(prog="mcec", description="The Monadic Context Engineering compiler.")
    parser.add_argument("--version", action="version", version=f"mcec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    module = COMMAND_OF.get(command) if command is not None else None
    for add in _commands([module] if module is not None else COMMAND_MODULES):
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mcec`` console script; returns the exit status."""
    out = sys.stdout
    if hasattr(out, "reconfigure"):
        # Never fail on a terminal that cannot show a character of a spec.
        out.reconfigure(errors="backslashreplace")
    words = list(sys.argv[1:] if argv is None else argv)
    # `mcec CMD …` needs the parser of CMD only; `mcec --help`, `mcec -h CMD`, a misspelt command:
    # the whole parser, which lists (or suggests) every command
    command = words[0] if words and words[0] in COMMAND_OF else None
    try:
        args = build_parser(command).parse_args(words)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        status: int = args.func(args, out)
        return status
    except UsageError as exc:
        print(f"mcec: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`mcec check … | head`): not an error of ours. Point
        # stdout at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERRORS
    except Exception as exc:  # a bug: one tidy line, never a traceback
        message = str(exc) or type(exc).__name__
        print(f"internal compiler error: {type(exc).__name__}: {message}", file=sys.stderr)
        print("this is a bug in mcec; please report it with the spec that triggered it", file=sys.stderr)
        return EXIT_INTERNAL
