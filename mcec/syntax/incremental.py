"""Re-parsing after an edit: only the declarations the edit touched are parsed again.

An editor re-checks a spec after every change, and most of a file is the same
text as before. :func:`reparse` compares the new text with the text the
previous tree was parsed from, parses again only the stretch between the last
declaration before the change and the first one after it, and keeps the other
declarations (and comments).

A kept declaration is the same object as before: its nodes hold their spans
relative to its :class:`~mcec.span.Frame`, and only the frame is moved into the
new text (by as many characters as the edit added before it). So a re-parse
costs the edited stretch plus one step per declaration, not per node, and what
was computed from a kept declaration (its signing, its diagnostics, its typed
nodes) holds for the new text as it is. The previous module's frames are put
back first (:meth:`~mcec.syntax.tree.Module.place`), since the same tree may be
re-parsed more than once.

Why this is sound: a file is a sequence of declarations (``start: _decl*``),
and what lies between two declarations is whitespace and comments. The
declarations the edit did not touch keep their text and their neighbours'
boundaries, so parsing the whole new file would build them again, node for
node, at their new offsets; the stretch in between is a sequence of
declarations of its own. A stretch that does not parse cleanly falls back to
parsing the whole file (no frame moved), so the diagnostics are always those
of a cold parse. ``tests/syntax/test_incremental.py`` checks ``reparse``
against :func:`parse` on random edits.
"""

from __future__ import annotations

from mcec.span import Frame, SourceFile, Span
from mcec.syntax import tree as s
from mcec.syntax.parser import ParseResult, parse, parse_region

__all__ = ["reparse"]


def reparse(previous: s.Module, source: SourceFile) -> ParseResult:
    """Parse ``source``, a new version of the text ``previous`` was parsed from, reusing what did not change.

    The result equals ``parse(source)``; it is only cheaper when the edit is small. The
    declarations it keeps are ``previous``'s own objects, moved into ``source``.
    """
    previous.place()
    old = previous.span.source.text
    new = source.text
    if old == new:
        _move(previous.decls, source, 0)
        comments = tuple(_comment(c, source, 0) for c in previous.comments)
        return ParseResult(s.Module(source.path, previous.decls, comments, Span(source, 0, len(new))), ())
    prefix = _common_prefix(old, new)
    suffix = _common_suffix(old, new, limit=min(len(old), len(new)) - prefix)
    changed_end = len(old) - suffix  # in old offsets; the change is old[prefix:changed_end]
    delta = len(new) - len(old)
    # Declarations ending before the change, or starting after it, are untouched (strictly:
    # a declaration that ends right where the change starts may have grown a token).
    before = [d for d in previous.decls if d.end < prefix]
    after = [d for d in previous.decls if d.start > changed_end]
    region_start = before[-1].end if before else 0
    old_region_end = after[0].start if after else len(old)
    region = parse_region(source, region_start, old_region_end + delta)
    if region is None:
        return parse(source)
    decls, found_comments = region
    _move(before, source, 0)
    _move(after, source, delta)
    kept_comments = [c for c in previous.comments if c.end <= region_start]
    moved_comments = [c for c in previous.comments if c.start >= old_region_end]
    module = s.Module(
        source.path,
        (*before, *decls, *after),
        (
            *[_comment(c, source, 0) for c in kept_comments],
            *found_comments,
            *[_comment(c, source, delta) for c in moved_comments],
        ),
        Span(source, 0, len(new)),
    )
    return ParseResult(module, ())


def _move(decls: list[s.Decl] | tuple[s.Decl, ...], source: SourceFile, delta: int) -> None:
    """Move each declaration's frame into ``source``, ``delta`` characters on."""
    for decl in decls:
        frame = decl.span.frame
        assert isinstance(frame, Frame), "the parser makes a frame per declaration"
        frame.source = source
        frame.base += delta


def _comment(comment: s.Comment, source: SourceFile, delta: int) -> s.Comment:
    """``comment`` in ``source``, ``delta`` characters on (a comment belongs to no declaration)."""
    return s.Comment(comment.text, Span(source, comment.start + delta, comment.end + delta))


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (binary search over slices, in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: str, b: str, limit: int) -> int:
    """The length of the longest common suffix of ``a`` and ``b``, at most ``limit``."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low
