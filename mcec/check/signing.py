"""The signing of a spec's declarations, kept from one check for the next (the language server's).

Signing a step, fn, tool, llm or pipeline (the checker's pass 3: its types
resolved, its Python implementation read and held to them, an llm's template
parsed) is most of a check of a small spec, and an edit inside one pipeline
cannot change it for the other declarations. A check given a :class:`Signing`
(:func:`mcec.check.check`'s ``signing``) signs through :class:`ReplayingChecker`:
what signing each declaration did to the checker's state (new entries of its
tables and sets, diagnostics) is recorded, and the next check replays it for the
*same declaration object* against the same Python index (and, an llm, the same
template file's text) instead of signing it again.

The same object is enough, wherever it now is: an unchanged declaration is
re-used as it is after an edit (:func:`mcec.syntax.incremental.reparse`), and
its nodes, so the diagnostics and typed nodes its signing made, hold spans in
its own :class:`~mcec.span.Frame`, which moves with it. A signing whose
diagnostics point outside the declaration's frame, or that left a pending
import, is not kept. The caller decides when a replay is sound: only when the
declarations a signing reads (imports, state, errors, servers, models) are
unchanged (:func:`mcec.lsp.incremental.recheck`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import assert_never

from mcec import syntax
from mcec.check.llm import TemplateSource, read_template
from mcec.check.names import DeclarationChecker
from mcec.check.pyindex import PythonIndex
from mcec.check.uses import Specs
from mcec.diagnostics import Diagnostic, DiagnosticSink

__all__ = ["ReplayingChecker", "Signing"]

#: A piece of the checker's state: its owner and the attribute's name.
_Place = tuple[object, str]


@dataclass(frozen=True, slots=True)
class _Signed:
    """What signing one declaration did (per piece of state, what it added or its new value),
    and what it read besides the declaration: the text of its template file (an llm's)."""

    decl: syntax.Decl
    template: str | None
    changes: tuple[tuple[str, object], ...]


@dataclass(frozen=True, slots=True)
class Signing:
    """The signings of a check, by declaration (its identity), made against ``index``.

    ``Signing()`` starts recording (nothing to replay); a check's result holds
    the next one (:attr:`mcec.check.CheckResult.signing`)."""

    index: PythonIndex | None = None
    signed: dict[int, _Signed] = field(default_factory=dict)


class ReplayingChecker(DeclarationChecker):
    """A :class:`DeclarationChecker` that replays the signing of the declarations ``signing``
    holds (when made with the same index) and records every signing it does."""

    def __init__(
        self, module: syntax.Module, sink: DiagnosticSink, index: PythonIndex | None, specs: Specs | None, signing: Signing
    ) -> None:
        super().__init__(module, sink, index, specs)
        self.reuse = signing.signed if signing.index is index else {}
        #: The signings of this check, for the next one.
        self.recorded = Signing(index)
        self._held = self._places()

    def _sign(self, decl: syntax.Decl) -> None:
        if not _replayable(decl) or self.declared.duplicated:
            super()._sign(decl)  # a name declared twice: which signing wins depends on the order
            return
        readable, template = self._template(decl)
        if not readable:
            super()._sign(decl)
            return
        places = self._held
        done = self.reuse.get(id(decl))
        if done is not None and done.decl is decl and done.template == template:
            _replay(places, done.changes)
            self.recorded.signed[id(decl)] = done
            return
        before = {name: _copy(getattr(owner, attr)) for name, (owner, attr) in places.items()}
        super()._sign(decl)
        changes = tuple(_changes(places, before))
        if _self_contained(changes, decl):
            self.recorded.signed[id(decl)] = _Signed(decl, template, changes)

    def _template(self, decl: syntax.Decl) -> tuple[bool, str | None]:
        """Whether the template file an llm reads can be read (read again: it may have changed on
        disk; a declaration whose cannot is signed, not kept), and its text (None: none read)."""
        if not (isinstance(decl, syntax.LlmDecl) and decl.template.is_file):
            return True, None
        read = read_template(decl, self.module.path)
        return (True, read.text) if isinstance(read, TemplateSource) else (False, None)

    def _places(self) -> dict[str, _Place]:
        """Every piece of state signing may change: the declared tables, the environment, the sink."""
        declared, env = self.declared, self.declared.env
        places: dict[str, _Place] = {f"declared.{f.name}": (declared, f.name) for f in fields(declared) if f.name != "env"}
        places.update({f"env.{f.name}": (env, f.name) for f in fields(env) if f.name != "index"})
        places["sink"] = (self.sink, "items")
        places["pending"] = (self, "_pending")
        return places


def _replayable(decl: syntax.Decl) -> bool:
    """Whether a declaration's signing reads only the declarations a re-check keeps (imports,
    state, errors, servers, models), the Python index and (an llm) its template file."""
    match decl:
        case syntax.StepDecl() | syntax.FnDecl() | syntax.ToolDecl() | syntax.LlmDecl() | syntax.PipelineDecl():
            return True
        case syntax.AskDecl():
            return False  # not replayed: signed anew each time (its template file is read then)
        case syntax.FromImport():
            return False  # reads another spec
        case syntax.ModuleImport() | syntax.StateDecl() | syntax.ErrorDecl() | syntax.ServerDecl() | syntax.ModelDecl():
            return False  # not signed in pass 3
        case syntax.ToolboxDecl() | syntax.RenameDecl():
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


def _replay(places: dict[str, _Place], changes: tuple[tuple[str, object], ...]) -> None:
    """Do to the checker's state what :func:`_changes` recorded."""
    for name, change in changes:
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


def _self_contained(changes: tuple[tuple[str, object], ...], decl: syntax.Decl) -> bool:
    """Whether the diagnostics signing made point only into the declaration's own frame (so they
    move with it); one pointing elsewhere, or a pending import, is not replayed."""
    frame = decl.span.frame
    for name, change in changes:
        if name == "pending":
            return False
        if name == "sink":
            assert isinstance(change, tuple)
            for diagnostic in change:
                assert isinstance(diagnostic, Diagnostic)
                if diagnostic.span.frame is not frame or any(label.span.frame is not frame for label in diagnostic.labels):
                    return False
    return True
