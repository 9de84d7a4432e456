"""Spec types (docs/language.md §4): their representation and their `.mce` spelling.

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

import contextlib
import contextvars
import enum
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, assert_never

BuiltinName = Literal["str", "int", "float", "bool", "bytes", "None", "Any", "Never"]
GenericName = Literal["list", "dict", "set", "tuple"]

BUILTIN_NAMES: tuple[BuiltinName, ...] = ("str", "int", "float", "bool", "bytes", "None", "Any", "Never")
#: Generic heads and their arity (None: any number of arguments, at least one).
GENERIC_ARITY: dict[GenericName, int | None] = {"list": 1, "set": 1, "dict": 2, "tuple": None}

#: The runtime module that provides the built-in error types.
RUNTIME_MODULE = "agentmonad"
#: Error types every spec may use without importing or declaring them.
BUILTIN_ERRORS: tuple[str, ...] = (
    "MergeConflict",
    "ToolFailed",
    "ToolUnavailable",
    "LoopExhausted",
    "Timeout",
    "LLMFailed",
    "LLMUnavailable",
    "BudgetExceeded",
    "PlanRejected",
    "NoOneToAsk",
    "NoAnswer",
    "BadAnswer",
)
#: The built-in errors of v2, which a spec may shadow with its own type of the same name
#: (W003; v1 specs that already had one keep it).
SHADOWABLE_ERRORS: frozenset[str] = frozenset(
    {"LoopExhausted", "Timeout", "LLMFailed", "LLMUnavailable", "BudgetExceeded", "PlanRejected", "NoOneToAsk", "NoAnswer", "BadAnswer"}
)


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
class ClassInfo:
    """What is known about an imported class, read from its source (:mod:`mcec.check.pyindex`).

    ``ancestors`` are the canonical dotted paths of the class and of every class
    it derives from, as far as they could be read (builtins as ``builtins.X``);
    ``complete`` says the set is the whole of them. ``project`` is true for a
    class of the project's own source (not the standard library or an installed
    package): no installed code derives from it. ``open`` is true for a
    ``Protocol`` or an ABC, of which a class may count as a subclass without
    deriving from it; ``structural`` for a ``TypedDict`` or ``Protocol``, which
    ``isinstance`` cannot test.
    """

    ancestors: frozenset[str]
    complete: bool
    project: bool
    open: bool
    structural: bool


def builtin_info(name: str) -> ClassInfo | None:
    """The :class:`ClassInfo` of a Python builtin class (``str``, ``ValueError`` …), from this
    interpreter's own classes; None for a name that is not a builtin class."""
    import builtins

    cls = getattr(builtins, name, None)
    if not isinstance(cls, type):
        return None
    ancestors = frozenset(f"builtins.{c.__name__}" for c in cls.__mro__ if c.__module__ == "builtins")
    return ClassInfo(ancestors, True, False, False, False)


@dataclass(frozen=True, slots=True)
class ClassRef:
    """An imported Python class, identified by its resolved dotted path.

    ``ClassRef("examples.research.impl.ToolCall", "ToolCall")`` and
    ``ClassRef("examples.research.impl.ToolCall", "impl.ToolCall")`` are equal.
    ``info`` is what the checker could read about the class (None: nothing),
    which lets :func:`flows` answer yes or no between classes.
    """

    path: str
    spelling: str = field(compare=False)
    info: ClassInfo | None = field(default=None, compare=False, repr=False)

    @property
    def is_runtime(self) -> bool:
        """True for the runtime's built-in error types (``agentmonad.MergeConflict`` …)."""
        return self.path.startswith(RUNTIME_MODULE + ".")

    def __str__(self) -> str:
        return self.spelling


@dataclass(frozen=True, slots=True)
class Lit:
    """One member of a ``Literal[...]`` type (v2): a string or int value.

    ``Literal["a", "b"]`` is the union of ``Lit("a")`` and ``Lit("b")``; ``Lit("a") ≤ str``.
    Booleans are not literals of the language, so ``Lit(1)`` never meets ``True``.
    """

    value: str | int

    def __str__(self) -> str:
        return f"Literal[{literal_text(self.value)}]"

    @property
    def base(self) -> Builtin:
        """The builtin the value belongs to: ``str`` or ``int``."""
        return STR if isinstance(self.value, str) else Builtin("int")


