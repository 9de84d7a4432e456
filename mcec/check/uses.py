"""Specs that use each other: reading the spec behind ``from agents.research_mce import research``.

A spec uses a pipeline of another spec by importing it from that spec's
generated module (docs/language.md §11). When the imported module is a
generated module whose spec exists (:meth:`PythonIndex.spec_file`), the
checker reads *the spec*, never its generated code (which may not exist yet,
or be stale): :class:`Specs` parses and checks each such spec once per check,
and the importing spec types the imported names from the checked program.

Cycles are found on the graph of spec imports before anything is checked
(:meth:`Specs.path_back`), so a cycle is one MCE015 at the import that closes
it, naming the files on the way, not a chain of "does not check" reports.

Decision: dependencies are read with the index of the spec being checked
(its working directory, its package root and ``sys.path``): that is where
Python will import the generated modules from when the importing module runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from mcec import syntax
from mcec.check.pyindex import PythonIndex, import_paths, spec_file_on
from mcec.check.typed import Program
from mcec.check.types import ClassRef, Generic, Type, Union, union
from mcec.diagnostics import Diagnostic
from mcec.span import SourceFile, Span

__all__ = ["SpecImport", "Specs", "UsedSpec", "display_path", "respell"]


def display_path(path: Path) -> str:
    """How diagnostics name a spec: relative to the working directory when it is below it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


