"""Spec types (LANGUAGE.md §4): their representation and their `.mce` spelling.

Types are immutable values. ``str(t)`` prints ``t`` in `.mce` syntax, so
diagnostics speak the user's notation. Imported classes are compared by their
resolved Python path (``ClassRef.path``); ``spelling`` only remembers how the
spec wrote the name, for messages and for the generated code's annotations.

The compatibility relation ``≤`` lives beside the representation in this module
(see :func:`flows`); every phase that asks "may X flow where Y is expected" uses
that one function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

BuiltinName = Literal["str", "int", "float", "bool", "bytes", "None", "Any", "Never"]
GenericName = Literal["list", "dict", "set", "tuple"]

BUILTIN_NAMES: tuple[BuiltinName, ...] = ("str", "int", "float", "bool", "bytes", "None", "Any", "Never")
#: Generic heads and their arity (None: any number of arguments, at least one).
GENERIC_ARITY: dict[GenericName, int | None] = {"list": 1, "set": 1, "dict": 2, "tuple": None}

#: The runtime module that provides the built-in error types.
RUNTIME_MODULE = "agentmonad"
#: Error types every spec may use without importing or declaring them.
BUILTIN_ERRORS: tuple[str, ...] = ("MergeConflict", "ToolFailed", "ToolUnavailable")


@dataclass(frozen=True, slots=True)
class Builtin:
    """One of ``str int float bool bytes None Any Never``."""

    name: BuiltinName

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Generic:
    """``list[T]``, ``set[T]``, ``dict[K, V]`` or ``tuple[A, B, …]``."""

    head: GenericName
    args: tuple[Type, ...]

    def __str__(self) -> str:
        return f"{self.head}[{', '.join(str(a) for a in self.args)}]"


@dataclass(frozen=True, slots=True)
class ClassRef:
    """An imported Python class, identified by its resolved dotted path.

    ``ClassRef("examples.research.impl.ToolCall", "ToolCall")`` and
    ``ClassRef("examples.research.impl.ToolCall", "impl.ToolCall")`` are equal.
    """

    path: str
    spelling: str = field(compare=False)

    @property
    def is_runtime(self) -> bool:
        """True for the runtime's built-in error types (``agentmonad.MergeConflict`` …)."""
        return self.path.startswith(RUNTIME_MODULE + ".")

    def __str__(self) -> str:
        return self.spelling


@dataclass(frozen=True, slots=True)
class Union:
    """``A | B | …``: at least two members, flattened, deduplicated, in a stable order.

    Build unions with :func:`union`, which normalises; do not call this directly.
    """

    members: tuple[Type, ...]

    def __str__(self) -> str:
        return " | ".join(str(m) for m in self.members)


Type: TypeAlias = Builtin | Generic | ClassRef | Union

ANY = Builtin("Any")
NEVER = Builtin("Never")
NONE = Builtin("None")
STR = Builtin("str")


def runtime_error(name: str) -> ClassRef:
    """The ClassRef of a built-in error type such as ``MergeConflict``."""
    return ClassRef(f"{RUNTIME_MODULE}.{name}", name)


MERGE_CONFLICT = runtime_error("MergeConflict")
TOOL_FAILED = runtime_error("ToolFailed")
TOOL_UNAVAILABLE = runtime_error("ToolUnavailable")


def _order(t: Type) -> tuple[int, str]:
    rank = {Builtin: 0, Generic: 1, ClassRef: 2, Union: 3}[type(t)]
    return rank, t.path if isinstance(t, ClassRef) else str(t)


def union(members: list[Type] | tuple[Type, ...]) -> Type:
    """The normalised union of ``members``: nested unions flattened, duplicates and
    ``Never`` dropped, ``Any`` absorbing, one member returned as itself."""
    flat: list[Type] = []
    for member in members:
        flat.extend(member.members if isinstance(member, Union) else (member,))
    if any(m == ANY for m in flat):
        return ANY
    unique = sorted({m for m in flat if m != NEVER}, key=_order)
    if not unique:
        return NEVER
    if len(unique) == 1:
        return unique[0]
    return Union(tuple(unique))


ErrorSet: TypeAlias = frozenset[Type]


def sorted_errors(errors: ErrorSet) -> tuple[Type, ...]:
    """An error set in a stable order (for messages and generated code)."""
    return tuple(sorted(errors, key=_order))


def render_errors(errors: ErrorSet) -> str:
    """An error set in `.mce` syntax: ``LLMError | ToolError``, or ``Never`` when empty."""
    ordered = sorted_errors(errors)
    return " | ".join(str(e) for e in ordered) if ordered else "Never"
