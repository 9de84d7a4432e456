"""A form from an answer type's JSON schema, and the answer a submitted form makes (``mcec console``).

An open question carries its answer type's JSON schema (pydantic's, ``mcec runs waiting``).
:func:`form_of` makes a :class:`Field` tree of it: a string, a number or an integer is an input, a
boolean a checkbox, an ``enum`` a choice, a list a list of its item's fields (added and removed in
the page), a model its fields (a boolean with no default is a yes/no choice: a checkbox left
alone would answer no for the person); whatever a form cannot say (a union, a tuple, a dict, a recursive
type past a few levels) is a JSON editor. :func:`answer_of` turns the submitted fields back into the
answer's JSON, which ``runs answer``'s own validation (the run's pydantic type) then checks:
:func:`errors_by_field` puts each of pydantic's errors at the field it names.

Field names are paths: ``answer`` is the whole answer, ``answer.note`` a field of it,
``answer.items.0.name`` a field of a list's first item.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, final

__all__ = ["ROOT", "Field", "FormError", "answer_of", "errors_by_field", "field_names", "form_of", "list_indices",
           "shown_value"]

#: The name of the field that is the whole answer.
ROOT: Final = "answer"

#: How deep models nest in a form before the rest is a JSON editor (a recursive type never ends).
_MAX_DEPTH: Final = 6

FieldKind = Literal["text", "number", "integer", "checkbox", "choice", "list", "object", "json"]


@final
@dataclass(frozen=True, slots=True)
class Field:
    """One field of an answer's form: its ``name`` (a path), ``label``, ``kind`` and what the page
    checks before it sends it (``required`` and ``limits``, as HTML attributes)."""

    name: str
    label: str
    kind: FieldKind
    required: bool
    description: str = ""
    #: The value shown first, as JSON (None: nothing).
    initial: object = None
    #: A choice's options: (the value as JSON, its label).
    choices: tuple[tuple[str, str], ...] = ()
    #: An object's fields.
    children: tuple[Field, ...] = ()
    #: A list's item, named ``<name>.__i__`` (the page numbers each item it adds).
    item: Field | None = None
    #: ``null`` is an answer too (an ``Optional``): an empty input means it.
    nullable: bool = False
    #: HTML constraint attributes: min, max, minlength, maxlength, pattern, step.
    limits: tuple[tuple[str, str], ...] = field(default=())
    #: A JSON editor's schema, shown beside it.
    schema_text: str = ""


class FormError(Exception):
    """A field's submitted text cannot be part of an answer (a JSON editor's text is not JSON)."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


def form_of(schema: Mapping[str, Any]) -> Field:
    """The form of an answer whose JSON schema is ``schema``."""
    definitions = schema.get("$defs", {})
    return _field(schema, ROOT, str(schema.get("title", "answer")), True, definitions if isinstance(definitions, Mapping) else {}, 0)