@dataclass(frozen=True, slots=True)
class SpecImport:
    """``from MODULE import …`` in spec ``importer``, where MODULE is the generated module of ``spec``."""

    importer: str
    module: str
    spec: str
    names: tuple[str, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class UsedSpec:
    """A spec another one uses, checked: ``program`` None when it has errors (all in ``diagnostics``)."""

    path: str
    program: Program | None
    diagnostics: tuple[Diagnostic, ...]


class Specs:
    """The specs one check reads besides its own, each parsed and checked once."""

    def __init__(
        self, index: PythonIndex | None, overlay: Mapping[str, str] | None = None, *, spec: str | None = None
    ) -> None:
        #: The index the specs are checked with; None for a check without class knowledge,
        #: which still reads the specs it uses: they are found by path (:func:`spec_file_on`,
        #: from where ``spec`` would import), not by reading Python, so not knowing the user's
        #: classes never turns another spec's pipeline into an unknown Python name.
        self.index = index
        self._paths = import_paths(spec=spec) if index is None else []
        #: Texts to read in place of files, by real path (an editor's unsaved specs, ``mcec lsp``).
        self.overlay: Mapping[str, str] = overlay if overlay is not None else {}
        self._checked: dict[str, UsedSpec] = {}
        self._imports: dict[str, tuple[SpecImport, ...]] = {}
        self._keys: dict[str, str] = {}

    def _key(self, spec: str) -> str:
        """The real path of ``spec``, which identifies it (asked of the file system once per name:
        cycle searches ask it for every spec they pass)."""
        key = self._keys.get(spec)
        if key is None:
            key = self._keys[spec] = os.path.realpath(spec)
        return key

    def spec_of(self, module: str) -> str | None:
        """The spec behind generated module ``module`` (as diagnostics name it), or None."""
        found = self.index.spec_file(module) if self.index is not None else spec_file_on(module, self._paths)
        return None if found is None else display_path(found)

    def imports_of(self, spec: str) -> tuple[SpecImport, ...]:
        """The imports of ``spec`` that name other specs' generated modules (parsed once;
        a spec that cannot be read or parsed imports nothing here: checking it says why)."""
        key = self._key(spec)
        known = self._imports.get(key)
        if known is not None:
            return known
        self._imports[key] = ()  # while reading: a spec importing itself finds no imports yet
        found: list[SpecImport] = []
        parsed = _parse(spec, self.overlay.get(key))
        if parsed is not None:
            for decl in parsed.decls:
                if isinstance(decl, syntax.FromImport):
                    target = self.spec_of(decl.module.dotted)
                    if target is not None:
                        names = tuple(item.name.text for item in decl.names)
                        found.append(SpecImport(spec, decl.module.dotted, target, names, decl.module.span))
        self._imports[key] = tuple(found)
        return self._imports[key]

    def path_back(self, start: str, goal: str) -> list[SpecImport] | None:
        """The imports leading from spec ``start`` back to spec ``goal`` (ending in one of
        ``goal``'s generated module), or None when ``start`` does not reach ``goal``."""
        target = self._key(goal)
        seen: set[str] = set()
        # an explicit-stack depth-first search; each spec reached remembers the import it was
        # reached by, so the path is walked back once found (not copied at every step: a chain
        # of n specs costs n steps, not n²)
        reached_by: dict[str, SpecImport] = {}
        stack: list[str] = [start]
        while stack:
            spec = stack.pop()
            if self._key(spec) in seen:
                continue
            seen.add(self._key(spec))
            for used in reversed(self.imports_of(spec)):
                if self._key(used.spec) == target:
                    return self._walk_back(start, used, reached_by)
                if self._key(used.spec) not in seen:
                    reached_by.setdefault(self._key(used.spec), used)
                stack.append(used.spec)
        return None

    def _walk_back(self, start: str, last: SpecImport, reached_by: dict[str, SpecImport]) -> list[SpecImport]:
        """The imports from ``start`` to ``last`` (included), following ``reached_by`` back."""
        path = [last]
        while self._key(path[-1].importer) != self._key(start):
            path.append(reached_by[self._key(path[-1].importer)])
        path.reverse()
        return path

    def _followed(self, spec: str) -> list[str]:
        """The specs checking ``spec`` loads: those it imports that do not use it back (an import
        closing a cycle is MCE015 and loads nothing)."""
        own = self._key(spec)
        return [
            used.spec
            for used in self.imports_of(spec)
            if self._key(used.spec) != own and self.path_back(used.spec, spec) is None
        ]

    def _unchecked_below(self, spec: str) -> list[str]:
        """``spec`` and the specs it loads, through any number of specs, that are not checked yet,
        each after those it loads (``spec`` last): checked in this order, each finds the specs
        it uses already checked. An explicit-stack depth-first search, so a chain of used specs
        of any length loads (checking each spec as its importer reached it nested one check per
        spec: RecursionError at ~160)."""
        order: list[str] = []
        visited = {self._key(spec)}
        stack: list[tuple[str, Iterator[str]]] = [(spec, iter(self._followed(spec)))]
        while stack:
            node, below = stack[-1]
            child = next(below, None)
            if child is None:
                stack.pop()
                order.append(node)
                continue
            key = self._key(child)
            if key in visited or key in self._checked:
                continue
            visited.add(key)
            stack.append((child, iter(self._followed(child))))
        return order

    def load(self, spec: str) -> UsedSpec:
        """``spec`` parsed and checked (once), with the same index and these specs; the specs it
        uses are checked first, one after the other (never one check inside another)."""
        key = self._key(spec)
        known = self._checked.get(key)
        if known is not None:
            return known
        for below in self._unchecked_below(spec):
            self._check_one(below)
        return self._checked[key]

    def _check_one(self, spec: str) -> None:
        """Parse and check ``spec`` (the specs it loads are checked already) and keep the result."""
        key = self._key(spec)
        if key in self._checked:
            return
        from mcec.check import check  # the checker is what uses this module

        try:
            source = SourceFile(spec, _read(spec, self.overlay.get(key)))
        except (OSError, UnicodeDecodeError) as exc:
            from mcec.diagnostics import error

            problem = error("MCE005", f"cannot read `{spec}`: {exc}", Span.file_start(spec))
            used = UsedSpec(spec, None, (problem,))
        else:
            parsed = syntax.parse(source)
            if parsed.module is None or any(d.is_error for d in parsed.diagnostics):
                used = UsedSpec(spec, None, tuple(parsed.diagnostics))
            else:
                result = check(parsed.module, source, self.index, self)
                used = UsedSpec(spec, result.program, result.diagnostics)
        self._checked[key] = used


def _read(spec: str, unsaved: str | None) -> str:
    """The text of ``spec``: ``unsaved`` (the overlay's) when given, else the file's."""
    return unsaved if unsaved is not None else Path(spec).read_text(encoding="utf-8")


def _parse(spec: str, unsaved: str | None = None) -> syntax.Module | None:
    try:
        source = SourceFile(spec, _read(spec, unsaved))
    except (OSError, UnicodeDecodeError):
        return None
    return syntax.parse(source).module


def respell(type_: Type, spellings: dict[str, str]) -> Type:
    """``type_`` (written in another spec's terms) in this spec's: each class by the name this
    spec imports it as (``spellings``: path → name), else by its full path, which the code
    generator imports itself."""
    match type_:
        case ClassRef() if not type_.is_runtime:
            return ClassRef(type_.path, spellings.get(type_.path, type_.path), type_.info)
        case Generic():
            return Generic(type_.head, tuple(respell(a, spellings) for a in type_.args))
        case Union():
            return union([respell(m, spellings) for m in type_.members])
        case _:
            return type_
