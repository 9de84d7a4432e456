"""The Python classes behind spec types, imported: what a durable run's recorded values are.

The checker proper never imports user code (docs/language.md §4): it reads the
source (:mod:`mcec.check.pyindex`). Two questions need the real classes, and
both are asked only of a durable run (docs/language.md §13): can pydantic
record a type's values as JSON (:mod:`mcec.check.durable`), and what is a
type's shape — its fields and their types, recursively — so that a run can
tell that the types it recorded have changed (:mod:`mcec.fingerprint`).
``mcec run`` imports the same classes through :func:`resolve_path`.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import types
import typing
from functools import reduce
from typing import Any, Literal, Never, assert_never

from mcec.check.types import Builtin, ClassRef, Generic, Lit, Type, Union

__all__ = ["ResolveError", "annotation_text", "class_fields", "class_kind", "classes_in", "python_type", "resolve_path"]


class ResolveError(Exception):
    """A spec name could not be found in Python (module missing, attribute missing)."""


def resolve_path(path: str) -> object:
    """Import the longest importable module prefix of ``path`` and fetch the rest as attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            obj: object = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and not module_name.startswith(exc.name):
                raise ResolveError(f"importing {module_name} failed: {exc}") from exc
            continue
        try:
            for attribute in parts[cut:]:
                obj = getattr(obj, attribute)
        except AttributeError as exc:
            raise ResolveError(f"module {module_name} has no attribute {'.'.join(parts[cut:])}") from exc
        return obj
    raise ResolveError(f"cannot import any module of {path}")


_BUILTINS: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "bytes": bytes,
    "None": type(None),
    "Any": Any,
    "Never": Never,
}
_GENERICS: dict[str, Any] = {"list": list, "set": set, "dict": dict, "tuple": tuple}


def python_type(type_: Type) -> Any:
    """The Python type (usable by ``isinstance`` or pydantic's TypeAdapter) for a spec type;
    classes are imported (:func:`resolve_path`, which raises :class:`ResolveError`)."""
    match type_:
        case Builtin(name=name):
            return _BUILTINS[name]
        case Generic(head=head, args=args):
            resolved = tuple(python_type(a) for a in args)
            return _GENERICS[head][resolved if len(resolved) > 1 else resolved[0]]
        case ClassRef(path=path):
            return resolve_path(path)
        case Lit(value=value):
            return Literal[value]
        case Union(members=members):
            return reduce(lambda a, b: a | b, [python_type(m) for m in members])
        case _:
            assert_never(type_)


def class_kind(cls: type) -> str:
    """What kind of class ``cls`` is, as messages and shapes name it."""
    from pydantic import BaseModel

    if issubclass(cls, BaseModel):
        return "pydantic model"
    if issubclass(cls, enum.Enum):
        return "enum"
    if dataclasses.is_dataclass(cls):
        return "dataclass"
    if typing.is_typeddict(cls):
        return "TypedDict"
    if issubclass(cls, tuple) and hasattr(cls, "_fields"):
        return "NamedTuple"
    if issubclass(cls, BaseException):
        return "exception"
    return "class"


def class_fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """The fields of ``cls`` and their annotations, in declaration order: a pydantic model's
    ``model_fields``, a dataclass's fields, the annotations of any other class (a TypedDict's keys,
    a NamedTuple's fields); an enum's members (annotated with their values' types)."""
    from pydantic import BaseModel

    if issubclass(cls, BaseModel):
        return tuple((name, info.annotation) for name, info in cls.model_fields.items())
    if issubclass(cls, enum.Enum):
        return tuple((member.name, type(member.value)) for member in cls)
    hints = _hints(cls)
    if dataclasses.is_dataclass(cls):
        return tuple((f.name, hints.get(f.name, f.type)) for f in dataclasses.fields(cls))
    # a ClassVar is the class's, not a field of its values; a private name is no field either
    # (pydantic leaves `_x` out of a model's fields too)
    return tuple(
        (name, hint)
        for name, hint in hints.items()
        if typing.get_origin(hint) is not typing.ClassVar and not name.startswith("_")
    )


def _hints(cls: type) -> dict[str, Any]:
    """``cls``'s annotations with strings resolved (``include_extras``: ``Annotated`` kept);
    the raw annotations when a forward reference does not resolve."""
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception:  # a name that does not resolve: the raw strings still say what is written
        merged: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            merged.update(getattr(klass, "__annotations__", {}))
        return merged


def annotation_text(annotation: Any) -> str:
    """A typing object as stable text: classes by their dotted path (``builtins.`` omitted),
    generics and unions by their parts, so that equal shapes give equal text in any process."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None) or annotation is None:
        return "None"
    if annotation is Ellipsis:
        return "..."
    if origin is typing.Annotated:
        return f"Annotated[{annotation_text(args[0])}, {', '.join(repr(a) for a in args[1:])}]"
    if origin is typing.Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(sorted(annotation_text(a) for a in args))
    if origin is not None:
        head = annotation_text(origin)
        return f"{head}[{', '.join(annotation_text(a) for a in args)}]" if args else head
    if isinstance(annotation, type):
        module = annotation.__module__
        return annotation.__qualname__ if module == "builtins" else f"{module}.{annotation.__qualname__}"
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    return str(annotation).replace("typing.", "")


def classes_in(annotation: Any) -> list[type]:
    """The user classes an annotation names (inside generics, unions and ``Annotated``), in order;
    not builtins nor the standard library's generic containers."""
    found: list[type] = []
    stack = [annotation]
    while stack:
        node = stack.pop()
        origin = typing.get_origin(node)
        if origin is typing.Literal:
            continue
        if origin is not None:
            stack.extend(reversed(typing.get_args(node)))
            continue
        if isinstance(node, type) and node.__module__ not in ("builtins", "typing", "collections.abc", "types"):
            found.append(node)
    return found
