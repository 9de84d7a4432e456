"""What changed in a durable run's spec since the run started, declaration by declaration and
line by line (docs/language.md §13 "Changing a spec").

The fingerprint (:mod:`mcec.fingerprint`) tells *that* a spec changed: one digest per spec. To
say *what* changed, a run also records, per spec, a short digest of each declaration (the
checked declaration without its spans, as the fingerprint sees it), of each template apart (an
``llm``'s or ``ask``'s, so that an edited prompt file is named as such), and of each line of
each pipeline: what the line *means* — the checked pipeline nodes that start on it (a step
used with its signature, a ``par``, an ``each(limit=N)``…), their inner expressions left out.
A resume refused for a changed spec compares them with today's and names:

- each declaration added, removed or changed (``llm classify: changed``), and each template
  that changed (``llm classify: its template prompts/classify.j2 changed``);
- each pipeline line whose meaning changed: a line that is new or reads differently (lines
  are aligned by meaning, so lines that only moved are not named), and a line that uses a
  declaration that changed or was removed.

A run recorded before these digests existed gets the spec-level message only.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any, assert_never

from mcec.check import typed as t
from mcec.check.pyindex import package_root
from mcec.fingerprint import SpecFingerprint, _canonical, _sha, _shape, _spec_name, _specs, describe_change
from mcec.memo import IdentityMemo
from mcec.span import Span

__all__ = ["declarations", "describe_changes"]

#: The version of the record's layout: a record of another version gets the spec-level message.
SCHEME = 1

#: A line of a pipeline as recorded: its number, the digest of its meaning, the declarations it uses.
Line = tuple[int, str, list[str]]


#: The records of the programs this process recorded runs of (a long-lived process that runs many
#: specs keeps the latest 32): a batch that enqueues many runs of one checked spec makes it once.
_made: IdentityMemo[t.Program, dict[str, Any]] = IdentityMemo(32)


def declarations(program: t.Program) -> dict[str, Any]:
    """What a durable run records of its spec's parts (the module docstring), as JSON data:
    ``{"scheme": 1, "specs": {SPEC: {"decls": {KEY: DIGEST}, "templates": {KEY: [NAME, DIGEST]},
    "lines": {PIPELINE: [[LINE, DIGEST, [NAME, …]], …]}}}}``; SPEC as the fingerprint names it."""
    return _made.get(program, lambda: _declarations(program))


def _declarations(program: t.Program) -> dict[str, Any]:
    base = package_root(program.path)
    specs: dict[str, Any] = {}
    for spec in _specs(program):
        decls: dict[str, str] = {"state": _digest(_shape(spec.state, base)), "merge": _digest(_shape(spec.merge, base))}
        templates: dict[str, list[str | None]] = {}
        lines: dict[str, list[Line]] = {}
        for decl in spec.decls:
            key = _key(decl)
            if isinstance(decl, t.TLlm | t.TAsk) and decl.template is not None:
                templates[key] = [decl.template_name, _digest(decl.template)]
                decl = dataclasses.replace(decl, template="")  # the template is told apart
            decls[key] = _digest(_shape(decl, base))
            if isinstance(decl, t.TPipeline):
                lines[decl.name] = _lines(decl.body, base)
        specs[_spec_name(spec.path, base)] = {"decls": decls, "templates": templates, "lines": lines}
    return {"scheme": SCHEME, "specs": specs}


def describe_changes(request: Mapping[str, Any], recorded: SpecFingerprint, current: SpecFingerprint,
                     program: t.Program) -> str:
    """:func:`mcec.fingerprint.describe_change`, each ``the spec PATH changed`` followed by what
    changed in it (indented lines) when the run recorded its :func:`declarations` (``request``:
    the run's request; ``program``: the spec today)."""
    summary = describe_change(recorded, current)
    old = request.get("declarations")
    if not isinstance(old, dict) or old.get("scheme") != SCHEME or not isinstance(old.get("specs"), dict):
        return summary  # a run recorded before these digests existed
    new = declarations(program)["specs"]
    described: list[str] = []
    for line in summary.splitlines():
        described.append(line)
        prefix, suffix = "the spec ", " changed"
        if line.startswith(prefix) and line.endswith(suffix):
            path = line[len(prefix):-len(suffix)]
            before, after = old["specs"].get(path), new.get(path)
            if isinstance(before, dict) and isinstance(after, dict):
                described.extend(f"  {detail}" for detail in _spec_changes(path, before, after))
    return "\n".join(described)


# ---------------------------------------------------------------- recording


def _key(decl: t.TDecl) -> str:
    """How a declaration is named in the record and in messages: ``llm classify``, ``import m``."""
    match decl:
        case t.TFromImport(module=module) | t.TModuleImport(module=module):
            return f"import {module}"
        case t.TUsed(name=name):
            return f"use {name}"
        case t.TStep(name=name):
            return f"step {name}"
        case t.TFn(name=name):
            return f"fn {name}"
        case t.TServer(name=name):
            return f"server {name}"
        case t.TTool(name=name):
            return f"tool {name}"
        case t.TModel(name=name):
            return f"model {name}"
        case t.TLlm(name=name):
            return f"llm {name}"
        case t.TAsk(name=name):
            return f"ask {name}"
        case t.TToolbox(name=name):
            return f"toolbox {name}"
        case t.TPipeline(name=name):
            return f"pipeline {name}"
        case _:
            assert_never(decl)


def _digest(data: object) -> str:
    # 16 hex digits: the record stays small (a run's request holds it), and a collision between
    # two versions of one declaration is not a concern at 64 bits
    return _sha(_canonical(data))[:16]


def _lines(body: t.TExpr, base: Any) -> list[Line]:
    """Each line of a pipeline's body that a node starts on: its number, the digest of the
    nodes starting there (each without its inner expressions), the declarations used there."""
    heads: dict[int, list[object]] = {}
    uses: dict[int, list[str]] = {}
    stack: list[t.TExpr] = [body]
    while stack:  # in source order (iterative: chains are long)
        node = stack.pop()
        line = node.span.line
        heads.setdefault(line, []).append(_head(node, base))
        if isinstance(node, t.TRef):
            uses.setdefault(line, []).append(node.name)
        elif isinstance(node, t.TSpawn):
            uses.setdefault(line, []).append(node.toolbox)
        stack.extend(reversed(t.children(node)))
    return [(line, _digest(heads[line]), sorted(set(uses.get(line, [])))) for line in sorted(heads)]


def _head(node: t.TExpr, base: Any) -> object:
    """``node`` as the fingerprint shapes it, its inner expressions (the ones
    :func:`mcec.check.typed.children` gives) left out: they are on lines of their own."""
    inner = {id(child) for child in t.children(node)}

    def strip(value: object) -> object:
        if id(value) in inner:
            return "…"
        if isinstance(value, Span):
            return None
        if isinstance(value, tuple | list):
            return [strip(item) for item in value]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = dataclasses.fields(value)
            return [type(value).__name__, {f.name: strip(getattr(value, f.name)) for f in fields if f.compare and f.name != "span"}]
        return _shape(value, base)

    return strip(node)


# ---------------------------------------------------------------- describing


def _spec_changes(path: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """What changed in the spec ``path``: its declarations and templates, then its pipeline lines."""
    old_decls, new_decls = dict(before.get("decls", {})), dict(after.get("decls", {}))
    old_templates, new_templates = dict(before.get("templates", {})), dict(after.get("templates", {}))
    details: list[str] = []
    changed: set[str] = set()  # the names whose declaration changed or went: the lines using them changed meaning
    for key in sorted(old_decls.keys() | new_decls.keys(), key=_decl_order):
        was, now = old_decls.get(key), new_decls.get(key)
        name = key.partition(" ")[2]
        if was is None:
            details.append(f"{key}: added")
        elif now is None:
            details.append(f"{key}: removed")
            changed.add(name)
        elif was != now:
            details.append(f"{key}: changed")
            changed.add(name)
        old_template, new_template = old_templates.get(key), new_templates.get(key)
        if was is not None and now is not None and old_template != new_template:
            named = (new_template or old_template or [None])[0]
            details.append(f"{key}: its template {named} changed" if named else f"{key}: its template changed")
            changed.add(name)
    old_lines, new_lines = dict(before.get("lines", {})), dict(after.get("lines", {}))
    for pipeline in sorted(new_lines):
        details.extend(_line_changes(path, pipeline, old_lines.get(pipeline), new_lines[pipeline], changed))
    return details


def _decl_order(key: str) -> tuple[int, str]:
    """State and merge first, then imports, then the declarations, each by key."""
    kind = key.partition(" ")[0]
    return ({"state": 0, "merge": 0, "import": 1, "pipeline": 3}.get(kind, 2), key)


def _line_changes(path: str, pipeline: str, before: list[Any] | None, after: list[Any], changed: set[str]) -> list[str]:
    """The lines of ``pipeline`` whose meaning changed: new or different ones (aligned by
    meaning with the recorded lines: a line that only moved is the same), lines using a
    ``changed`` declaration, and where recorded lines were removed. None for a new pipeline
    (its declaration is named as added)."""
    if before is None:
        return []
    found: dict[int, str] = {}
    matcher = difflib.SequenceMatcher(None, [str(line[1]) for line in before], [str(line[1]) for line in after],
                                      autojunk=False)
    removed: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            for line in after[j1:j2]:
                found[int(line[0])] = "new" if tag == "insert" else "reads differently"
        if tag in ("replace", "delete") and i2 > i1 and j2 == j1:
            removed.extend(int(line[0]) for line in before[i1:i2])
    for line in after:
        used = sorted(set(line[2]) & changed)
        if used and int(line[0]) not in found:
            found[int(line[0])] = f"uses {', '.join(used)}, which changed"
    details = [f"{path}:{number} (pipeline {pipeline}): {what}" for number, what in sorted(found.items())]
    if removed:
        lines = ", ".join(map(str, removed))
        details.append(f"pipeline {pipeline}: line{'s' if len(removed) > 1 else ''} {lines} of the spec the run started "
                       "with removed")
    return details
