"""Re-checking after an edit inside pipelines: the rest of the spec's results are reused.

An editor re-checks a spec after every pause in typing, and most edits are
inside one pipeline's body. After :func:`mcec.syntax.incremental.reparse`, every
declaration the edit did not touch is the same object as before, its spans held
in its own frame, which moved with it (:mod:`mcec.span`); so whatever was found
about it holds as it is. :func:`recheck` checks again only what such an edit can
change, with :func:`mcec.check.check` itself:

- the *affected* pipelines — those the re-parse built anew, every pipeline that
  uses one of them (directly or not: a pipeline without ``!`` has its errors
  inferred, and a caller sees them), and every pipeline those use (their
  signatures are needed) — are checked for real, with the other declarations
  (imports, state, errors, steps, …), which are checked again too;
- every other pipeline is *unchecked*: declared (its name and type: names still
  resolve, duplicates and "did you mean" still see it) but its body not read;
  its diagnostics are the previous check's, which moved with it; a W001 (unused)
  of the new check is dropped for a name such a pipeline uses;
- the signing of the steps, fns, tools, llms and pipelines that are the same
  objects is replayed, not done again (:mod:`mcec.check.signing`).

The result equals a cold check of the new text (``tests/lsp/test_lsp_incremental.py``
compares them on random edits); when an edit is not of that kind (a declaration
other than a pipeline changed, one was added, removed or renamed, the spec has
a toolbox, whose entries read every pipeline's type, or a previous diagnostic
in a kept pipeline points into a declaration that was parsed again)
:func:`recheck` returns None and the caller checks the whole spec.

Only the program is not built (the unchecked pipelines have no typed bodies): a
rechecked :class:`~mcec.lsp.analysis.Analysis` has ``program`` None and
``partial`` set, and the server checks the whole spec when a question needs the
program.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mcec.check import CheckResult, check
from mcec.check.pyindex import PythonIndex
from mcec.check.signing import Signing
from mcec.check.uses import Specs
from mcec.diagnostics import Diagnostic
from mcec.span import SourceFile
from mcec.syntax import tree as s

__all__ = ["Reuse", "full_check", "recheck"]


@dataclass(frozen=True, slots=True)
class Reuse:
    """What a check keeps for the next re-check: the declarations' signing, and per pipeline
    (by identity) the names its body refers to."""

    signing: Signing
    refs: dict[int, tuple[s.PipelineDecl, frozenset[str]]] = field(default_factory=dict)


def full_check(module: s.Module, source: SourceFile, index: PythonIndex, specs: Specs | None = None) -> tuple[CheckResult, Reuse]:
    """:func:`mcec.check.check` of the whole spec, its signing recorded for the next re-check (and
    the names each pipeline refers to, which that re-check needs for every pipeline)."""
    checked = check(module, source, index, specs, signing=Signing())
    assert checked.signing is not None
    refs = {id(d): (d, frozenset(_refs(d))) for d in module.decls if isinstance(d, s.PipelineDecl)}
    return checked, Reuse(checked.signing, refs)


def recheck(
    old_module: s.Module,
    old_diagnostics: tuple[Diagnostic, ...],
    module: s.Module,
    source: SourceFile,
    index: PythonIndex,
    reuse: Reuse | None = None,
    specs: Specs | None = None,
) -> tuple[tuple[Diagnostic, ...], Reuse] | None:
    """The diagnostics of a cold check of ``module`` (re-parsed without errors from
    ``old_module`` into ``source``), from ``old_diagnostics`` and a check of what the edit can
    change, and what to reuse next time; None when that cannot be done. ``reuse`` is the
    previous check's; ``specs`` reads the specs it uses (None: from disk)."""
    if len(old_module.decls) != len(module.decls):
        return None
    old_text, text = old_module.span.source.text, source.text
    changed: set[str] = set()
    pipelines: dict[str, s.PipelineDecl] = {}
    for old, new in zip(old_module.decls, module.decls):
        if isinstance(new, s.ToolboxDecl):
            return None  # a toolbox's entries read every pipeline's type
        if isinstance(new, s.PipelineDecl):
            if not isinstance(old, s.PipelineDecl) or old.name.text != new.name.text or new.name.text in pipelines:
                return None
            pipelines[new.name.text] = new
            if old is not new:
                changed.add(new.name.text)  # parsed again: its nodes are new, its old diagnostics stale
        elif old is not new and not (type(old) is type(new) and _text(old, old_text) == _text(new, text)):
            # (`old` was moved by the re-parse, when kept: its text is read from the span it had)
            return None
    if not changed:
        return None
    refs = _refs_of(pipelines, reuse)
    affected = _affected(pipelines, changed, refs)
    kept = {name for name in pipelines if name not in affected}
    kept_frames = {id(pipelines[name].span.frame) for name in kept}
    moved = _kept_diagnostics(old_diagnostics, module, kept_frames)
    if moved is None:
        return None
    checked = check(
        module, source, index, specs, signing=reuse.signing if reuse is not None else Signing(), unchecked=kept
    )
    assert checked.signing is not None
    used_by_kept = {name for kept_name in kept for name in refs[kept_name][1]}
    result = [
        d
        for d in checked.diagnostics
        if id(d.span.frame) not in kept_frames and not (d.code == "W001" and _named(d) in used_by_kept)
    ]
    # (no duplicates to drop: each list has none, and they are in different declarations)
    result.extend(moved)
    next_refs = {id(decl): (decl, names) for decl, names in refs.values()}
    return tuple(sorted(result, key=Diagnostic.sort_key)), Reuse(checked.signing, next_refs)


