"""The fast recursive-descent path (mcec.descent) against the LALR parser.

``parse`` tries :func:`mcec.descent.parse_valid` first and falls back to the
LALR parser, so the two must agree: on every input the fast path accepts, the
trees are equal (spans included), and it accepts nothing the LALR parser
rejects or has a diagnostic for.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcec import syntax as s
from mcec.descent import PUNCTUATION, RESERVED_WORDS, parse_valid
from mcec.lalr import _tables
from mcec.parser import parse, parse_lalr
from mcec.span import SourceFile
from tests.spec_gen import mutate, specs

ROOT = Path(__file__).resolve().parent.parent
VALID = sorted(
    [*(ROOT / "tests" / "cases" / "parse").glob("*.mce"), *(ROOT / "examples").rglob("*.mce")],
    key=str,
)
SYNTAX_ERRORS = sorted((ROOT / "tests" / "cases" / "syntax").glob("*.mce"), key=str)


def _agree(text: str, path: str = "t.mce") -> s.Module | None:
    """Parse ``text`` both ways; assert the fast path's promise; return its tree."""
    source = SourceFile(path, text)
    fast = parse_valid(source)
    slow = parse_lalr(source)
    if fast is not None:
        assert slow.module is not None and not slow.diagnostics, slow.diagnostics[:2]
        assert fast == slow.module
    return fast


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_files_take_the_fast_path_and_agree(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")
    slow = parse_lalr(SourceFile(path.name, text))
    fast = _agree(text, path.name)
    if slow.ok and not slow.diagnostics:
        assert fast is not None, "a valid file fell back to the slow parser"


@pytest.mark.parametrize("path", SYNTAX_ERRORS, ids=lambda p: p.name)
def test_files_with_syntax_diagnostics_are_left_to_the_lalr_parser(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", errors="replace")
    if parse_lalr(SourceFile(path.name, text)).diagnostics:
        assert parse_valid(SourceFile(path.name, text)) is None
    else:  # a case whose diagnostic comes from reading the file (invalid UTF-8), not from parsing
        assert _agree(text, path.name) is not None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_generated_specs_agree(text: str) -> None:
    assert _agree(text) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VALID), st.integers(0, 2**32), st.integers(1, 4))
def test_mutated_files_agree(path: Path, seed: int, mutations: int) -> None:
    _agree(mutate(path.read_text(encoding="utf-8"), random.Random(seed), mutations))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted([*RESERVED_WORDS, *PUNCTUATION, " ", "\n", "a", "b", "#c\n", "1", '"x"'])), max_size=60))
def test_token_soup_agrees(pieces: list[str]) -> None:
    _agree(" ".join(pieces))


def test_the_tokenizer_knows_the_grammars_terminals() -> None:
    tables = _tables()
    assert set(tables.keywords) == RESERVED_WORDS
    assert set(tables.punctuation) == set(PUNCTUATION)


@pytest.mark.parametrize(
    "text",
    [
        "fn class : int -> int = m.f",  # a Python keyword as a declared name: MCE016
        "pipeline p : int -> int = None;",  # ... as a reference
        "fn f : int -> int = m.def",  # ... after a dot
        "import class",  # ... heading a module path
        "step s : int -> int = lambda.s",  # ... heading an implementation name
        'server s = stdio "\\q"',  # an invalid escape: MCE001
        "fn f : int -> int = m.f\nfn g : int -> int",  # a syntax error
        "\x00",
    ],
)
def test_anything_needing_a_diagnostic_falls_back(text: str) -> None:
    assert parse_valid(SourceFile("t.mce", text)) is None
    assert parse(SourceFile("t.mce", text)).diagnostics


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t",
        "# only a comment",
        "# a\n#b\r\n   # c\n",
        "fn f : int -> int = m.f # trailing, no newline",
        "fn f : int -> int = m.f\n# last\n\n  # very last  ",
        "# head\n\n#\nfn f : int -> int = m.f # after\n  # between\n# twice # in one\nfn g : int -> int = m.g",
        'server s = stdio "a # not a comment" # but this is',
        'server s = stdio "#"#x\n',
        "fn f : int -> int = m.f#x\nfn g : int -> int = m.g",
        "fn f : int -> int = m.f\n# café — ünïcode\n",
        "\ufeff# bom then comment\nfn f : int -> int = m.f",
        "\t# tab first\r\nfn f : int -> int = m.f\r\n# crlf last\r\n",
        "fn f : int -> int = m.f\n  # a\r  b, still the comment\n\n\x0c  # after a form feed\nfn g : int -> int = m.g",
        "fn f : int -> int = m.f # one\n# two\n    # three",
    ],
)
def test_comments_and_gaps_agree(text: str) -> None:
    """Comments sit in the gap before a token (or in the last gap); the fast path must place each."""
    fast = _agree(text)
    assert fast is not None
    assert [c.text for c in fast.comments] == [c.text for c in parse_lalr(SourceFile("t.mce", text)).module.comments]  # type: ignore[union-attr]


@pytest.mark.parametrize("space", ["\x0b", "\x1c", "\x1f", "\x85", "\xa0", "\u2003", "\u3000"])
@pytest.mark.parametrize("where", ["end", "middle", "after_name", "after_comment"])
def test_whitespace_the_grammar_does_not_allow_is_not_skipped(space: str, where: str) -> None:
    """``str.lstrip()`` would strip these; the grammar's WS does not, so the file has a syntax error."""
    text = {
        "end": f"fn f : int -> int = m.f{space}",
        "middle": f"fn f : int ->{space}int = m.f",
        "after_name": f"fn f{space} : int -> int = m.f\n",
        "after_comment": f"# c\n{space}fn f : int -> int = m.f\n",
    }[where]
    assert parse_valid(SourceFile("t.mce", text)) is None
    assert parse(SourceFile("t.mce", text)).diagnostics


def test_nesting_deeper_than_recursion_allows_falls_back_to_the_iterative_parser() -> None:
    depth = 50_000
    text = "step a : int -> int = m.a\npipeline p : int -> int = " + "(" * depth + "a" + ")" * depth + ";"
    assert parse_valid(SourceFile("t.mce", text)) is None
    result = parse(SourceFile("t.mce", text))
    assert result.ok and result.module is not None


def test_shallow_nesting_stays_on_the_fast_path() -> None:
    text = "step a : int -> int = m.a\npipeline p : int -> int = " + "local (" * 50 + "a" + ")" * 50 + ";"
    assert _agree(text) is not None
