"""A spec's fingerprint: what a durable run records so that a resume can tell the spec changed.

A durable run (docs/language.md §13) records the fingerprint of what it ran; a
resume compares it with today's and refuses (unless told otherwise) when it
differs, naming what changed in the spec's terms (:func:`describe_change`).

The fingerprint is a list of named *parts*, one per thing that matters:

- ``spec:PATH`` — each spec: the one run, and every spec it uses (§11),
  transitively; PATH is relative to the folder the run's spec's package starts in
  (``examples/batch/batch.mce``), whatever the working directory. Its value is the digest of the *checked* program with every
  span left out and the declarations in a canonical order, so an edit that only
  changes layout, comments or the order of declarations keeps it, and any
  edit the checker sees (a type, a step's implementation, a template's text, a
  bound) changes it.
- ``type:PATH`` — each Python class a recorded value may have (the state, the
  inputs, outputs and errors of every declaration, and the classes their
  fields name, recursively): the digest of its *shape* — what kind of class it
  is and its fields' names and types — never of its source text, so a new
  method or docstring keeps it.
- ``field:PATH.NAME`` — each field of those classes, valued by its type's text,
  so that a change can be described field by field.

``digest`` is the SHA-256 of all parts. Computing a fingerprint imports the
spec's classes (:mod:`mcec.check.pyclasses`), as running the spec does.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcec.check.pyindex import package_root
from mcec.check.pyclasses import annotation_text, class_fields, class_kind, classes_in, python_type
from mcec.check.typed import Program, TDecl, TFromImport, TModuleImport, TPipeline, TUsed
from mcec.check.types import ClassRef, Generic, Type, Union
from mcec.memo import IdentityMemo
from mcec.span import Span

__all__ = ["SpecFingerprint", "describe_change", "fingerprint"]

#: The version of how parts are made: a fingerprint of another version never matches.
_SCHEME = "mcec-fingerprint/1"


@dataclass(frozen=True, slots=True)
class SpecFingerprint:
    """What a durable run records of the spec it ran: ``digest`` over ``parts``, each a
    ``(name, value)`` pair (see the module docstring), sorted by name."""

    digest: str
    parts: tuple[tuple[str, str], ...]

    def to_json(self) -> str:
        """The fingerprint as a JSON object ``{"digest": …, "parts": [[name, value], …]}``."""
        return json.dumps({"digest": self.digest, "parts": [list(part) for part in self.parts]}, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str | Mapping[str, Any]) -> SpecFingerprint:
        """Read back what :meth:`to_json` wrote (its text, or the object parsed); ``ValueError``
        for anything else."""
        loaded = json.loads(data) if isinstance(data, str) else data
        if not isinstance(loaded, Mapping):
            raise ValueError("a spec fingerprint is a JSON object")
        digest, parts = loaded.get("digest"), loaded.get("parts")
        if not isinstance(digest, str) or not isinstance(parts, list):
            raise ValueError("a spec fingerprint has a string `digest` and a list of `parts`")
        read: list[tuple[str, str]] = []
        for part in parts:
            if not (isinstance(part, list) and len(part) == 2 and all(isinstance(p, str) for p in part)):
                raise ValueError(f"a fingerprint part is a [name, value] pair of strings, not {part!r}")
            read.append((part[0], part[1]))
        return cls(digest, tuple(read))


def fingerprint(program: Program) -> SpecFingerprint:
    """The fingerprint of ``program``: its spec, the specs it uses, and its recorded types."""
    parts: dict[str, str] = {}
    base = package_root(program.path)
    for spec in _specs(program):
        parts[f"spec:{_spec_name(spec.path, base)}"] = _spec_part(spec, base)
    for cls in _recorded_classes(program):
        path = _class_path(cls)
        fields = class_fields(cls)
        shape = {"kind": class_kind(cls), "fields": [[name, annotation_text(a)] for name, a in fields]}
        parts[f"type:{path}"] = _sha(_canonical(shape))
        for name, annotation in fields:
            parts[f"field:{path}.{name}"] = annotation_text(annotation)
    ordered = tuple(sorted(parts.items()))
    return SpecFingerprint(_sha(_canonical([_SCHEME, ordered])), ordered)


def describe_change(recorded: SpecFingerprint, current: SpecFingerprint) -> str:
    """What differs between two fingerprints, one line per change, in the spec's terms:
    ``the spec examples/batch.mce changed``, ``type Doc: field `pages` added``. Empty when
    the digests agree."""
    if recorded.digest == current.digest:
        return ""
    old, new = dict(recorded.parts), dict(current.parts)
    lines: list[str] = []
    for name in sorted(old.keys() | new.keys(), key=_change_order):
        kind, _, path = name.partition(":")
        before, after = old.get(name), new.get(name)
        if before == after or kind == "field":
            continue  # fields are described with their class
        match kind:
            case "spec":
                lines.append(_spec_change(path, before, after))
            case "type":
                lines.extend(_type_change(path, before, after, old, new))
            case _:  # a part of another scheme: say so rather than guess
                lines.append(f"{name} changed")
    if not lines:  # same parts, another digest: a fingerprint of another version of mcec
        lines.append("the fingerprint was made by another version of mcec")
    return "\n".join(lines)


# ---------------------------------------------------------------- the specs


def _specs(program: Program) -> Iterator[Program]:
    """``program`` and every spec it uses, transitively, each once."""
    seen: set[str] = set()
    stack = [program]
    while stack:
        spec = stack.pop()
        if spec.path in seen:
            continue
        seen.add(spec.path)
        yield spec
        stack.extend(used.program for used in spec.uses)


@functools.lru_cache(maxsize=8192)  # every fingerprint names each spec it uses: resolve each path once
def _spec_name(path: str, base: Path) -> str:
    """A spec's path as parts name it: relative to ``base`` (the folder the run's spec's package
    starts in: where its imports start) when under it, with ``/`` separators, so that the same
    spec has the same name whatever the working directory and however its path was written."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_posix()


