"""Text to syntax tree: :func:`parse`, in two tiers.

1. :func:`mcec.descent.parse_valid`, a recursive-descent parser for valid
   specs, builds the tree for a valid file; it gives up on anything that needs
   a diagnostic.
2. Otherwise :func:`parse_lalr` runs the LALR parser of :mod:`mcec.lalr` (the
   only module that knows Lark exists: Lark builds the table from
   ``grammar/mce.lark``, our driver runs it), which explains every syntax
   problem and builds the same tree where there is one.

The LALR parser is imported on first use, so a run over valid files never
loads Lark. docs/DESIGN.md says why there are two parsers and how they are
kept in agreement.

Decision: ``ParseResult.module`` is ``None`` when any syntax error (MCE001 or a
reserved word used as a name) was found. A Python keyword used as a name
(MCE016) does not stop the tree from being built, so ``module`` is then set and
the checker may still run.
"""

from __future__ import annotations

import importlib.resources
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from mcec import syntax as s
from mcec.descent import parse_valid
from mcec.diagnostics import Diagnostic
from mcec.gc_pause import gc_paused
from mcec.span import SourceFile

__all__ = ["MAX_SYNTAX_ERRORS", "ParseResult", "load_grammar", "parse", "parse_lalr"]

#: At most this many syntax errors are reported per file; later ones are usually echoes.
MAX_SYNTAX_ERRORS: Final = 20


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What :func:`parse` returns: the tree (``None`` after a syntax error) and diagnostics in source order."""

    module: s.Module | None
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        """True when a tree was built and no error was reported."""
        return self.module is not None and not any(d.is_error for d in self.diagnostics)


def load_grammar() -> str:
    """The text of ``mce.lark``: the wheel's ``mcec/grammar/mce.lark``, else the checkout's ``grammar/mce.lark``."""
    packaged = importlib.resources.files("mcec") / "grammar" / "mce.lark"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parent.parent / "grammar" / "mce.lark").read_text(encoding="utf-8")


def parse(source: SourceFile) -> ParseResult:
    """Parse one `.mce` file.

    Never raises on any input: every problem becomes a diagnostic. ``module`` is
    ``None`` when a syntax error was found; diagnostics are sorted by position.
    A valid file takes the fast path (:mod:`mcec.descent`); anything else is
    parsed by :func:`parse_lalr`, which builds the same tree where there is one.
    """
    with gc_paused():
        module = parse_valid(source)
        if module is not None:
            return ParseResult(module, ())
    return parse_lalr(source)


def parse_lalr(source: SourceFile) -> ParseResult:
    """Parse one `.mce` file with the LALR parser only, reporting every syntax problem.

    :func:`parse` falls back to this; tests call it directly to check that the
    fast path builds the same tree.
    """
    from mcec import lalr  # Lark loads here, only when a file needs explaining

    with gc_paused():
        return lalr.parse(source)
