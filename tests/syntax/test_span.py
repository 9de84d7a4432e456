"""Spans: offsets stored, line/column derived from the source's line index."""

from __future__ import annotations

import dataclasses
import random

import pytest

from mcec.span import Frame, SourceFile, Span


def _line_starts_by_scan(text: str) -> tuple[int, ...]:
    """The line index the obvious way: 0 and every offset after a newline."""
    return (0, *(i + 1 for i, ch in enumerate(text) if ch == "\n"))


@pytest.mark.parametrize("text", ["", "\n", "\n\n", "a", "a\n", "\na", "ab\r\ncd\r\n", "é😀\nx"])
def test_line_index_matches_a_character_scan(text: str) -> None:
    source = SourceFile("a.mce", text)
    starts = _line_starts_by_scan(text)
    assert source.line_count == len(starts)
    for offset in range(len(text) + 1):
        line = max(i for i, start in enumerate(starts) if start <= offset)
        assert source.position(offset) == (line + 1, offset - starts[line] + 1)


def test_line_index_on_random_text() -> None:
    rng = random.Random(7)
    for _ in range(500):
        text = "".join(rng.choice("ab \n\r\té😀") for _ in range(rng.randint(0, 40)))
        source = SourceFile("a.mce", text)
        starts = _line_starts_by_scan(text)
        assert source.line_count == len(starts)
        for number in range(1, len(starts) + 1):
            stop = starts[number] - 1 if number < len(starts) else len(text)
            assert source.line_text(number) == text[starts[number - 1] : stop].rstrip("\r")


def test_line_and_column_come_from_offsets() -> None:
    source = SourceFile("a.mce", "ab\nc😀de\n")
    span = source.span(4, 7)  # "😀de": a column counts code points
    assert sorted(Span.__slots__) == ["_end", "_frame", "_start"]  # a frame and two offsets, nothing else
    assert (span.path, span.start, span.end) == ("a.mce", 4, 7)
    assert (span.line, span.column, span.end_line, span.end_column) == (2, 2, 2, 5)
    assert str(span) == "a.mce:2:2"
    assert repr(span) == "Span('a.mce', 2:2-2:5)"
    across = source.span(1, 8)
    assert (across.line, across.column, across.end_line, across.end_column) == (1, 2, 3, 1)


def test_repr_never_shows_the_text() -> None:
    source = SourceFile("big.mce", "pipeline p = a\n" * 1000)
    assert repr(source.span(15, 23)) == "Span('big.mce', 2:1-2:9)"


def test_equality_and_hash_are_by_source_and_offsets() -> None:
    source = SourceFile("a.mce", "abc def")
    same_text = SourceFile("a.mce", "abc def")
    other_text = SourceFile("a.mce", "abc dex")
    assert source.span(0, 3) == Span(source, 0, 3) == same_text.span(0, 3)
    assert hash(source.span(0, 3)) == hash(same_text.span(0, 3))
    assert source.span(0, 3) != source.span(0, 2)
    assert source.span(0, 3) != other_text.span(0, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        source.span(0, 3).start = 1  # type: ignore[misc]


def test_cover() -> None:
    source = SourceFile("a.mce", "ab\ncd ef\n")
    left, right = source.span(1, 2), source.span(6, 8)
    assert left.cover(right) == right.cover(left) == Span(source, 1, 8)
    assert (left.cover(right).line, left.cover(right).end_line, left.cover(right).end_column) == (1, 2, 6)


def test_a_span_in_a_frame_moves_with_it() -> None:
    old = SourceFile("a.mce", "fn f : A -> A = m.f\n")
    frame = Frame(old)
    name = Span(frame, 3, 4)
    whole = Span(frame, 0, 19)
    assert (name.start, name.end, name.source) == (3, 4, old)
    assert name.cover(whole).frame is frame  # a cover of two spans in one frame stays in it
    new = SourceFile("a.mce", "# a line before\n" + old.text)
    frame.source, frame.base = new, 16  # what a re-parse does to a declaration that moved
    assert (name.start, name.end, name.source) == (19, 20, new)
    assert new.text[name.start : name.end] == "f" and (name.line, name.column) == (2, 4)
    assert name == new.span(19, 20) and hash(name) == hash(new.span(19, 20))  # equal by where it is now
    assert Span(frame, 19, 20) == name  # made with offsets into the text as it is now
    assert name.at(16, 18).frame is frame and name.at(16, 18) == new.span(16, 18)


def test_file_start() -> None:
    span = Span.file_start("missing.mce")
    assert (span.path, span.start, span.end) == ("missing.mce", 0, 0)
    assert (span.line, span.column, span.end_line, span.end_column) == (1, 1, 1, 1)
    assert span.source.text == "" and str(span) == "missing.mce:1:1"
    assert span == Span.file_start("missing.mce")
