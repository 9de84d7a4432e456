"""Offsets ↔ protocol positions (mcec/lsp/positions.py): columns count UTF-16 code units."""

from __future__ import annotations

from lsprotocol import types as lsp

from mcec.lsp.positions import offset_of, position_of
from mcec.span import SourceFile


def test_a_character_outside_the_bmp_is_two_columns_and_the_rest_one() -> None:
    source = SourceFile("a.mce", "ab\n# 😀é x\n\ud800y\n")
    assert position_of(source, 1) == lsp.Position(line=0, character=1)
    x = source.text.index("x")
    assert position_of(source, x) == lsp.Position(line=1, character=6)  # "# ", 😀 (2), "é", " "
    assert offset_of(source, lsp.Position(line=1, character=6)) == x
    y = source.text.index("y")
    assert position_of(source, y) == lsp.Position(line=2, character=1)  # a lone surrogate is one unit
    for offset in range(len(source.text) + 1):
        if source.text[offset - 1 : offset] != "😀":  # (inside the pair there is no offset)
            assert offset_of(source, position_of(source, offset)) == offset
