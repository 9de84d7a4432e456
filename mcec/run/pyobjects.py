"""Python objects behind spec names, for the phases that run user code.

The checker never imports user code (docs/language.md §4). ``mcec run``, ``mcec
serve`` and the reference interpreter do: they need the step implementations
and the real classes behind spec types (to validate JSON input with pydantic).
"""

from __future__ import annotations

import importlib
from functools import reduce
from typing import Any, Never

from collections.abc import Callable
from typing import Literal

from mcec.check.types import Builtin, ClassRef, Generic, Lit, Type, Union, members

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
    if isinstance(type_, Lit):
        return Literal[type_.value]
    if isinstance(type_, Union):
        parts = [python_type(m) for m in type_.members]
        return reduce(lambda a, b: a | b, parts)
    raise AssertionError(f"unknown type {type_!r}")


def value_test(type_: Type) -> Callable[[object], bool]:
    """The run-time test of a testable type (a ``loop`` input, a ``match`` pattern), exactly as
    generated code makes it: ``isinstance`` for classes, ``is None``, and for a literal an equal
    value of the same type (``isinstance(v, str)``; ``type(v) is int``, so ``True`` is not ``1``)."""
    tests: list[Callable[[object], bool]] = []
    classes: list[type] = []
    for member in members(type_):
        if member == Builtin("None"):
            tests.append(lambda v: v is None)
        elif isinstance(member, Lit):
            tests.append(_literal_test(member.value))
        else:
            cls = python_type(member)
            assert isinstance(cls, type), f"{member} cannot be tested at run time"
            classes.append(cls)
    if classes:
        checked = tuple(classes)
        tests.insert(0, lambda v: isinstance(v, checked))
    return lambda v: any(test(v) for test in tests)


def _literal_test(literal: str | int) -> Callable[[object], bool]:
    if isinstance(literal, str):
        return lambda v: isinstance(v, str) and v == literal
    return lambda v: type(v) is int and v == literal


def error_classes(errors: frozenset[Type]) -> tuple[type, ...]:
    """The classes of an error set (for ``isinstance``)."""
    classes = (python_type(error) for error in sorted(errors, key=str))
    return tuple(cls for cls in classes if isinstance(cls, type))