def _resolved(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with its ``$ref`` (to ``#/$defs/…``) followed, its own keys kept over the target's."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = definitions.get(ref.removeprefix("#/$defs/"))
        if isinstance(target, Mapping):
            return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _field(schema: Mapping[str, Any], name: str, label: str, required: bool, definitions: Mapping[str, Any],
           depth: int) -> Field:
    schema = _resolved(schema, definitions)
    description = str(schema.get("description", ""))
    initial = schema.get("default")
    options = schema.get("anyOf")
    if isinstance(options, list):  # Optional[X] is the one union a form says: X, or empty for null
        real = [o for o in options if not (isinstance(o, Mapping) and o.get("type") == "null")]
        if len(real) == 1 and len(options) == 2 and isinstance(real[0], Mapping):
            inner = _field({**real[0], **{k: v for k, v in schema.items() if k not in ("anyOf",)}}, name, label,
                           required, definitions, depth)
            if inner.kind in ("text", "number", "integer", "choice"):
                return _with(inner, nullable=True, required=False)
        return _json(schema, name, label, required, description, initial)
    if "enum" in schema and isinstance(schema["enum"], list):
        choices = tuple((json.dumps(v), str(v)) for v in schema["enum"])
        return Field(name, label, "choice", required, description, _json_text(initial), choices)
    kind = schema.get("type")
    match kind:
        case "string":
            limits = _limits(schema, {"minLength": "minlength", "maxLength": "maxlength", "pattern": "pattern"})
            return Field(name, label, "text", required, description, initial, limits=limits)
        case "number" | "integer":
            limits = _limits(schema, {"minimum": "min", "maximum": "max"})
            step = (("step", "1"),) if kind == "integer" else (("step", "any"),)
            return Field(name, label, "integer" if kind == "integer" else "number", required, description, initial,
                         limits=limits + step)
        case "boolean" if required and initial is None:
            # no default: a checkbox left alone would answer "no" for the person; they say which
            return Field(name, label, "choice", True, description, None, (("true", "yes"), ("false", "no")))
        case "boolean":
            return Field(name, label, "checkbox", False, description, bool(initial))
        case "array" if isinstance(schema.get("items"), Mapping) and "prefixItems" not in schema and depth < _MAX_DEPTH:
            item = _field(schema["items"], f"{name}.__i__", "item", True, definitions, depth + 1)
            return Field(name, label, "list", required, description, initial if isinstance(initial, list) else [],
                         item=item)
        case "object" if isinstance(schema.get("properties"), Mapping) and schema["properties"] and depth < _MAX_DEPTH:
            needed = set(schema.get("required", ()))
            children = tuple(
                _field(sub, f"{name}.{key}", str(sub.get("title", key)) if isinstance(sub, Mapping) else key,
                       key in needed, definitions, depth + 1)
                for key, sub in schema["properties"].items() if isinstance(sub, Mapping)
            )
            return Field(name, label, "object", required, description, children=children)
        case _:
            return _json(schema, name, label, required, description, initial)


def _with(field_: Field, *, nullable: bool, required: bool) -> Field:
    return Field(field_.name, field_.label, field_.kind, required, field_.description, field_.initial, field_.choices,
                 field_.children, field_.item, nullable, field_.limits, field_.schema_text)


def _json(schema: Mapping[str, Any], name: str, label: str, required: bool, description: str, initial: object) -> Field:
    shown = {k: v for k, v in schema.items() if k not in ("title", "description", "default")}
    return Field(name, label, "json", required, description, _json_text(initial) if initial is not None else "",
                 schema_text=json.dumps(shown, indent=2))


def _json_text(value: object) -> str | None:
    return json.dumps(value) if value is not None else None


def _limits(schema: Mapping[str, Any], names: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((attribute, str(schema[key])) for key, attribute in names.items() if key in schema)


class _Omitted:
    """A field left empty that the answer leaves out (its type's default applies)."""


_OMITTED: Final = _Omitted()


def answer_of(form: Field, submitted: Mapping[str, Sequence[str]]) -> object:
    """The answer the submitted fields say, as JSON data (``submitted``: each field's values). A
    number that does not parse is sent as the text it is, for the answer type to refuse at its
    field; a JSON editor's text that is not JSON is a :class:`FormError`."""
    value = _value(form, form.name, submitted)
    return None if isinstance(value, _Omitted) else value


def _value(form: Field, name: str, submitted: Mapping[str, Sequence[str]]) -> object:
    texts = submitted.get(name, ())
    text = texts[-1] if texts else ""
    match form.kind:
        case "checkbox":
            return "true" in texts
        case "text":
            if text == "" and not form.required:
                return None if form.nullable else _OMITTED
            return text
        case "number" | "integer":
            if text.strip() == "":
                return None if form.nullable else (_OMITTED if not form.required else text)
            return _number(text, integer=form.kind == "integer")
        case "choice":
            if text == "":
                return None if form.nullable else _OMITTED
            try:
                return json.loads(text)
            except ValueError:
                return text
        case "json":
            if text.strip() == "":
                return _OMITTED if not form.required else None
            try:
                return json.loads(text)
            except ValueError as exc:
                raise FormError(name, f"not JSON: {exc}") from None
        case "object":
            values = {child.name.rsplit(".", 1)[1]: _value(child, f"{name}.{child.name.rsplit('.', 1)[1]}", submitted)
                      for child in form.children}
            return {key: value for key, value in values.items() if not isinstance(value, _Omitted)}
        case "list":
            assert form.item is not None
            items = [_value(form.item, f"{name}.{i}", submitted) for i in list_indices(submitted, name)]
            return [None if isinstance(item, _Omitted) else item for item in items]


def list_indices(submitted: Mapping[str, Sequence[str]] | None, name: str) -> list[int]:
    """The items of the list field ``name`` a submitted form has, in order (each item's marker
    field ``<name>.<i>#`` says it is there, whatever its own fields hold)."""
    if submitted is None:
        return []
    marker = re.compile(re.escape(name) + r"\.(\d+)#$")
    return sorted({int(m.group(1)) for key in submitted if (m := marker.match(key))})


def shown_value(form: Field, submitted: Mapping[str, Sequence[str]] | None, name: str) -> str:
    """What the field ``name`` shows: what was submitted (a refused answer's form, filled again),
    else its initial value (a choice's as JSON, as its options are)."""
    if submitted is not None:
        texts = submitted.get(name, ())
        return texts[-1] if texts else ""
    if form.initial is None:
        return ""
    return form.initial if isinstance(form.initial, str) else json.dumps(form.initial)


def _number(text: str, *, integer: bool) -> object:
    """``text`` as a JSON number (the text itself when it is not one: the answer type says why)."""
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    if integer or (number.is_integer() and re.fullmatch(r"\s*-?\d+\s*", text)):
        return int(number) if number.is_integer() else number
    return number


def field_names(form: Field) -> set[str]:
    """Every field name of ``form`` (a list's item under ``.__i__``)."""
    names = {form.name}
    for child in form.children:
        names |= field_names(child)
    if form.item is not None:
        names |= field_names(form.item)
    return names


def errors_by_field(form: Field, message: str, question: str) -> tuple[dict[str, list[str]], list[str]]:
    """pydantic's errors in ``runs answer``'s message for a refused answer (``bad answer to NAME:
    loc: msg; loc: msg (the run keeps waiting)``), each at the field its location names (an item of
    a list under the list's item field, a location inside a JSON editor at the editor); the
    messages no field takes, apart."""
    prefix, suffix = f"bad answer to {question}: ", " (the run keeps waiting)"
    if not message.startswith(prefix):
        return {}, [message]
    body = message.removeprefix(prefix).removesuffix(suffix)
    names = field_names(form)
    placed: dict[str, list[str]] = {}
    loose: list[str] = []
    for error in body.split("; "):
        location, colon, text = error.partition(": ")
        if not colon:
            loose.append(error)
            continue
        path = ROOT if location == "answer" else f"{ROOT}.{location}"
        target = _nearest(path, names)
        if target is None:
            loose.append(error)
        else:
            placed.setdefault(target, []).append(text)
    return placed, loose


def _nearest(path: str, names: set[str]) -> str | None:
    """The field ``path`` names, or the nearest one that holds it (the answer itself at worst):
    an item's number is the rendered item's field (``items.1.x`` is the field ``items.1.x``)."""
    parts = path.split(".")
    while parts:
        candidate = ".".join(parts)
        generic = ".".join("__i__" if p.isdigit() else p for p in parts)
        if candidate in names or generic in names:
            return candidate
        parts.pop()
    return None
