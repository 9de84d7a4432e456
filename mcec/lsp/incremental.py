"""Re-checking after an edit inside pipelines: the rest of the spec's results are reused.

An editor re-checks a spec after every pause in typing, and most edits are
inside one pipeline's body. :func:`recheck` checks again only what such an edit
can change, and moves the previous results of the rest to their new places
(each diagnostic is held relative to the declaration it is in):

- the *affected* pipelines — those whose text changed, every pipeline that uses
  one of them (directly or not: a pipeline without ``!`` has its errors
  inferred, and a caller sees them), and every pipeline those use (their
  signatures are needed) — are checked for real, with the other declarations
  (imports, state, errors, steps, …), which are checked again too;
- every other pipeline keeps its name and declared type but is checked with an
  empty body (so names still resolve, duplicates and "did you mean" still see
  it); its diagnostics are the previous check's, moved with it; a W001 (unused)
  of the new check is dropped for a name such a pipeline uses.

The result equals a cold check of the new text (``tests/lsp/test_lsp_incremental.py``
compares them on random edits); when an edit is not of that kind (a declaration
other than a pipeline changed, one was added, removed or renamed, the spec has
a toolbox, whose entries read every pipeline's type, or a previous diagnostic
points into a changed pipeline from outside it) :func:`recheck` returns None and
the caller checks the whole spec.

Only the program is not rebuilt (it would hold the empty bodies): a rechecked
:class:`~mcec.lsp.analysis.Analysis` has ``program`` None and ``partial`` set,
and the server checks the whole spec when a question needs the program.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable
from dataclasses import replace

from mcec.check import check
from mcec.check.pyindex import PythonIndex
from mcec.diagnostics import Diagnostic, Label
from mcec.span import SourceFile, Span
from mcec.syntax import tree as s

__all__ = ["recheck"]


def recheck(
    old_module: s.Module, old_diagnostics: tuple[Diagnostic, ...], module: s.Module, source: SourceFile, index: PythonIndex
) -> tuple[Diagnostic, ...] | None:
    """The diagnostics of a cold check of ``module`` (parsed without errors from ``source``), from
    those of ``old_module`` and a check of what the edit can change; None when that cannot be done."""
    if len(old_module.decls) != len(module.decls):
        return None
    old_text, text = old_module.span.source.text, source.text
    changed: set[str] = set()
    pipelines: dict[str, s.PipelineDecl] = {}
    for old, new in zip(old_module.decls, module.decls):
        if isinstance(new, s.ToolboxDecl):
            return None  # a toolbox's entries read every pipeline's type
        same = type(old) is type(new) and old_text[old.start : old.end] == text[new.start : new.end]
        if isinstance(new, s.PipelineDecl):
            if not isinstance(old, s.PipelineDecl) or old.name.text != new.name.text or new.name.text in pipelines:
                return None
            pipelines[new.name.text] = new
            if not same:
                changed.add(new.name.text)
        elif not same:
            return None
    if not changed:
        return None
    affected = _affected(pipelines, changed)
    kept = {name for name in pipelines if name not in affected}
    stubbed = s.Module(
        module.path,
        tuple(_stub(d) if isinstance(d, s.PipelineDecl) and d.name.text in kept else d for d in module.decls),
        module.comments,
        module.span,
    )
    fresh = check(stubbed, source, index).diagnostics
    moved = _moved(old_module, old_diagnostics, module, source, kept)
    if moved is None:
        return None
    kept_spans = [(d.start, d.end) for d in module.decls if isinstance(d, s.PipelineDecl) and d.name.text in kept]
    used_by_kept = {name for d in module.decls if isinstance(d, s.PipelineDecl) and d.name.text in kept for name in _refs(d)}
    result = [d for d in fresh if not _inside(d.span, kept_spans) and not (d.code == "W001" and _named(d) in used_by_kept)]
    result.extend(moved)
    return tuple(sorted(dict.fromkeys(result), key=Diagnostic.sort_key))


def _affected(pipelines: dict[str, s.PipelineDecl], changed: set[str]) -> set[str]:
    """The changed pipelines, their callers (transitively), and everything those call (transitively)."""
    calls = {name: _refs(decl) & set(pipelines) for name, decl in pipelines.items()}
    callers: dict[str, set[str]] = {name: set() for name in pipelines}
    for caller, callees in calls.items():
        for callee in callees:
            callers[callee].add(caller)
    affected = _closure(changed, callers)
    return _closure(affected, calls)


def _closure(start: Iterable[str], edges: dict[str, set[str]]) -> set[str]:
    found = set(start)
    stack = list(found)
    while stack:
        for following in edges.get(stack.pop(), set()):
            if following not in found:
                found.add(following)
                stack.append(following)
    return found


def _refs(decl: s.PipelineDecl) -> set[str]:
    """The names a pipeline's body refers to (steps, pipelines, adapters, toolboxes)."""
    body = decl.body
    stack: list[s.Expr] = [st.expr for st in body.statements] if isinstance(body, s.Block) else [body]
    names: set[str] = set()
    while stack:
        node = stack.pop()
        match node:
            case s.Ref(name=name):
                names.add(name)
            case s.Local(adapter=adapter) if adapter is not None:
                names.add(adapter.text)
            case s.Spawn(toolbox=toolbox):
                names.add(toolbox.text)
            case _:
                pass  # the other nodes name no declaration themselves (their children may)
        stack.extend(s.expr_children(node))
    return names


