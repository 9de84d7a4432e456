"""The grammar, ``grammar/mce.lark``, and the word lists derived from it.

The grammar file is the only definition of the language's syntax: the parser
is built from it (:mod:`mcec.syntax.parser`), and the tables syntax errors are
written from — how each punctuation terminal is spelled, which words are
reserved, which terminals can start a declaration or a term — are read off
the same Lark grammar here, never retyped.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.resources
import keyword
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lark
from lark.lexer import PatternStr

__all__ = ["GrammarTables", "PYTHON_KEYWORDS", "grammar_parser", "load_grammar", "tables"]

#: Python's keywords: a name spelled like one is MCE016 (the generated module could not use it).
PYTHON_KEYWORDS: frozenset[str] = frozenset(keyword.kwlist)


def load_grammar() -> str:
    """The text of ``mce.lark``: the wheel's ``mcec/grammar/mce.lark``, else the checkout's ``grammar/mce.lark``."""
    packaged = importlib.resources.files("mcec") / "grammar" / "mce.lark"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammar" / "mce.lark").read_text(encoding="utf-8")


def grammar_parser(use: str, **options: Any) -> lark.Lark:
    """An LALR ``lark.Lark`` of the grammar with ``options``, its grammar analysis kept between
    processes in the user's cache folder (Lark's own ``cache``).

    Analysing the grammar takes about 0.25 s, loading the analysis about 0.03 s, and every ``mcec``
    command that reads a spec pays it. The file is ``$XDG_CACHE_HOME/mcec`` (else ``~/.cache/mcec``)
    ``/grammar-{use}-{digest}.lark``, named by the grammar and Lark's version so that installs of
    different versions do not rewrite each other's; inside it Lark checks the grammar, the options and
    the Python version again, and analyses afresh when the file is missing, stale or unreadable (a
    process that reads it half-written by another is one of those). Without a folder it may write,
    nothing is cached. The user's own folder, not Lark's default in the shared temporary folder:
    the file is a pickle, which nobody else should be able to put there.
    """
    grammar = load_grammar()
    return lark.Lark(grammar, parser="lalr", cache=_cache_file(use, grammar) or False, **options)


def _cache_file(use: str, grammar: str) -> str | None:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "mcec"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return None
    digest = hashlib.sha256(f"{grammar}\0{lark.__version__}".encode()).hexdigest()[:16]
    return str(folder / f"grammar-{use}-{digest}.lark")


@dataclass(frozen=True, slots=True)
class GrammarTables:
    """What the grammar says about its terminals, as plain data."""

    #: Punctuation terminal name → how it is written (``"BINDOP"`` → ``">>="``), and the
    #: soft keywords of v2 (``"RETRY"`` → ``"retry"``), which are no reserved words.
    spelling: dict[str, str]
    #: Keyword terminal name → the word (``"PAR"`` → ``"par"``): the reserved words of docs/language.md §2.
    keywords: dict[str, str]
    #: Terminals that can start a top-level declaration.
    declaration_start: frozenset[str]
    #: Terminals that can start an expression term.
    term_start: frozenset[str]
    #: The words a declaration starts with, in the grammar's order (``async``, which
    #: modifies the word after it, left out).
    declaration_words: tuple[str, ...]

    @property
    def reserved_words(self) -> frozenset[str]:
        """The reserved words, as written."""
        return frozenset(self.keywords.values())


#: A soft keyword's pattern: the word, then a lookahead (``retry(?=\\s*\\()``, ``then(?![A-Za-z0-9_])``).
_SOFT_KEYWORD = re.compile(r"([a-z]+)\(\?[=!].*\)", re.DOTALL)


@functools.cache
def tables() -> GrammarTables:
    """The tables of the grammar (read once per process).

    They need the grammar's terminals and rules, which Lark compiles the same for every parser:
    a plain parser of the grammar, loaded from the cache (:func:`grammar_parser`; an Earley one,
    which needs no tables, took 0.11 s to make, the cached one 0.03 s to load).
    """
    grammar = grammar_parser("tables", lexer="basic", maybe_placeholders=False)
    name_pattern = re.compile(next(t.pattern.to_regexp() for t in grammar.terminals if t.name == "NAME"))
    spelling: dict[str, str] = {}
    keywords: dict[str, str] = {}
    for terminal in grammar.terminals:
        if isinstance(terminal.pattern, PatternStr):
            text = terminal.pattern.value
            (keywords if name_pattern.fullmatch(text) else spelling)[terminal.name] = text
        else:
            soft = _SOFT_KEYWORD.fullmatch(terminal.pattern.value)
            if soft is not None:
                spelling[terminal.name] = soft.group(1)
    rules = [(str(rule.origin.name), [str(s.name) for s in rule.expansion]) for rule in grammar.rules]
    first = _first_sets(rules)
    # reserved words (`step`) and soft ones (`model`, `llm`: NAME never starts a declaration)
    words = [keywords.get(t) or spelling[t] for t in _leading_keywords(rules, "_decl", first) if t in keywords or t in spelling]
    return GrammarTables(spelling, keywords, first["_decl"], first["_term"], tuple(words))


def _leading_keywords(rules: list[tuple[str, list[str]]], origin: str, first: dict[str, frozenset[str]]) -> list[str]:
    """The terminal each alternative of ``origin`` is introduced by, in rule order.

    An alternative's leading terminals are its FIRST set, less any terminal
    that is followed by another of them in some expansion (an optional
    modifier such as ``async`` in ``async? step``).
    """
    leading: list[str] = []
    for alternative in [expansion[0] for rule, expansion in rules if rule == origin and expansion]:
        starts = first.get(alternative, frozenset({alternative}))
        modifiers = {
            expansion[0]
            for rule, expansion in rules
            if rule == alternative and len(expansion) > 1 and expansion[1] in starts
        }
        leading.extend(t for t in sorted(starts - modifiers) if t not in leading)
    return leading


def _first_sets(rules: Iterable[tuple[str, list[str]]]) -> dict[str, frozenset[str]]:
    """FIRST(rule) for every rule: the terminals a rule's text can start with.

    No rule of the grammar derives the empty string except through ``x*``
    helpers, and those never stand first in a rule, so the first symbol of
    each alternative decides.
    """
    alternatives: dict[str, list[list[str]]] = {}
    for origin, expansion in rules:
        alternatives.setdefault(origin, []).append(expansion)
    first: dict[str, set[str]] = {origin: set() for origin in alternatives}
    changed = True
    while changed:
        changed = False
        for origin, expansions in alternatives.items():
            for expansion in expansions:
                if not expansion:
                    continue
                head = expansion[0]
                found = first[head] if head in first else {head}
                if not found <= first[origin]:
                    first[origin] |= found
                    changed = True
    return {origin: frozenset(terminals) for origin, terminals in first.items()}
