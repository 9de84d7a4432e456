"""Robustness: no input makes the parser raise; bad input gives diagnostics."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcec.syntax import parse
from mcec.render import render_json, render_text
from mcec.span import SourceFile

VALID = sorted((Path(__file__).parent / "cases" / "parse").glob("*.mce"))
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|>>=|->|=>|[A-Za-z_][A-Za-z0-9_]*|[0-9]+|#[^\n]*|\s+|.', re.DOTALL)


def check_never_raises(text: str) -> None:
    source = SourceFile("fuzz.mce", text)
    result = parse(source)
    if result.module is None:
        assert any(d.is_error for d in result.diagnostics)
    # Rendering must cope with whatever spans came out.
    render_text(result.diagnostics, {"fuzz.mce": source}, color=True)
    for diagnostic in result.diagnostics:
        render_json(diagnostic)
        assert 0 <= diagnostic.span.start <= diagnostic.span.end <= len(text)


def _tokens(path: Path) -> list[str]:
    return TOKEN.findall(path.read_bytes().decode("utf-8").lstrip("\ufeff"))


ALPHABET = st.sampled_from(
    list("abcxyz_09 \t\n\r;:,.|!=<>()[]{}#\"\\$é\x00")
    + ["par", "each", "local", "catch", "orelse", ">>=", "->", "=>", "step", "pipeline", "fn", "limit", "class"]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ALPHABET, max_size=60).map("".join))
def test_garbage_never_raises(text: str) -> None:
    check_never_raises(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_random_text_never_raises(text: str) -> None:
    check_never_raises(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(VALID),
    st.lists(st.tuples(st.sampled_from(["delete", "duplicate", "swap"]), st.integers(0, 10_000)), min_size=1, max_size=4),
)
def test_token_mutations_never_raise(path: Path, edits: list[tuple[str, int]]) -> None:
    tokens = _tokens(path)
    if not tokens:
        return
    for action, position in edits:
        i = position % len(tokens)
        if action == "delete":
            del tokens[i]
        elif action == "duplicate":
            tokens.insert(i, tokens[i])
        elif len(tokens) > 1:
            j = (i + 1) % len(tokens)
            tokens[i], tokens[j] = tokens[j], tokens[i]
        if not tokens:
            return
    check_never_raises("".join(tokens))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_decoded_leniently_never_raise(data: bytes) -> None:
    check_never_raises(data.decode("utf-8", errors="replace"))


def test_very_long_line() -> None:
    line = "pipeline p : A -> B = " + " >>= ".join(["a"] * 200_000) + ";"
    assert len(line) > 1_000_000
    assert parse(SourceFile("long.mce", line)).diagnostics == ()
    bad = "x" * 1_000_000 + " $"
    source = SourceFile("long.mce", bad)
    result = parse(source)
    assert result.module is None
    rendered = render_text(result.diagnostics, {"long.mce": source}, color=False)
    assert len(rendered) < 2_000


def test_deep_nesting_errors_do_not_overflow() -> None:
    depth = 10_000
    for text in (
        "pipeline p : A -> B = " + "(" * depth + "a;",
        "pipeline p : A -> B = " + "par <" * depth + "a;",
        "pipeline p : A -> B = " + "par <a, " * depth + "a" + ">" * depth + ";",
        "pipeline p : A -> B = " + "(" * depth + "a" + ")" * depth + ";",
    ):
        result = parse(SourceFile("deep.mce", text))
        check_never_raises(text)
        assert result.diagnostics or result.module is not None


def test_nul_bom_crlf() -> None:
    assert parse(SourceFile("b.mce", "\ufeffstate S\r\n")).diagnostics == ()
    result = parse(SourceFile("n.mce", "state S\x00\n"))
    assert result.module is None and result.diagnostics[0].code == "MCE001"
    assert "U+0000" in result.diagnostics[0].message
