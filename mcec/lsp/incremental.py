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
- the signing of the steps, fns, tools and llms (their types resolved, their
  Python implementations read and held to them, an llm's template parsed: most
  of a check of a small spec) is not done again for a declaration with the same
  text at the same offset, the same Python index and (an llm) the same template
  file's text: :func:`check_recording` replays what it did to the checker's
  state, recorded by the check before (:class:`Header`).

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
import itertools
import sys
from collections.abc import Iterable
from dataclasses import dataclass, fields, replace
from typing import assert_never

from mcec.check import CheckResult, build_program
from mcec.check.llm import TemplateSource, read_template
from mcec.check.names import DeclarationChecker, unused_warnings
from mcec.check.pipelines import PipelineChecker
from mcec.check.pyindex import PythonIndex
from mcec.check.types import counting_unknowns
from mcec.check.uses import Specs
from mcec.diagnostics import Diagnostic, DiagnosticSink, Label
from mcec.span import SourceFile, Span
from mcec.syntax import tree as s

__all__ = ["Header", "check_recording", "recheck"]


def recheck(
    old_module: s.Module,
    old_diagnostics: tuple[Diagnostic, ...],
    module: s.Module,
    source: SourceFile,
    index: PythonIndex,
    header: Header | None = None,
    specs: Specs | None = None,
) -> tuple[tuple[Diagnostic, ...], Header] | None:
    """The diagnostics of a cold check of ``module`` (parsed without errors from ``source``), from
    those of ``old_module`` and a check of what the edit can change, and the header's signing for
    the next re-check; None when that cannot be done. ``header`` is the previous check's;
    ``specs`` reads the specs it uses (None: from disk)."""
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
    checked, signed = check_recording(stubbed, source, index, header, specs)
    fresh = checked.diagnostics
    moved = _moved(old_module, old_diagnostics, module, source, kept)
    if moved is None:
        return None
    kept_spans = [(d.start, d.end) for d in module.decls if isinstance(d, s.PipelineDecl) and d.name.text in kept]
    used_by_kept = {name for d in module.decls if isinstance(d, s.PipelineDecl) and d.name.text in kept for name in _refs(d)}
    result = [d for d in fresh if not _inside(d.span, kept_spans) and not (d.code == "W001" and _named(d) in used_by_kept)]
    result.extend(moved)
    return tuple(sorted(dict.fromkeys(result), key=Diagnostic.sort_key)), signed


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
            case s.SubAgent(adapter=adapter):
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


# ---------------------------------------------------------------- the header, signed once

# Signing a step, fn, tool or llm (the checker's pass 3: its types resolved, its Python
# implementation read and held to them, its template parsed) is most of a check of a small spec,
# and an edit inside a pipeline cannot change it. :func:`check_recording` checks as
# :func:`mcec.check.check` does, and keeps what signing each such declaration did to the
# checker's state (new entries of its tables and sets, diagnostics); the next check replays that
# for a declaration with the same text at the same offset, against the same Python index.
# A declaration that moved is signed again: its results hold absolute spans.

#: A piece of the checker's state: its owner and the attribute's name.
_Place = tuple[object, str]
#: A declaration signed: its kind, offset and text, and the text of its template file (an llm's).
_Key = tuple[str, int, str, str | None]


@dataclass(frozen=True, slots=True)
class _Effects:
    """What signing one declaration did: per piece of state, what it added (or its new value)."""

    #: The source the declaration was signed in: its spans point into that text.
    source: SourceFile
    changes: tuple[tuple[str, object], ...]


@dataclass(frozen=True, slots=True)
class Header:
    """The signing of a check's steps, fns, tools and llms, by (kind, offset, text), for the next check."""

    index: PythonIndex
    effects: dict[_Key, _Effects]


def check_recording(
    module: s.Module, source: SourceFile, index: PythonIndex, header: Header | None = None, specs: Specs | None = None
) -> tuple[CheckResult, Header]:
    """:func:`mcec.check.check` of ``module``, with the signing of the declarations ``header`` holds
    replayed (when made with ``index``), and the signing of this check for the next one; ``specs``
    as for :func:`mcec.check.check`."""
    reuse = header.effects if header is not None and header.index is index else {}
    sink = DiagnosticSink()
    with counting_unknowns() as unknowns:
        declarations = _Replaying(module, sink, index, reuse, specs)
        declared = declarations.run()
        checker = PipelineChecker(declared, declarations, sink)
        pipelines = checker.run()
    sink.extend(unused_warnings(module, declared))
    diagnostics = sink.sorted()
    if declarations.old_sources:
        diagnostics = tuple(sorted(_rebased(diagnostics, source, declarations.old_sources), key=Diagnostic.sort_key))
    signed = Header(index, declarations.recorded)
    if any(d.is_error for d in diagnostics) or declarations.old_sources:
        return CheckResult(None, diagnostics, unknowns.count), signed  # replayed spans: no program of them
    program = build_program(module, source, declared, pipelines, checker.toolboxes)
    return CheckResult(program, diagnostics, unknowns.count), signed