def literal_text(value: str | int) -> str:
    """A literal as `.mce` writes it: a JSON string or a decimal int."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


@dataclass(frozen=True, slots=True)
class Union:
    """``A | B | …``: at least two members, flattened, deduplicated, in a stable order.

    Build unions with :func:`union`, which normalises; do not call this directly.
    """

    members: tuple[Type, ...]

    def __str__(self) -> str:
        # literals print together, as they are written: `Literal["a", "b"] | None`
        literals = [m.value for m in self.members if isinstance(m, Lit)]
        parts = [f"Literal[{', '.join(literal_text(v) for v in literals)}]"] if literals else []
        parts += [str(m) for m in self.members if not isinstance(m, Lit)]
        return " | ".join(parts)


Type: TypeAlias = Builtin | Generic | ClassRef | Lit | Union

ANY = Builtin("Any")
NEVER = Builtin("Never")
NONE = Builtin("None")
STR = Builtin("str")


def runtime_error(name: str) -> ClassRef:
    """The ClassRef of a built-in error type such as ``MergeConflict`` (an ``Exception`` subclass
    of the runtime, which derives from no user class)."""
    path = f"{RUNTIME_MODULE}.{name}"
    exception = builtin_info("Exception")
    assert exception is not None
    defined = {
        path,
        f"{RUNTIME_MODULE}.errors.{name}",
        f"{RUNTIME_MODULE}.llm.errors.{name}",
        f"{RUNTIME_MODULE}.plans.{name}",
        f"{RUNTIME_MODULE}.human.{name}",
    }
    info = ClassInfo(frozenset(defined) | exception.ancestors, True, False, False, False)
    return ClassRef(path, name, info)


MERGE_CONFLICT = runtime_error("MergeConflict")
TOOL_FAILED = runtime_error("ToolFailed")
TOOL_UNAVAILABLE = runtime_error("ToolUnavailable")
LOOP_EXHAUSTED = runtime_error("LoopExhausted")
TIMEOUT = runtime_error("Timeout")
LLM_FAILED = runtime_error("LLMFailed")
LLM_UNAVAILABLE = runtime_error("LLMUnavailable")
BUDGET_EXCEEDED = runtime_error("BudgetExceeded")
#: What every ``ask`` step may fail with (docs/language.md §15).
ASK_ERRORS = frozenset({runtime_error("NoOneToAsk"), runtime_error("NoAnswer"), runtime_error("BadAnswer")})
PLAN_REJECTED = runtime_error("PlanRejected")
#: What ``spawn`` gives its planner (§12): the runtime's ``PlanRequest``, a plain class.
PLAN_REQUEST = ClassRef(
    f"{RUNTIME_MODULE}.PlanRequest",
    "PlanRequest",
    ClassInfo(
        frozenset({f"{RUNTIME_MODULE}.PlanRequest", f"{RUNTIME_MODULE}.plans.PlanRequest", "builtins.object"}),
        True,
        False,
        False,
        False,
    ),
)
BOOL = Builtin("bool")


def _order(t: Type) -> tuple[int, str]:
    rank = {Builtin: 0, Lit: 1, Generic: 2, ClassRef: 3, Union: 4}[type(t)]
    if isinstance(t, Lit):
        return rank, f"{type(t.value).__name__}:{t.value}"
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
    """The three answers of ``X ≤ Y`` (docs/language.md §4).

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

    An UNKNOWN answer is counted in the :class:`UnknownRelations` of the check
    in progress (see :func:`counting_unknowns`).

    The rules, tried in this order (docs/language.md §4):

    1. Equal types: YES (imported classes are equal when their canonical paths are).
    2. ``Never ≤ Y``: YES, for every Y (Never has no values).
    3. ``Any`` on either side: YES.
    4. ``X1 | … | Xn ≤ Y``: every ``Xi ≤ Y`` (NO if one is NO, else UNKNOWN if
       one is UNKNOWN, else YES).
    5. ``X ≤ Y1 | … | Yn``: ``X ≤`` some ``Yi`` (YES if one is YES, else UNKNOWN
       if one is UNKNOWN, else NO).
    6. ``X ≤ Never``: NO (X is not Never, by rules 1–2). Literals (v2): a literal
       flows where its builtin (``str`` or ``int``) does, and nothing but the same
       literal flows into one.
    7. Two builtins: YES only for ``bool ≤ int``, ``bool ≤ float`` and
       ``int ≤ float`` (Python's subclass and mypy's numeric promotion); otherwise NO.
    8. An imported class on either side (:func:`_class_flows`), decided by what
       is known of the classes (:class:`ClassInfo`, read from their source):
       YES when Y's path is among X's ancestors; NO when X's ancestry is known
       well enough to rule Y out and Y is not open (a ``Protocol`` or an ABC) nor
       structural (a ``TypedDict``, which another of the same keys satisfies);
       UNKNOWN otherwise — mypy, which sees the real classes, settles those.
    9. ``tuple[X1, …, Xn] ≤ tuple[Y1, …, Ym]``: NO if n ≠ m, else every ``Xi ≤ Yi``.
    10. ``list``, ``set``, ``dict`` are invariant: every argument pair must be the
        same type (:func:`same`: ``≤`` both ways).
    11. Anything else (a builtin against a generic, two different generic heads): NO.
    """
    answer = _flows(actual, expected)
    if answer is Compat.UNKNOWN:
        counter = _UNKNOWNS.get()
        if counter is not None:
            counter.count += 1
    return answer


def _flows(actual: Type, expected: Type) -> Compat:
    """:func:`flows` without the counting (recursive calls inside one question count once)."""
    # Rules 1-3.
    if actual is expected or actual == expected or actual == NEVER or actual == ANY or expected == ANY:
        return Compat.YES
    # Rule 4 before rule 5, so that X1|X2 ≤ Y1|Y2 asks each Xi against the whole union.
    if isinstance(actual, Union):
        return _all([_flows(member, expected) for member in actual.members])
    if isinstance(expected, Union):
        return _any([_flows(actual, member) for member in expected.members])
    # Rule 6.
    if expected == NEVER:
        return Compat.NO
    # Rule 6b: literals (distinct literals by rule 1 are not equal).
    if isinstance(actual, Lit):
        return Compat.NO if isinstance(expected, Lit) else _flows(actual.base, expected)
    if isinstance(expected, Lit):
        return Compat.NO
    # Rule 8.
    if isinstance(actual, ClassRef) or isinstance(expected, ClassRef):
        return _class_flows(actual, expected)
    # Rule 7.
    if isinstance(actual, Builtin) and isinstance(expected, Builtin):
        return Compat.YES if (actual.name, expected.name) in _BUILTIN_WIDENINGS else Compat.NO
    # Rules 9-10.
    if isinstance(actual, Generic) and isinstance(expected, Generic):
        if actual.head != expected.head or len(actual.args) != len(expected.args):
            return Compat.NO
        if actual.head == "tuple":
            return _all([_flows(a, e) for a, e in zip(actual.args, expected.args)])
        return _all([_same(a, e) for a, e in zip(actual.args, expected.args)])
    # Rule 11.
    return Compat.NO


#: The Python class of each builtin spec type, for comparing them with imported classes.
_BUILTIN_CLASS = {"str": "str", "int": "int", "float": "float", "bool": "bool", "bytes": "bytes", "None": "NoneType"}


def _ancestry(t: Type) -> ClassInfo | None:
    """What ``t`` derives from, when it is a class whose ancestry is known."""
    match t:
        case ClassRef():
            return t.info
        case Builtin(name=name) if name in _BUILTIN_CLASS:
            if name == "None":
                return ClassInfo(frozenset({"builtins.NoneType", "builtins.object"}), True, False, False, False)
            return builtin_info(_BUILTIN_CLASS[name])
        case Generic(head=head):
            return builtin_info(head)
        case _:
            return None


def _class_path(t: Type) -> str | None:
    """The class a value of ``t`` must be an instance of, as a canonical path."""
    match t:
        case ClassRef():
            return t.path
        case Builtin(name=name) if name in _BUILTIN_CLASS:
            return f"builtins.{_BUILTIN_CLASS[name]}"
        case Generic(head=head):
            return f"builtins.{head}"
        case _:
            return None


def _class_flows(actual: Type, expected: Type) -> Compat:
    """Rule 8 of :func:`flows`: at least one side is an imported class.

    The runtime's built-in errors are classes like any other here: their
    ancestry is known (``Exception``), and they derive from no user class.
    """
    known = _ancestry(actual)
    target = _class_path(expected)
    if known is None or target is None:
        return Compat.UNKNOWN
    if known.ancestors & {target}:
        # A generic subclass (`class Names(list[str])`) is a list, but of what is mypy's call.
        return Compat.UNKNOWN if isinstance(expected, Generic) else Compat.YES
    expected_info = _ancestry(expected)
    actual_is_runtime = isinstance(actual, ClassRef) and actual.is_runtime
    if expected_info is None and not actual_is_runtime:
        return Compat.UNKNOWN  # nothing known of the expected class: it may be a Protocol
    if expected_info is not None and (expected_info.open or expected_info.structural):
        # A Protocol or an ABC: membership is not by derivation; a TypedDict: another one of the
        # same keys is one (mypy compares TypedDicts by their keys)
        return Compat.UNKNOWN
    if known.complete:
        return Compat.NO
    # Part of actual's ancestry could not be read: an installed class (pydantic's, say) that
    # might derive from anything but the project's own classes.
    if isinstance(expected, ClassRef) and expected.info is not None and expected.info.project:
        return Compat.NO
    return Compat.UNKNOWN


def same(first: Type, second: Type) -> Compat:
    """Are ``first`` and ``second`` the same type: ``first ≤ second`` and ``second ≤ first``?

    Used for invariant generic arguments and for docs/language.md's "the same type"
    (the inputs of ``par`` branches).
    """
    answer = _same(first, second)
    if answer is Compat.UNKNOWN:
        counter = _UNKNOWNS.get()
        if counter is not None:
            counter.count += 1
    return answer


def _same(first: Type, second: Type) -> Compat:
    if first is second:
        return Compat.YES
    return _all((_flows(first, second), _flows(second, first)))


@dataclass(slots=True)
class UnknownRelations:
    """How many questions ``X ≤ Y`` of one check were answered UNKNOWN: left to mypy."""

    count: int = 0


_UNKNOWNS: contextvars.ContextVar[UnknownRelations | None] = contextvars.ContextVar("mcec_unknown_relations", default=None)


def leave_to_mypy(count: int = 1) -> None:
    """Count ``count`` type questions the checker cannot ask at all (an annotation it cannot read)
    among the unknowns of the check in progress: mypy settles them."""
    counter = _UNKNOWNS.get()
    if counter is not None:
        counter.count += count


@contextlib.contextmanager
def counting_unknowns() -> Iterator[UnknownRelations]:
    """Count the UNKNOWN answers of :func:`flows` and :func:`same` inside the block."""
    counter = UnknownRelations()
    token = _UNKNOWNS.set(counter)
    try:
        yield counter
    finally:
        _UNKNOWNS.reset(token)


def error_union(errors: ErrorSet) -> Type:
    """An error set as one type (``Never`` when empty), for asking :func:`flows` about it."""
    return union(tuple(errors))


# ---------------------------------------------------------------- v2: testing values at run time


def members(t: Type) -> tuple[Type, ...]:
    """The members of a union, or ``(t,)``."""
    return t.members if isinstance(t, Union) else (t,)


def testable(t: Type) -> bool:
    """Can a run-time test tell whether a value is of type ``t`` (a ``loop`` input, a pattern)?

    Classes ``isinstance`` can test, builtins but ``Any``/``Never``, ``None``,
    literals, and unions of these; not generics (``isinstance(x, list[str])``
    fails), ``Any``, ``TypedDict`` or ``Protocol`` classes.
    """
    match t:
        case Builtin(name=name):
            return name not in ("Any", "Never")
        case Lit():
            return True
        case ClassRef():
            return t.info is None or not t.info.structural
        case Union():
            return all(testable(m) for m in t.members)
        case Generic():
            return False
        case _:
            assert_never(t)


def narrow_to_class(t: Type, pattern: Type) -> tuple[Type, Type]:
    """``(narrowed, remainder)`` of ``t`` under ``isinstance(value, pattern)`` (``is None`` for None):
    what the matching values may be, and what the others may be."""
    if t == ANY:
        return pattern, ANY
    narrowed: list[Type] = []
    remainder: list[Type] = []
    for member in members(t):
        inside = _flows(member, pattern)
        if inside is Compat.YES:
            narrowed.append(member)
            continue
        remainder.append(member)
        if _flows(pattern, member) is not Compat.NO:
            narrowed.append(pattern)  # a subclass of the member (or maybe one)
        elif inside is Compat.UNKNOWN:
            narrowed.append(member)
    return union(narrowed), union(remainder)


def widen_literals(t: Type) -> Type:
    """``t`` with each literal member replaced by its base (``Literal[0] | str`` → ``int | str``):
    the type of the values a literal type's context may go on to produce."""
    return union([m.base if isinstance(m, Lit) else m for m in members(t)])


def narrow_to_literal(t: Type, value: str | int) -> tuple[Type, Type]:
    """``(narrowed, remainder)`` of ``t`` under "equal to ``value``, of the same type"."""
    literal = Lit(value)
    if t == ANY:
        return literal, ANY
    narrowed: list[Type] = []
    remainder: list[Type] = []
    for member in members(t):
        if member == literal:
            narrowed.append(literal)
        elif isinstance(member, Lit):
            remainder.append(member)
        else:
            remainder.append(member)
            if _flows(literal, member) is not Compat.NO:
                narrowed.append(literal)
    return union(narrowed), union(remainder)
