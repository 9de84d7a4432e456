"""Turning a model's reply into the step's output type (docs/language.md §10).

Four kinds of output type, decided once when the step is built:

- **text** — ``str``: the reply's text as it is.
- **object** — a pydantic model or a dataclass: requested as structured
  output (``response_format`` ``json_schema`` with the class's JSON schema) and
  validated from the reply's JSON.
- **choice** — a union of pydantic models and/or dataclasses, optionally with
  ``str``: each class is offered as a function (``tools``; the function's name
  is the class name, its parameters the class's schema) and the reply's first
  function call is validated as the class it names, so a ``match`` on the
  step's output dispatches on the model's choice. ``tool_choice`` is
  ``"required"``, or ``"auto"`` when ``str`` is a member: then a text reply is
  the ``str`` answer.
- **value** — anything else pydantic can validate and describe: ``Literal[…]``
  (one of its values), ``int``, ``float``, ``bool``, ``list[…]``, ``dict[str, …]``,
  ``tuple[…]``, enums, unions of these, ``X | None``. Requested as structured
  output ``{"value": …}``; the reply may also be the bare JSON value, or (for
  text-like types) the bare text.

Not supported (:func:`output_problem` says why): ``Any``, ``object``,
``None`` and ``Never`` on their own, ``bytes`` anywhere, a plain class that is
not a pydantic model or dataclass, a union that mixes classes with anything
but ``str``, two union members with the same class name, ``dict`` keys other
than ``str``.

A reply that does not validate raises :class:`Invalid` with pydantic's
errors, one line each; the step sends them back to the model (a repair) or,
after the last attempt, fails with ``LLMFailed``.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, ForwardRef, Literal

from .._show import safe_repr, short_repr, type_name
from .wire import LLMReply, ToolSpec

__all__ = ["Shape", "Invalid", "output_problem", "output_shape", "describe"]

#: The keys of a structured ``{"value": …}`` answer.
VALUE_KEY = "value"

_SCALARS: tuple[type, ...] = (str, int, float, bool)
_SEQUENCES: tuple[Any, ...] = (list, set, frozenset, tuple, cabc.Sequence, cabc.Set, cabc.MutableSequence)
_MAPPINGS: tuple[Any, ...] = (dict, cabc.Mapping, cabc.MutableMapping)


class Invalid(Exception):
    """A reply that is not a valid output: ``summary`` says so in words, ``errors`` one line each."""

    def __init__(self, summary: str, errors: tuple[str, ...] = ()) -> None:
        super().__init__(summary)
        self.summary = summary
        self.errors = errors or (summary,)


# ---------------------------------------------------------------- classifying types


def _is_union(tp: object) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _is_model(tp: object) -> bool:
    if not isinstance(tp, type):
        return False
    try:
        from pydantic import BaseModel
    except ImportError:  # pragma: no cover - pydantic is a dependency of mcec
        return False
    return issubclass(tp, BaseModel)


def _is_record(tp: object) -> bool:
    """A class the model can fill in: a pydantic model, a dataclass, or (statically) a forward reference."""
    if isinstance(tp, ForwardRef):
        return True
    return _is_model(tp) or (isinstance(tp, type) and dataclasses.is_dataclass(tp))


def _record_name(tp: object) -> str:
    if isinstance(tp, ForwardRef):
        return tp.__forward_arg__.rpartition(".")[2]
    return str(getattr(tp, "__name__", tp))


def describe(tp: object) -> str:
    """A type as messages write it: ``Answer | SearchArgs``, ``Literal['a', 'b']``, ``list[str]``."""
    if tp is type(None):
        return "None"
    if isinstance(tp, ForwardRef):
        return _record_name(tp)
    if _is_union(tp):
        return " | ".join(describe(a) for a in typing.get_args(tp))
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _unannotated(tp: object) -> object:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _value_problem(tp: object) -> str | None:
    """Why ``tp`` cannot be part of a structured answer (``None``: it can)."""
    tp = _unannotated(tp)
    if tp in _SCALARS or tp is type(None) or tp is None or tp is typing.Any:
        return None
    if tp is bytes or tp is bytearray:
        return "bytes cannot be carried in a model's JSON answer"
    if tp is object or tp in (typing.Never, typing.NoReturn):
        return f"{describe(tp)} says nothing the model could answer with"
    if _is_record(tp) or typing.is_typeddict(tp):
        return None
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Literal:
        bad = [a for a in args if not isinstance(a, (str, int, enum.Enum)) and a is not None]
        return f"Literal values must be strings or ints, not {short_repr(bad[0])}" if bad else None
    if _is_union(tp):
        for member in args:
            problem = _value_problem(member)
            if problem is not None:
                return problem
        return None
    if origin in _SEQUENCES:
        for arg in args:
            if arg is not Ellipsis:
                problem = _value_problem(arg)
                if problem is not None:
                    return problem
        return None
    if origin in _MAPPINGS:
        if args and _unannotated(args[0]) is not str:
            return f"dict keys must be str in a JSON answer, not {describe(args[0])}"
        return _value_problem(args[1]) if len(args) == 2 else None
    if isinstance(tp, type) and tp in (list, dict, set, frozenset, tuple):
        return None  # bare list / dict: any JSON
    if isinstance(tp, type):
        return f"{describe(tp)} is not a pydantic model or dataclass, so the model cannot be asked to fill it in"
    return f"{describe(tp)} is not a type the runtime can read a model's answer as"


def output_problem(tp: object) -> str | None:
    """Why the runtime cannot parse a model's answer into ``tp``, or ``None`` if it can (MCE024).

    ``tp`` is a Python type as the step gets it (``str``, a class,
    ``Answer | SearchArgs``, ``Literal["a", "b"]``, ``list[int]``, …). For a
    check without importing user code, a class may be given as a
    ``typing.ForwardRef`` of its (dotted) name: it is then taken to be a
    pydantic model or dataclass, e.g.
    ``typing.Union[ForwardRef("impl.Answer"), ForwardRef("impl.SearchArgs")]``.

    >>> output_problem(str) is None, output_problem(typing.Literal["a", 3]) is None
    (True, True)
    >>> output_problem(bytes)
    "bytes cannot be carried in a model's JSON answer"
    >>> output_problem(typing.Union[ForwardRef("a.Answer"), ForwardRef("b.Answer")])
    "two members of the union are named 'Answer': the model chooses a member by its class name"
    """
    tp = _unannotated(tp)
    if tp is str or _is_record(tp):
        return None
    if tp is typing.Any:
        return "Any does not say what the model should answer with: name a type"
    if tp is None or tp is type(None):
        return "None is not something a model can answer with"
    if _is_union(tp):
        members = typing.get_args(tp)
        records = [m for m in members if _is_record(_unannotated(m))]
        if records:
            others = [m for m in members if m not in records and _unannotated(m) is not str]
            if others:
                return (
                    f"the union mixes classes with {describe(others[0])}: the model answers with one of the "
                    "classes (a function call each) or with text (str), nothing else"
                )
            seen: set[str] = set()
            for record in records:
                name = _record_name(_unannotated(record))
                if name in seen:
                    return f"two members of the union are named {name!r}: the model chooses a member by its class name"
                seen.add(name)
            return None
    return _value_problem(tp)


# ---------------------------------------------------------------- parsing replies


#: How long a quoted input of a validation error may be; a longer one is described, not cut.
_INPUT_LIMIT = 80


def _quoted(value: object) -> str:
    """``value``'s repr when it is short, else what it is (``a str of 500 characters``). Never a
    cut repr: the step masks secrets in messages, and a secret cut in two would escape that."""
    text = safe_repr(value)
    if len(text) <= _INPUT_LIMIT:
        return text
    size = f" of {len(value)} {'characters' if isinstance(value, str) else 'items'}" if isinstance(value, cabc.Sized) else ""
    return f"<{type_name(value)}{size}>"


def _error_lines(exc: Exception) -> tuple[str, ...]:
    """pydantic's validation errors, one line each (``loc: message [type=…, input=…]``)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            lines = []
            for e in errors(include_url=False):
                loc = ".".join(str(p) for p in e.get("loc", ())) or "<root>"
                lines.append(f"{loc}: {e.get('msg')} [type={e.get('type')}, input={_quoted(e.get('input'))}]")
            if lines:
                return tuple(lines)
        except Exception:
            pass
    return (f"{type(exc).__name__}: {exc}",)


