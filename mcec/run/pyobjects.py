"""Python objects behind spec names, for the phases that run user code.

The checker never imports user code (docs/language.md §4). ``mcec run``, ``mcec
serve`` and the reference interpreter do: they need the step implementations
and the real classes behind spec types (to validate JSON input with pydantic).
"""

from __future__ import annotations

from collections.abc import Callable

from mcec.check.pyclasses import ResolveError, python_type, resolve_path
from mcec.check.types import Builtin, Lit, Type, members

__all__ = ["ResolveError", "error_classes", "python_type", "resolve_path", "value_test"]


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