#: Each spec's part, by its checked program and the base its names start from: a spec is part of
#: the fingerprint of every spec using it, so a chain of N specs (each fingerprinted as its module
#: is generated) walked each one N times without this.
_spec_parts: IdentityMemo[Program, str] = IdentityMemo(4096)


def _spec_part(spec: Program, base: Path) -> str:
    """The digest of ``spec``'s shape (:func:`_program_shape`), made once per program."""
    return _spec_parts.get(spec, lambda: _sha(_canonical(_program_shape(spec, base))), base)


def _program_shape(program: Program, base: Path) -> object:
    """What of a checked program a run depends on: every declaration without its spans, in a
    canonical order (imports by text, the others by kind and name); a used spec is named, not
    walked (it has its own part)."""
    decls = sorted((_canonical(_shape(decl, base)) for decl in program.decls), key=lambda text: (_decl_rank(text), text))
    return {"state": _shape(program.state, base), "merge": _shape(program.merge, base), "decls": decls}


def _decl_rank(text: str) -> int:
    """Imports first (their text orders them), then the rest; the pipelines' own order in
    ``decls`` is a dependency order the checker derives, not something the user wrote."""
    return 0 if text.startswith(('["TFromImport"', '["TModuleImport"')) else 1


def _shape(node: object, base: Path) -> object:
    """``node`` as JSON-able data: dataclasses as ``[class, {field: …}]`` over the fields that
    take part in equality, spans and the spec's text left out, sets sorted."""
    match node:
        case Span():
            return None
        case TUsed():
            fields = {"name": node.name, "module": node.module, "pipeline": node.pipeline, "spec": _spec_name(node.spec, base)}
            rest = {"sig": _shape(node.sig, base), "state": _shape(node.state, base), "own_state": node.own_state}
            return ["TUsed", fields | rest]
        case enum.Enum():
            return node.value
        case str() | int() | float() | bool() | None:
            return node
        case tuple() | list():
            return [_shape(item, base) for item in node]
        case frozenset() | set():
            return sorted((_shape(item, base) for item in node), key=_canonical)
        case _ if dataclasses.is_dataclass(node) and not isinstance(node, type):
            shaped: dict[str, object] = {
                f.name: _shape(getattr(node, f.name), base) for f in dataclasses.fields(node) if f.compare and f.name != "span"
            }
            return [type(node).__name__, shaped]
        case _:
            raise TypeError(f"cannot fingerprint {type(node).__name__}")


