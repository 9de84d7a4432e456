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
from dataclasses import dataclass
from pathlib import Path

from mcec import syntax
from mcec.check.pyindex import PythonIndex
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

    def __init__(self, index: PythonIndex) -> None:
        self.index = index
        self._checked: dict[str, UsedSpec] = {}
        self._imports: dict[str, tuple[SpecImport, ...]] = {}

    def spec_of(self, module: str) -> str | None:
        """The spec behind generated module ``module`` (as diagnostics name it), or None."""
        found = self.index.spec_file(module)
        return None if found is None else display_path(found)

    def imports_of(self, spec: str) -> tuple[SpecImport, ...]:
        """The imports of ``spec`` that name other specs' generated modules (parsed once;
        a spec that cannot be read or parsed imports nothing here: checking it says why)."""
        key = os.path.realpath(spec)
        known = self._imports.get(key)
        if known is not None:
            return known
        self._imports[key] = ()  # while reading: a spec importing itself finds no imports yet
        found: list[SpecImport] = []
        parsed = _parse(spec)
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
        target = os.path.realpath(goal)
        seen: set[str] = set()
        # an explicit-stack depth-first search: each entry is a spec and the path to it
        stack: list[tuple[str, list[SpecImport]]] = [(start, [])]
        while stack:
            spec, path = stack.pop()
            if os.path.realpath(spec) in seen:
                continue
            seen.add(os.path.realpath(spec))
            for used in reversed(self.imports_of(spec)):
                if os.path.realpath(used.spec) == target:
                    return [*path, used]
                stack.append((used.spec, [*path, used]))
        return None

    def load(self, spec: str) -> UsedSpec:
        """``spec`` parsed and checked (once), with the same index and these specs."""
        key = os.path.realpath(spec)
        known = self._checked.get(key)
        if known is not None:
            return known
        from mcec.check import check  # the checker is what uses this module

        try:
            source = SourceFile(spec, Path(spec).read_text(encoding="utf-8"))
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
        return used


def _parse(spec: str) -> syntax.Module | None:
    try:
        source = SourceFile(spec, Path(spec).read_text(encoding="utf-8"))
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
