"""The runtime's command line, ``python -m agentmonad``, for the machines that run compiled
modules (the compiler not installed): ``run``, ``worker``, ``serve`` and ``runs …`` with the names, flags
and JSON of ``mcec``'s commands of the same names (README.md, "Deploying")."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from .common import EXIT_INTERNAL, EXIT_USAGE

__all__ = ["main"]

PROGRAM = "python -m agentmonad"


def _parser() -> argparse.ArgumentParser:
    from .run import add_run, add_worker
    from .runs import add_runs
    from .serve import add_serve

    parser = argparse.ArgumentParser(prog=PROGRAM, description="Run compiled mcec modules, durably or not.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    add_run(commands)
    add_worker(commands)
    add_serve(commands)
    add_runs(commands, PROGRAM)
    parser.set_defaults(program=PROGRAM)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run one command; its exit status."""
    args = _parser().parse_args(argv)
    args.program = PROGRAM
    try:
        status: int = args.func(args, out if out is not None else sys.stdout)
    except KeyboardInterrupt:
        return EXIT_USAGE
    except Exception as exc:  # a fault of the runtime itself: one line, not a traceback
        print(f"{PROGRAM}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    return status
