"""``mcec explain CODE``: what a diagnostic code means, from the language reference.

The reference (``docs/language.md``, shipped in the wheel as
``mcec/docs/language.md``) lists every code mcec can print in its §8 table;
this prints that row, the one-line summary of the code, and where to read more.
"""

from __future__ import annotations

import argparse
import importlib.resources
import re
from pathlib import Path
from typing import TextIO

from mcec.cli.common import EXIT_OK, EXIT_USAGE, Subparsers
from mcec.diagnostics import CODES

#: Where the reference is read from: the wheel's copy, else the checkout's.
REFERENCE = "docs/language.md"


def reference_text() -> str | None:
    """The language reference, or None when neither the wheel nor the checkout has it."""
    packaged = importlib.resources.files("mcec") / "docs" / "language.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    checkout = Path(__file__).resolve().parents[2] / REFERENCE
    return checkout.read_text(encoding="utf-8") if checkout.is_file() else None


def reference_entries(text: str) -> dict[str, str]:
    """Code → its explanation, from the rows ``| CODE | explanation |`` of the reference's tables."""
    entries: dict[str, str] = {}
    for match in re.finditer(r"^\| (MCE\d{3}|W\d{3}) \| (.+?) \|$", text, re.MULTILINE):
        entries.setdefault(match.group(1), match.group(2).strip())
    return entries


def add_explain(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec explain CODE``."""
    command = subparsers.add_parser(
        "explain",
        help="say what a diagnostic code means",
        description="Print what a diagnostic code (MCE013, W001, …) means, from the language reference.",
    )
    command.add_argument("code", metavar="CODE", help="a diagnostic code, such as MCE013")
    command.set_defaults(func=run_explain)


def run_explain(args: argparse.Namespace, out: TextIO) -> int:
    """Print the reference's entry for the code (exit 2 for a code mcec does not have)."""
    code = str(args.code).upper()
    if code not in CODES:
        known = ", ".join(sorted(CODES))
        out.write(f"mcec explain: no diagnostic code {args.code!r}; the codes are {known}\n")
        return EXIT_USAGE
    text = reference_text()
    entry = reference_entries(text).get(code) if text is not None else None
    out.write(f"{code}: {entry or CODES[code]}\n")
    out.write(f"\nThe language reference, {REFERENCE} §8, lists every code; its sections explain the rules behind them.\n")
    return EXIT_OK


#: The sub-commands this module adds to ``mcec``.
COMMANDS = [add_explain]
