"""Python objects behind spec names, for the phases that run user code.

The checker never imports user code (LANGUAGE.md §4). ``mcec run``, ``mcec
serve`` and the reference interpreter do: they need the step implementations
and the real classes behind spec types (to validate JSON input with pydantic).
"""

from __future__ import annotations

import importlib
from functools import reduce
from typing import Any, Never

from mcec.check.types import Builtin, ClassRef, Generic, Type, Union

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


def python_type(type_: Type) -> Any:
    """The Python type (usable by ``isinstance`` or pydantic's TypeAdapter) for a spec type."""
    if isinstance(type_, Builtin):
        return _BUILTINS[type_.name]
    if isinstance(type_, Generic):
        args = tuple(python_type(a) for a in type_.args)
        return _GENERICS[type_.head][args if len(args) > 1 else args[0]]
    if isinstance(type_, ClassRef):
        return resolve_path(type_.path)
    if isinstance(type_, Union):
        members = [python_type(m) for m in type_.members]
        return reduce(lambda a, b: a | b, members)
    raise AssertionError(f"unknown type {type_!r}")


def error_classes(errors: frozenset[Type]) -> tuple[type, ...]:
    """The classes of an error set (for ``isinstance``)."""
    classes = (python_type(error) for error in sorted(errors, key=str))
    return tuple(cls for cls in classes if isinstance(cls, type))
