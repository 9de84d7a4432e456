"""Spec types (LANGUAGE.md §4): their representation and their `.mce` spelling.

Types are immutable values. ``str(t)`` prints ``t`` in `.mce` syntax, so
diagnostics speak the user's notation. Imported classes are compared by their
resolved Python path (``ClassRef.path``); ``spelling`` only remembers how the
spec wrote the name, for messages and for the generated code's annotations.

The compatibility relation ``≤`` lives beside the representation in this module
(see :func:`flows`); every phase that asks "may X flow where Y is expected" uses
that one function, and "the same type" (``par`` inputs) is :func:`same`, built
on it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
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


# ---------------------------------------------------------------- compatibility


class Compat(enum.Enum):
    """The three answers of ``X ≤ Y`` (LANGUAGE.md §4).

    Only :attr:`NO` is ever reported; :attr:`UNKNOWN` is left to mypy, which
    sees the real classes when it checks the generated code.
    """

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


def _all(answers: Iterable[Compat]) -> Compat:
    """Three-valued conjunction: NO wins, then UNKNOWN, else YES (empty: YES)."""
    unknown = False
    for answer in answers:
        if answer is Compat.NO:
            return Compat.NO
        if answer is Compat.UNKNOWN:
            unknown = True
    return Compat.UNKNOWN if unknown else Compat.YES


def _any(answers: Iterable[Compat]) -> Compat:
    """Three-valued disjunction: YES wins, then UNKNOWN, else NO (empty: NO)."""
    unknown = False
    for answer in answers:
        if answer is Compat.YES:
            return Compat.YES
        if answer is Compat.UNKNOWN:
            unknown = True
    return Compat.UNKNOWN if unknown else Compat.NO


#: Builtin pairs ``(X, Y)`` with ``X ≤ Y`` besides equality: ``bool`` is a subclass
#: of ``int``, and mypy promotes ``int`` to ``float`` (rule 7 of :func:`flows`).
_BUILTIN_WIDENINGS: frozenset[tuple[str, str]] = frozenset(
    {("bool", "int"), ("bool", "float"), ("int", "float")}
)


def flows(actual: Type, expected: Type) -> Compat:
    """May a value of type ``actual`` flow where ``expected`` is expected (``actual ≤ expected``)?

    The rules, tried in this order (LANGUAGE.md §4):

    1. Equal types: YES (imported classes are equal when their resolved paths are).
    2. ``Never ≤ Y``: YES, for every Y (Never has no values).
    3. ``Any`` on either side: YES.
    4. ``X1 | … | Xn ≤ Y``: every ``Xi ≤ Y`` (NO if one is NO, else UNKNOWN if
       one is UNKNOWN, else YES).
    5. ``X ≤ Y1 | … | Yn``: ``X ≤`` some ``Yi`` (YES if one is YES, else UNKNOWN
       if one is UNKNOWN, else NO).
    6. ``X ≤ Never``: NO (X is not Never, by rules 1–2).
    7. Two builtins: YES only for ``bool ≤ int``, ``bool ≤ float`` and
       ``int ≤ float`` (Python's subclass and mypy's numeric promotion); otherwise NO.
    8. Two different imported classes: UNKNOWN — one may subclass the other, and
       mcec does not import user code. Except for the runtime's built-in errors
       (``MergeConflict``, ``ToolFailed``, ``ToolUnavailable``), which mcec knows:
       two different built-in errors are unrelated (NO), and a built-in error is
       never a subclass of a user's class (NO); a user's class may subclass a
       built-in error (UNKNOWN).
    9. An imported class and a builtin or generic type, either way round:
       UNKNOWN (the class may subclass ``str``, or be a protocol ``list`` meets);
       NO if the class is a built-in error.
    10. ``tuple[X1, …, Xn] ≤ tuple[Y1, …, Ym]``: NO if n ≠ m, else every ``Xi ≤ Yi``.
    11. ``list``, ``set``, ``dict`` are invariant: every argument pair must be the
        same type (:func:`same`: ``≤`` both ways).
    12. Anything else (a builtin against a generic, two different generic heads): NO.

    Results are cached: types are immutable and hashable.
    """
    if actual is expected:
        return Compat.YES
    return _flows(actual, expected)


# Recursion here (and in the checker) goes through list comprehensions, never
# generator expressions: CPython walks the chain of suspended generators when an
# exception (StopIteration, GeneratorExit) is raised inside one, so recursing
# through generators costs time proportional to the depth at every level.
@lru_cache(maxsize=1 << 16)
def _flows(actual: Type, expected: Type) -> Compat:
    # Rules 1-3.
    if actual == expected or actual == NEVER or actual == ANY or expected == ANY:
        return Compat.YES
    # Rule 4 before rule 5, so that X1|X2 ≤ Y1|Y2 asks each Xi against the whole union.
    if isinstance(actual, Union):
        return _all([flows(member, expected) for member in actual.members])
    if isinstance(expected, Union):
        return _any([flows(actual, member) for member in expected.members])
    # Rule 6.
    if expected == NEVER:
        return Compat.NO
    # Rules 8 and 9.
    if isinstance(actual, ClassRef) or isinstance(expected, ClassRef):
        return _class_flows(actual, expected)
    # Rule 7.
    if isinstance(actual, Builtin) and isinstance(expected, Builtin):
        return Compat.YES if (actual.name, expected.name) in _BUILTIN_WIDENINGS else Compat.NO
    # Rules 10-11.
    if isinstance(actual, Generic) and isinstance(expected, Generic):
        if actual.head != expected.head or len(actual.args) != len(expected.args):
            return Compat.NO
        if actual.head == "tuple":
            return _all([flows(a, e) for a, e in zip(actual.args, expected.args)])
        return _all([same(a, e) for a, e in zip(actual.args, expected.args)])
    # Rule 12.
    return Compat.NO


def _class_flows(actual: Type, expected: Type) -> Compat:
    """Rules 8 and 9 of :func:`flows`: at least one side is an imported class."""
    actual_runtime = isinstance(actual, ClassRef) and actual.is_runtime
    expected_runtime = isinstance(expected, ClassRef) and expected.is_runtime
    if actual_runtime:
        # The runtime never imports user code, so its classes subclass no user
        # class, no builtin but Exception, and not each other.
        return Compat.NO
    if expected_runtime and not isinstance(actual, ClassRef):
        return Compat.NO
    return Compat.UNKNOWN


def same(first: Type, second: Type) -> Compat:
    """Are ``first`` and ``second`` the same type: ``first ≤ second`` and ``second ≤ first``?

    Used for invariant generic arguments and for LANGUAGE.md's "the same type"
    (the inputs of ``par`` branches).
    """
    if first is second:
        return Compat.YES
    return _all((flows(first, second), flows(second, first)))


def error_union(errors: ErrorSet) -> Type:
    """An error set as one type (``Never`` when empty), for asking :func:`flows` about it."""
    return union(tuple(errors))