def _stub(decl: s.PipelineDecl) -> s.PipelineDecl:
    """``decl`` with an empty body (its name and declared type stay)."""
    return replace(decl, body=s.Block((), decl.body.span))


def _inside(span: Span, ranges: list[tuple[int, int]]) -> bool:
    """True when ``span`` lies in one of ``ranges`` (sorted, not overlapping: declarations)."""
    at = bisect.bisect_right(ranges, (span.start, sys.maxsize)) - 1
    return at >= 0 and ranges[at][0] <= span.start and span.end <= ranges[at][1]


def _named(diagnostic: Diagnostic) -> str:
    """The name a W001 is about: the text of its span."""
    return diagnostic.span.source.text[diagnostic.span.start : diagnostic.span.end]


def _moved(
    old_module: s.Module, diagnostics: tuple[Diagnostic, ...], module: s.Module, source: SourceFile, kept: set[str]
) -> list[Diagnostic] | None:
    """The old diagnostics inside the kept pipelines, each moved with the declarations its spans are in."""
    old_path = old_module.span.source.path
    pairs = list(zip(old_module.decls, module.decls))
    kept_old = [(o.start, o.end) for o, n in pairs if isinstance(n, s.PipelineDecl) and n.name.text in kept]
    shifts = _shifts(pairs, source)
    moved: list[Diagnostic] = []
    for diagnostic in diagnostics:
        if diagnostic.span.source.path != old_path or not _inside(diagnostic.span, kept_old):
            continue
        span = _move(diagnostic.span, old_path, shifts, source)
        labels = [(_move(label.span, old_path, shifts, source), label.message) for label in diagnostic.labels]
        if span is None or any(moved_span is None for moved_span, _ in labels):
            return None
        moved.append(
            replace(diagnostic, span=span, labels=tuple(Label(l, m) for l, m in labels if l is not None))
        )
    return moved


def _shifts(pairs: list[tuple[s.Decl, s.Decl]], source: SourceFile) -> list[tuple[int, int, int | None]]:
    """Per old declaration (in order): its start, its end, and how far it moved (None: its text changed).

    Made once per re-check: comparing the texts per diagnostic, declaration by
    declaration, was most of a re-check of a spec with a thousand diagnostics."""
    shifts: list[tuple[int, int, int | None]] = []
    for old, new in pairs:
        same = old.span.source.text[old.start : old.end] == source.text[new.start : new.end]
        shifts.append((old.start, old.end, new.start - old.start if same else None))
    return shifts


def _move(span: Span, old_path: str, shifts: list[tuple[int, int, int | None]], source: SourceFile) -> Span | None:
    """``span`` of the old text in the new one: moved by as much as the declaration holding it
    moved; None when it is in a declaration that changed (or between declarations)."""
    if span.source.path != old_path:
        return span  # another file's (a used spec's): not moved
    at = bisect.bisect_right(shifts, (span.start, sys.maxsize, sys.maxsize)) - 1
    if at < 0:
        return None
    start, end, delta = shifts[at]
    if delta is None or not (start <= span.start and span.end <= end):
        return None
    return Span(source, span.start + delta, span.end + delta)
