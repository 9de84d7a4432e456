"""Offsets into a spec's text ↔ the protocol's positions (0-based line, UTF-16 column).

A :class:`~mcec.span.Span` counts code points; LSP clients count UTF-16 code
units by default, so a character outside the BMP (an emoji in a comment) is
one offset but two columns. Every conversion of the server goes through here.
"""

from __future__ import annotations

from lsprotocol import types as lsp

from mcec.span import SourceFile, Span

__all__ = ["offset_of", "position_of", "range_of"]


def _utf16_length(text: str) -> int:
    """How many UTF-16 code units ``text`` takes."""
    if text.isascii():
        return len(text)  # most lines: one unit a character, and no Python loop over them
    # (encoded, in C: a character outside the BMP is a surrogate pair; a lone surrogate one unit)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def position_of(source: SourceFile, offset: int) -> lsp.Position:
    """The protocol position of a 0-based offset (clamped to the text)."""
    line, column = source.position(offset)
    if source.ascii:
        return lsp.Position(line=line - 1, character=column - 1)  # one unit a character
    before = source.line_text(line)[: column - 1]
    return lsp.Position(line=line - 1, character=_utf16_length(before))


def range_of(span: Span) -> lsp.Range:
    """The protocol range of a span."""
    return lsp.Range(start=position_of(span.source, span.start), end=position_of(span.source, span.end))


def offset_of(source: SourceFile, position: lsp.Position) -> int:
    """The 0-based offset of a protocol position (a column past the line's end is its end)."""
    line = position.line + 1
    if line > source.line_count:
        return len(source.text)
    text = source.line_text(line)
    units = 0
    column = 0
    for ch in text:
        if units >= position.character:
            break
        units += 2 if ord(ch) > 0xFFFF else 1
        column += 1
    line_start = _line_start(source, line)
    return line_start + column


def _line_start(source: SourceFile, line: int) -> int:
    """The offset where 1-based ``line`` starts."""
    # SourceFile keeps its line index private; the start of a line is where the previous lines end.
    offset = 0
    for _ in range(line - 1):
        newline = source.text.find("\n", offset)
        if newline < 0:
            return len(source.text)
        offset = newline + 1
    return offset