def _unfence(text: str) -> str:
    """The JSON inside a Markdown code fence (some models add one), else the text."""
    stripped = text.strip()
    if stripped.startswith("```"):
        body = stripped[3:]
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
        return body.strip()
    return stripped


def _schema_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "output"


def _doc(cls: type) -> str:
    doc = cls.__dict__.get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


class Shape:
    """How one output type is asked for and read back (see the module docstring)."""

    kind: str = ""
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    response_format: dict[str, Any] | None = None

    def __init__(self, tp: object) -> None:
        self.type = tp
        self.description = describe(tp)

    def parse(self, reply: LLMReply) -> Any:
        """The reply as a value of the type, or :class:`Invalid`."""
        raise NotImplementedError

    def record_classes(self) -> dict[str, type]:
        """The classes an answer of this type is an instance of, by name (streaming's partials)."""
        return {}

    def text_streams(self) -> bool:
        """Is the text of a reply (rather than a function call's arguments) the answer as text?"""
        return False


class _Text(Shape):
    kind = "text"

    def text_streams(self) -> bool:
        return True

    def parse(self, reply: LLMReply) -> Any:
        if reply.content is None:
            if reply.tool_calls:
                raise Invalid("expected a text answer, not a function call")
            raise Invalid("the reply has no text")
        return reply.content