class _Replaying(DeclarationChecker):
    """A :class:`DeclarationChecker` that replays the signing of unchanged declarations and records the rest's."""

    def __init__(
        self, module: s.Module, sink: DiagnosticSink, index: PythonIndex, reuse: dict[_Key, _Effects], specs: Specs | None
    ) -> None:
        super().__init__(module, sink, index, specs)
        self.reuse = reuse
        self.recorded: dict[_Key, _Effects] = {}
        #: The sources of the replayed signings (their spans are moved into the new one at the end).
        self.old_sources: dict[int, SourceFile] = {}

    def _sign(self, decl: s.Decl) -> None:
        key = self._key(decl)
        if key is None:
            super()._sign(decl)
            return
        effects = self.reuse.get(key)
        if effects is not None:
            _replay(self._places(), effects)
            self.recorded[key] = effects
            if effects.source is not decl.span.source:
                self.old_sources[id(effects.source)] = effects.source
            return
        places = self._places()
        before = {name: _copy(getattr(owner, attr)) for name, (owner, attr) in places.items()}
        super()._sign(decl)
        changes = tuple(_changes(places, before))
        if _self_contained(changes, decl):
            self.recorded[key] = _Effects(decl.span.source, changes)

    def _key(self, decl: s.Decl) -> _Key | None:
        """What the signing of ``decl`` depends on besides the header (the same in a re-check);
        None when it is not replayed."""
        if not _replayable(decl) or self.declared.duplicated:
            return None  # a name declared twice: which signing wins depends on the order
        template = None
        if isinstance(decl, s.LlmDecl) and decl.template.is_file:
            read = read_template(decl, self.module.path)  # the file may have changed on disk
            if not isinstance(read, TemplateSource):
                return None
            template = read.text
        return (type(decl).__name__, decl.start, decl.span.source.text[decl.start : decl.end], template)

    def _places(self) -> dict[str, _Place]:
        """Every piece of state signing may change: the declared tables, the environment, the sink."""
        declared, env = self.declared, self.declared.env
        places: dict[str, _Place] = {f"declared.{f.name}": (declared, f.name) for f in fields(declared) if f.name != "env"}
        places.update({f"env.{f.name}": (env, f.name) for f in fields(env) if f.name != "index"})
        places["sink"] = (self.sink, "items")
        places["pending"] = (self, "_pending")
        return places


def _replayable(decl: s.Decl) -> bool:
    """Whether a declaration's signing reads only the header, the Python index and (an llm) its
    template file, not pipelines or other specs."""
    match decl:
        case s.StepDecl() | s.FnDecl() | s.ToolDecl() | s.LlmDecl():
            return True
        case s.AskDecl():
            return False  # not replayed: signed anew each time (its template file is read then)
        case s.FromImport() | s.ModuleImport() | s.StateDecl() | s.ErrorDecl() | s.ServerDecl() | s.ModelDecl():
            return False
        case s.ToolboxDecl() | s.PipelineDecl():
            return False
        case _:
            assert_never(decl)


def _copy(value: object) -> object:
    """What is needed to tell later what changed: a set's copy, a dict's or list's length (they only grow), or the value."""
    match value:
        case dict():
            return len(value)  # signing adds entries (a name's, a memo's); a replaced memo entry is remade
        case set():
            return set(value)
        case list():
            return len(value)
        case _:
            return value


def _changes(places: dict[str, _Place], before: dict[str, object]) -> Iterable[tuple[str, object]]:
    """Per piece of state, what was added since ``before`` (entries, members, items) or its new value."""
    for name, (owner, attr) in places.items():
        now, then = getattr(owner, attr), before[name]
        match now:
            case dict():
                assert isinstance(then, int)
                if len(now) != then:
                    yield name, dict(itertools.islice(now.items(), then, None))
            case set():
                assert isinstance(then, set)
                if len(now) != len(then):
                    yield name, now - then
            case list():
                assert isinstance(then, int)
                if len(now) != then:
                    yield name, tuple(itertools.islice(now, then, None))
            case int() if isinstance(then, int) and not isinstance(now, bool):
                if now != then:
                    yield name, ("delta", now - then)  # a budget: spent again, from what is left
            case _:
                if now is not then:
                    yield name, ("value", now)


def _replay(places: dict[str, _Place], effects: _Effects) -> None:
    """Do to the checker's state what :func:`_changes` recorded."""
    for name, change in effects.changes:
        owner, attr = places[name]
        current = getattr(owner, attr)
        match current:
            case dict():
                assert isinstance(change, dict)
                current.update(change)
            case set():
                assert isinstance(change, set)
                current |= change
            case list():
                assert isinstance(change, tuple)
                current.extend(change)
            case _:
                assert isinstance(change, tuple)
                how, value = change
                setattr(owner, attr, current + value if how == "delta" else value)


def _self_contained(changes: tuple[tuple[str, object], ...], decl: s.Decl) -> bool:
    """Whether the diagnostics signing made point only into the declaration (so they hold while it
    stays where it is); one pointing elsewhere, or a pending import, is not replayed."""
    for name, change in changes:
        if name == "pending":
            return False
        if name == "sink":
            assert isinstance(change, tuple)
            for diagnostic in change:
                assert isinstance(diagnostic, Diagnostic)
                for span in (diagnostic.span, *(label.span for label in diagnostic.labels)):
                    if span.source is not decl.span.source or not (decl.start <= span.start and span.end <= decl.end):
                        return False
    return True


def _rebased(diagnostics: Iterable[Diagnostic], source: SourceFile, old: dict[int, SourceFile]) -> Iterable[Diagnostic]:
    """``diagnostics`` with the spans into an earlier text (of a replayed declaration, at the same
    offset, with the same text) put into ``source``."""

    def moved(span: Span) -> Span:
        return Span(source, span.start, span.end) if old.get(id(span.source)) is span.source else span

    for diagnostic in diagnostics:
        labels = tuple(Label(moved(label.span), label.message) for label in diagnostic.labels)
        yield replace(diagnostic, span=moved(diagnostic.span), labels=labels)