# ---------------------------------------------------------------- the recorded types


def _recorded_classes(program: Program) -> list[type]:
    """Every class a recorded value of ``program`` may have: the classes named by the state
    and by the signatures of its declarations (and of the specs it uses), and the classes their
    fields name, recursively; each once, in a stable order."""
    roots: list[Type] = []
    for spec in _specs(program):
        if spec.state is not None:
            roots.append(spec.state)
        for decl in spec.decls:
            roots.extend(_signature_types(decl))
    found: dict[str, type] = {}
    stack: list[type] = []
    for path in sorted({ref.path for root in roots for ref in _class_refs(root)}):
        cls = python_type(ClassRef(path, path))
        if isinstance(cls, type):
            stack.append(cls)
    while stack:
        cls = stack.pop()
        path = _class_path(cls)
        if path in found:
            continue
        found[path] = cls
        for _, annotation in class_fields(cls):
            stack.extend(classes_in(annotation))
    return [found[path] for path in sorted(found)]


def _signature_types(decl: TDecl) -> list[Type]:
    """The types a declaration's values and errors have (none for an import)."""
    match decl:
        case TFromImport() | TModuleImport():
            return []
        case _:
            sig = getattr(decl, "sig", None)
            if sig is None:
                return []
            return [sig.input, sig.output, *sig.errors]


def _class_refs(tp: Type) -> Iterator[ClassRef]:
    """The classes a spec type names."""
    match tp:
        case ClassRef():
            yield tp
        case Generic(args=args) | Union(members=args):
            for arg in args:
                yield from _class_refs(arg)
        case _:
            return


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------- describing a change


def _change_order(name: str) -> tuple[int, str]:
    """Specs first, then types, each by name."""
    kind = name.partition(":")[0]
    return ({"spec": 0, "type": 1}.get(kind, 2), name)


def _spec_change(path: str, before: str | None, after: str | None) -> str:
    if before is None:
        return f"the spec {path} is now used"
    if after is None:
        return f"the spec {path} is no longer used"
    return f"the spec {path} changed"


def _type_change(path: str, before: str | None, after: str | None, old: dict[str, str], new: dict[str, str]) -> list[str]:
    """One line per field added, removed or retyped in the class at ``path``; the class itself
    when it is new, gone, or changed in kind only."""
    name = path.rsplit(".", 1)[-1]
    if before is None:
        return [f"type {name} ({path}) is new to the recorded values"]
    if after is None:
        return [f"type {name} ({path}) is no longer among the recorded values"]
    prefix = f"field:{path}."
    old_fields = {k[len(prefix):]: v for k, v in old.items() if k.startswith(prefix) and "." not in k[len(prefix):]}
    new_fields = {k[len(prefix):]: v for k, v in new.items() if k.startswith(prefix) and "." not in k[len(prefix):]}
    lines = []
    for field in sorted(old_fields.keys() | new_fields.keys()):
        was, now = old_fields.get(field), new_fields.get(field)
        if was is None:
            lines.append(f"type {name}: field `{field}` added ({now})")
        elif now is None:
            lines.append(f"type {name}: field `{field}` removed (was {was})")
        elif was != now:
            lines.append(f"type {name}: field `{field}` changed from {was} to {now}")
    return lines or [f"type {name} ({path}) changed (its kind of class, or the order of its fields)"]


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
