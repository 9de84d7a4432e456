"""Re-parsing after an edit: only the declarations the edit touched are parsed again.

An editor re-checks a spec after every change, and most of a file is the same
text as before. :func:`reparse` compares the new text with the text the
previous tree was parsed from, parses again only the stretch between the last
declaration before the change and the first one after it, and keeps the other
declarations (and comments), moved to their new offsets in the new source.

Why this is sound: a file is a sequence of declarations (``start: _decl*``),
and what lies between two declarations is whitespace and comments. The
declarations the edit did not touch keep their text and their neighbours'
boundaries, so parsing the whole new file would build them again, node for
node, at their new offsets; the stretch in between is a sequence of
declarations of its own. A stretch that does not parse cleanly falls back to
parsing the whole file, so the diagnostics are always those of a cold parse.
``tests/syntax/test_incremental.py`` checks ``reparse`` against :func:`parse`
on random edits.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TypeVar

from mcec.span import SourceFile, Span
from mcec.syntax import tree as s
from mcec.syntax.parser import ParseResult, parse, parse_region

__all__ = ["reparse"]

_T = TypeVar("_T")


def reparse(previous: s.Module, source: SourceFile) -> ParseResult:
    """Parse ``source``, a new version of the text ``previous`` was parsed from, reusing what did not change.

    The result equals ``parse(source)``; it is only cheaper when the edit is small.
    """
    old = previous.span.source.text
    new = source.text
    if old == new:
        return ParseResult(_moved(previous, source), ())
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
    decls, comments = region
    kept_comments = [c for c in previous.comments if c.end <= region_start]
    moved_comments = [c for c in previous.comments if c.start >= old_region_end]
    module = s.Module(
        source.path,
        (
            *[_rebase(d, source, 0) for d in before],
            *decls,
            *[_rebase(d, source, delta) for d in after],
        ),
        (
            *[_rebase(c, source, 0) for c in kept_comments],
            *comments,
            *[_rebase(c, source, delta) for c in moved_comments],
        ),
        Span(source, 0, len(new)),
    )
    return ParseResult(module, ())


def _moved(module: s.Module, source: SourceFile) -> s.Module:
    """``module`` with every span in ``source`` (the same text: the same offsets)."""
    return s.Module(
        source.path,
        tuple(_rebase(d, source, 0) for d in module.decls),
        tuple(_rebase(c, source, 0) for c in module.comments),
        Span(source, 0, len(source.text)),
    )


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


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type[s.Node]) -> tuple[str, ...]:
    """The field names of a node class, in order (looked up once per class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    return names


def _rebase(value: _T, source: SourceFile, delta: int) -> _T:
    """``value`` with every span moved into ``source``, ``delta`` characters on."""
    result: object
    match value:
        case Span():
            result = Span(source, value.start + delta, value.end + delta)
        case tuple():
            result = tuple(_rebase(item, source, delta) for item in value)
        case s.Node():
            cls: type[s.Node] = type(value)
            result = cls(*[_rebase(getattr(value, name), source, delta) for name in _field_names(cls)])
        case _:
            result = value  # names, numbers, flags: no position
    return result  # type: ignore[return-value]
