"""``mcec lsp``: the language server on stdin/stdout (:mod:`mcec.lsp`, docs/editor.md)."""

from __future__ import annotations

import argparse
import importlib.util
from typing import TextIO

from mcec.cli.common import EXIT_OK, Subparsers, UsageError


def add_lsp(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec lsp``."""
    command = subparsers.add_parser(
        "lsp",
        help="run the language server (for editors) on stdin/stdout",
        description="Run the mcec language server over stdio: diagnostics as you type and on save, types on "
        "hover, definitions, references, completion, quick fixes, formatting. Needs the `lsp` extra "
        "(pip install 'mcec[lsp]').",
    )
    command.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (the default; for clients that pass it)")
    command.set_defaults(func=run_lsp)


def run_lsp(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until the client exits; pygls is imported here only, so no other command pays for it."""
    if importlib.util.find_spec("pygls") is None:
        raise UsageError("the language server needs pygls: pip install 'mcec[lsp]'")
    from mcec.lsp import serve_stdio

    serve_stdio()
    return EXIT_OK


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_lsp]
