"""An ``ask`` in a pipeline served over MCP (``mcec serve``, ``python -m agentmonad serve``): the question as an MCP form elicitation, the client's reply as the
answer or as one of the ask's typed errors (docs/language.md §9, §15).

MCP form elicitation only allows a flat object of primitive fields: strings (some formats, string
enums), numbers, booleans, and arrays of string enums (multi-select); the client's ``content`` may
only hold strings, numbers, booleans, lists of strings and nulls. An answer type is mapped onto
such a form by :func:`elicitation_form`:

- a model (or dataclass) is the form: each field whose schema is primitive stays a field; any
  other (a list, a nested model, a union, a ``dict``, a number ``Literal``) becomes a string field
  whose description is the field's JSON schema: the person types JSON, which mcec parses;
- any other answer type is the form's one field ``answer``: primitive, or JSON text the same way.

So every answer type the language accepts for an ``ask`` can be elicited; the answer is validated
against the answer type as any handler's is (``BadAnswer`` when it does not validate).

The client's reply (:class:`McpHuman`): ``accept`` → the form's answer; ``decline``/``cancel`` →
``NoAnswer`` (``reason`` the action); a JSON-RPC error → ``NoAnswer`` (``reason="error"``; the
connection closing, ``reason="closed"``): no answer came; a result that is not a valid
elicitation result (``content`` not an object, a value no form field holds, an unknown
``action``) → ``BadAnswer``: an answer came, and it is not one; a JSON text field that is not JSON
→ ``BadAnswer``; a client without form elicitation (or no channel back to it) → ``NoOneToAsk``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentmonad.human import BadAnswer, NoAnswer, NoOneToAsk, Question

if TYPE_CHECKING:
    from pydantic import ValidationError
    from pydantic_core import ErrorDetails

__all__ = ["ElicitationForm", "McpHuman", "elicitation_form"]

_log = logging.getLogger("agentmonad.serve")

#: The string formats a form field may declare (MCP's StringSchema).
STRING_FORMATS = frozenset({"date", "date-time", "email", "uri"})

#: The keywords kept on a primitive form field of each JSON type (MCP's PrimitiveSchemaDefinition).
_KEPT = {
    "string": ("title", "description", "minLength", "maxLength"),
    "integer": ("title", "description", "minimum", "maximum"),
    "number": ("title", "description", "minimum", "maximum"),
    "boolean": ("title", "description"),
}


@dataclass(frozen=True)
class ElicitationForm:
    """The form an answer type is asked with: its ``requestedSchema``, whether the answer is the
    form's one field ``answer`` (``wrapped``), and which fields hold JSON text (``json_fields``)."""

    schema: dict[str, Any]
    wrapped: bool
    json_fields: frozenset[str]

    def answer(self, name: str, content: Mapping[str, object]) -> object:
        """The answer an accepted form's ``content`` gives, still to be validated against the
        answer type: JSON text fields parsed (an optional one left empty dropped: its default
        applies), ``answer`` unwrapped. Raises :class:`BadAnswer` (the ask ``name``'s) for a JSON
        text field that is not JSON or a missing ``answer``."""
        values = dict(content)
        required = set(self.schema.get("required", ()))
        for field in sorted(self.json_fields):
            raw = values.get(field)
            if isinstance(raw, str) and not raw.strip() and field not in required:
                del values[field]  # a text box left empty: the field's default
            elif isinstance(raw, str):  # another value (a number, a list of strings) is validated as it is
                try:
                    values[field] = json.loads(raw)
                except ValueError as exc:
                    raise BadAnswer(name, raw, [f"{field}: not JSON ({exc})"]) from None
        if not self.wrapped:
            return values
        if "answer" not in values:
            raise BadAnswer(name, values, ["answer: Field required"])
        return values["answer"]