def _adapter(tp: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(tp)


class _Object(Shape):
    kind = "object"

    def __init__(self, tp: type) -> None:
        super().__init__(tp)
        self._adapter = _adapter(tp)
        self.response_format = {
            "type": "json_schema",
            "json_schema": {"name": _schema_name(tp.__name__), "schema": self._adapter.json_schema()},
        }

    def record_classes(self) -> dict[str, type]:
        assert isinstance(self.type, type)
        return {self.type.__name__: self.type}

    def parse(self, reply: LLMReply) -> Any:
        if reply.content is None:
            raise Invalid(f"expected a JSON object for {self.description}, but the reply has no text")
        return _validate(self._adapter.validate_json, _unfence(reply.content), self.description)


def _validate(validate: Callable[[Any], Any], data: Any, description: str) -> Any:
    try:
        return validate(data)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise Invalid(f"the answer does not validate as {description}", _error_lines(exc)) from None


class _Choice(Shape):
    kind = "choice"

    def __init__(self, tp: object) -> None:
        super().__init__(tp)
        members = [_unannotated(m) for m in typing.get_args(tp)]
        self.text_allowed = str in members
        self._members: dict[str, tuple[type, Any]] = {}
        tools = []
        for member in members:
            if member is str:
                continue
            assert isinstance(member, type)
            adapter = _adapter(member)
            self._members[member.__name__] = (member, adapter)
            tools.append(ToolSpec(member.__name__, _doc(member), adapter.json_schema()))
        self.tools = tuple(tools)
        self.tool_choice = "auto" if self.text_allowed else "required"

    def record_classes(self) -> dict[str, type]:
        return {name: cls for name, (cls, _) in self._members.items()}

    def text_streams(self) -> bool:
        return self.text_allowed

    def parse(self, reply: LLMReply) -> Any:
        names = ", ".join(self._members)
        if not reply.tool_calls:
            if self.text_allowed and reply.content is not None:
                return reply.content
            raise Invalid(f"expected a call of one of the functions {names}" + (" or a text answer" if self.text_allowed else ""))
        call = reply.tool_calls[0]
        found = self._members.get(call.name)
        if found is None:
            raise Invalid(f"there is no function {call.name!r}: call one of {names}")
        _, adapter = found
        return _validate(adapter.validate_json, call.arguments.strip() or "{}", call.name)


class _Value(Shape):
    kind = "value"

    def __init__(self, tp: object) -> None:
        super().__init__(tp)
        self._adapter = _adapter(tp)
        inner = dict(self._adapter.json_schema())
        defs = inner.pop("$defs", None)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {VALUE_KEY: inner},
            "required": [VALUE_KEY],
            "additionalProperties": False,
        }
        if defs:
            schema["$defs"] = defs
        self.response_format = {"type": "json_schema", "json_schema": {"name": "value", "schema": schema}}

    def parse(self, reply: LLMReply) -> Any:
        if reply.content is None:
            raise Invalid(f"expected an answer of type {self.description}, but the reply has no text")
        text = _unfence(reply.content)
        data: Any
        try:
            data = json.loads(text)
        except RecursionError:
            raise Invalid(f"the answer is JSON nested too deeply to read as {self.description}") from None
        except ValueError:
            data = text  # a bare word: `yes` for Literal["yes", "no"]
        else:
            if isinstance(data, dict) and list(data) == [VALUE_KEY]:
                data = data[VALUE_KEY]
        return _validate(self._adapter.validate_python, data, self.description)


def output_shape(tp: object) -> Shape:
    """The :class:`Shape` for output type ``tp``; ``TypeError`` saying why if it is not supported."""
    problem = output_problem(tp)
    if problem is not None:
        raise TypeError(f"an LLM step cannot answer {describe(tp)}: {problem}")
    bare = _unannotated(tp)
    if isinstance(bare, ForwardRef) or (_is_union(bare) and any(isinstance(_unannotated(m), ForwardRef) for m in typing.get_args(bare))):
        raise TypeError(f"an LLM step needs the real classes, not the names {describe(tp)}")
    if bare is str:
        return _Text(bare)
    if _is_record(bare):
        assert isinstance(bare, type)
        return _Object(bare)
    if _is_union(bare) and any(_is_record(_unannotated(m)) for m in typing.get_args(bare)):
        return _Choice(bare)
    return _Value(tp)