def _text(decl: s.Decl, text: str) -> str:
    # a declaration's text, as the span it has now reads it (`text` is the text that span is in)
    return text[decl.start : decl.end]


def _refs_of(
    pipelines: dict[str, s.PipelineDecl], reuse: Reuse | None
) -> dict[str, tuple[s.PipelineDecl, frozenset[str]]]:
    """Per pipeline, the names its body refers to: kept from the previous re-check for the same object."""
    known = reuse.refs if reuse is not None else {}
    found: dict[str, tuple[s.PipelineDecl, frozenset[str]]] = {}
    for name, decl in pipelines.items():
        entry = known.get(id(decl))
        if entry is None or entry[0] is not decl:
            entry = (decl, frozenset(_refs(decl)))
        found[name] = entry
    return found


def _affected(
    pipelines: dict[str, s.PipelineDecl], changed: set[str], refs: dict[str, tuple[s.PipelineDecl, frozenset[str]]]
) -> set[str]:
    """The changed pipelines, their callers (transitively), and everything those call (transitively)."""
    calls = {name: refs[name][1] & pipelines.keys() for name in pipelines}
    callers: dict[str, set[str]] = {name: set() for name in pipelines}
    for caller, callees in calls.items():
        for callee in callees:
            callers[callee].add(caller)
    affected = _closure(changed, callers)
    return _closure(affected, calls)


def _closure(start: Iterable[str], edges: dict[str, set[str]] | dict[str, frozenset[str]]) -> set[str]:
    found = set(start)
    stack = list(found)
    while stack:
        for following in edges.get(stack.pop(), ()):
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
            case s.SubAgent(adapter=adapter):
                names.add(adapter.text)
            case s.Spawn(toolbox=toolbox):
                names.add(toolbox.text)
            case _:
                pass  # the other nodes name no declaration themselves (their children may)
        stack.extend(s.expr_children(node))
    return names


def _named(diagnostic: Diagnostic) -> str:
    """The name a W001 is about: the text of its span."""
    return diagnostic.span.source.text[diagnostic.span.start : diagnostic.span.end]


def _kept_diagnostics(
    diagnostics: tuple[Diagnostic, ...], module: s.Module, kept_frames: set[int]
) -> list[Diagnostic] | None:
    """The old diagnostics of the kept pipelines (those whose span is in a kept pipeline's frame:
    they moved with it); None when one of them has a label in a declaration of this file that
    was parsed again (its old frame did not move)."""
    live = {id(decl.span.frame) for decl in module.decls}
    path = module.span.source.path
    kept: list[Diagnostic] = []
    for diagnostic in diagnostics:
        if id(diagnostic.span.frame) not in kept_frames:
            continue
        for label in diagnostic.labels:
            frame = label.span.frame
            if frame.source.path == path and id(frame) not in live:
                return None
        kept.append(diagnostic)
    return kept