def _resolved(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with a ``$ref`` to the root's ``$defs`` replaced by its target (its own keys win)."""
    resolved = dict(schema)
    for _ in range(len(defs) + 1):  # a ref to a ref, never a cycle's worth
        ref = resolved.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/$defs/") or ref[8:] not in defs:
            break
        del resolved["$ref"]
        resolved = {**defs[ref[8:]], **resolved}
    return resolved


def _without_null(schema: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """``X | None`` as X (a form field may hold null; the answer type decides if it is valid)."""
    choices = schema.get("anyOf")
    if isinstance(choices, list) and len(choices) == 2 and {"type": "null"} in choices:
        other = _resolved(next(c for c in choices if c != {"type": "null"}), defs)
        outer = {k: v for k, v in schema.items() if k != "anyOf"}
        return {**other, **outer}
    return schema


def _string_choices(schema: Mapping[str, Any]) -> list[str] | None:
    """The choices of a string enum (or a string ``const``), else None."""
    values = schema.get("enum", [schema["const"]] if "const" in schema else None)
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        if schema.get("type", "string") == "string":
            return list(values)
    return None


def _primitive_field(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The form field for a property of JSON schema ``schema``, or None when no primitive field holds it."""
    spec = _without_null(_resolved(schema, defs), defs)
    described = {k: spec[k] for k in ("title", "description") if isinstance(spec.get(k), str)}
    choices = _string_choices(spec)
    if choices is not None:
        field: dict[str, Any] = {"type": "string", "enum": choices, **described}
        if spec.get("default") in choices:
            field["default"] = spec["default"]
        return field
    kind = spec.get("type")
    if kind == "array":
        items = _string_choices(_resolved(spec.get("items", {}), defs))
        if items is None:
            return None
        field = {"type": "array", "items": {"type": "string", "enum": items}, **described}
        field.update({k: spec[k] for k in ("minItems", "maxItems") if isinstance(spec.get(k), int)})
        return field
    if not isinstance(kind, str) or kind not in _KEPT or "enum" in spec or "const" in spec:
        return None  # a number enum, a union, an object, …: JSON text
    field = {"type": kind, **{k: spec[k] for k in _KEPT[kind] if k in spec}}
    if kind == "string" and spec.get("format") in STRING_FORMATS:
        field["format"] = spec["format"]
    default = spec.get("default")
    if _fits(kind, default):
        field["default"] = default
    return field


def _fits(kind: str, value: object) -> bool:
    """Whether ``value`` is a default a primitive field of JSON type ``kind`` may declare."""
    match kind:
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case _:
            return isinstance(value, int | float) and not isinstance(value, bool)


def _json_field(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """A string field for JSON text of ``schema`` (its definitions included when it refers to them)."""
    described = {k: v for k, v in schema.items() if k not in ("title", "description")}
    if defs and '"$ref"' in json.dumps(described):
        described["$defs"] = dict(defs)
    text = "JSON of this schema: " + json.dumps(described, separators=(",", ":"), ensure_ascii=False)
    own = schema.get("description")
    field: dict[str, Any] = {"type": "string", "description": f"{own}\n{text}" if isinstance(own, str) else text}
    if isinstance(schema.get("title"), str):
        field["title"] = schema["title"]
    return field


def elicitation_form(schema: Mapping[str, Any]) -> ElicitationForm:
    """The form asking for an answer of JSON schema ``schema`` (see the module docstring)."""
    defs: Mapping[str, Any] = schema.get("$defs") or {}
    root = _resolved({k: v for k, v in schema.items() if k != "$defs"}, defs)
    properties = root.get("properties")
    if root.get("type") == "object" and isinstance(properties, dict):
        fields: dict[str, Any] = {}
        json_fields: set[str] = set()
        for name, prop in properties.items():
            field = _primitive_field(prop, defs)
            if field is None:
                field = _json_field(prop, defs)
                json_fields.add(name)
            fields[name] = field
        form: dict[str, Any] = {"type": "object", "properties": fields}
        if root.get("required"):
            form["required"] = list(root["required"])
        return ElicitationForm(form, False, frozenset(json_fields))
    field = _primitive_field(root, defs)
    json_answer = field is None
    if field is None:
        field = _json_field(schema, {})  # the whole schema, its $defs with it
    form = {"type": "object", "properties": {"answer": field}, "required": ["answer"]}
    return ElicitationForm(form, True, frozenset({"answer"} if json_answer else ()))


def _malformed(name: str, exc: ValidationError) -> BadAnswer:
    """The ask ``name``'s error for a client result that is no valid elicitation result: the
    offending value, one message per part of the result (``action``, ``content``, a field)."""
    groups: dict[tuple[Any, ...], ErrorDetails] = {}
    for error in exc.errors():
        key = tuple(error["loc"][:2])
        if key not in groups or len(error["loc"]) < len(groups[key]["loc"]):
            groups[key] = error  # the shortest path: its input is the offending value itself
    messages = []
    for key, detail in groups.items():
        where = ".".join(map(str, ("result", *key)))
        if len(detail["loc"]) > len(key):  # every member of the value union failed
            msg = "not a value a form field holds (a string, number, boolean, list of strings or null)"
        else:
            msg = str(detail["msg"])
        messages.append(f"{where}: {msg}")
    first = next(iter(groups.values()), None)
    return BadAnswer(name, first["input"] if first is not None else None, messages)


class McpHuman:
    """The :class:`~agentmonad.context.HumanInput` of one ``tools/call``: asks the MCP client
    (``session``) by form elicitation, related to the call's request ``request_id``."""

    def __init__(self, session: Any, request_id: Any) -> None:
        self._session = session
        self._request_id = request_id

    def _can_elicit(self) -> bool:
        from mcp.types import ClientCapabilities, ElicitationCapability, FormElicitationCapability

        wanted = ClientCapabilities(elicitation=ElicitationCapability(form=FormElicitationCapability()))
        return bool(self._session.check_client_capability(wanted))

    async def ask(self, question: Question[Any]) -> object:
        """The client's answer to ``question``, to be validated against the answer type; raises
        the ask's typed errors for anything else (see the module docstring)."""
        from mcp.shared.exceptions import MCPError, NoBackChannelError
        from mcp.types import CONNECTION_CLOSED
        from pydantic import ValidationError

        if not self._can_elicit():
            raise NoOneToAsk(question.name)
        form = elicitation_form(question.schema)
        try:
            result = await self._session.elicit_form(question.text(), form.schema, related_request_id=self._request_id)
        except NoBackChannelError:
            raise NoOneToAsk(question.name) from None
        except MCPError as exc:
            _log.warning("ask %s: the client answered the elicitation with error %s: %s", question.name, exc.code, exc)
            reason = "closed" if exc.code == CONNECTION_CLOSED else "error"
            raise NoAnswer(question.name, reason, None) from None
        except ValidationError as exc:
            raise _malformed(question.name, exc) from None
        if result.action != "accept":
            raise NoAnswer(question.name, result.action, None)
        return form.answer(question.name, result.content or {})
