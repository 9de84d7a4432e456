"""Merging the states of parallel branches (docs/language.md §6).

The default merge is three-way and by field: each branch's state is compared
with the base state the group started from. A field changed by one branch takes
that branch's value (its reducer, if any, is not consulted); a field changed by
several branches to different values is a ``MergeConflict`` unless the field
carries a reducer in its ``Annotated`` metadata (``Append``, ``Sum``, or your
own ``Reducer``), which then combines them. A state that is not a
dataclass or pydantic model is one field, named ``"<state>"``.

>>> from dataclasses import dataclass
>>> from typing import Annotated
>>> @dataclass(frozen=True)
... class St:
...     log: Annotated[tuple[str, ...], Append] = ()
...     calls: Annotated[int, Sum] = 0
...     answer: str = ""
>>> merge_states(St(), [St(log=("a",), calls=1), St(log=("b",), calls=2, answer="x")])
St(log=('a', 'b'), calls=3, answer='x')
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, TypeVar

from .errors import MergeConflict

__all__ = ["Merge", "Reducer", "Append", "Sum", "merge_states", "STATE_FIELD"]

_S = TypeVar("_S")

Merge: TypeAlias = Callable[[_S, Sequence[_S]], _S]
"""``Merge[S]``: ``f(base, branches) -> S``; raise ``MergeConflict`` to fail."""

STATE_FIELD = "<state>"
"""The field name reported for a state that is not a dataclass or model."""


class Reducer:
    """Combines a field's branch values; subclass it for a custom reducer.

    ``reduce`` gets the field name, the base value, the branch values and the
    branch states (for ``MergeConflict``), all in branch order. It is called
    only when two or more branches changed the field: a field changed by one
    branch takes that branch's value without it.
    """

    def reduce(
        self, field: str, base: Any, values: Sequence[Any], states: Sequence[Any]
    ) -> Any:
        raise NotImplementedError


class Append(Reducer):
    """Each branch's sequence must extend the base; the merged one is the base
    followed by every branch's added suffix, in branch order.

    >>> Append().reduce("log", ["x"], [["x", "a"], ["x"], ["x", "b", "c"]], [1, 2, 3])
    ['x', 'a', 'b', 'c']
    """

    def reduce(
        self, field: str, base: Any, values: Sequence[Any], states: Sequence[Any]
    ) -> Any:
        n = len(base)
        suffixes = []
        for v in values:
            if len(v) < n or v[:n] != base:
                # a branch rewrote history instead of appending to it
                raise MergeConflict(field, values, states)
            if len(v) > n:
                suffixes.append(v[n:])
        if not suffixes:
            return base
        # One concatenation, not one per branch: ``each`` over 10,000 logging
        # branches would otherwise copy the growing log 10,000 times (O(n²)).
        if type(base) is tuple:
            return base + tuple(itertools.chain.from_iterable(suffixes))
        if type(base) is list:
            return base + list(itertools.chain.from_iterable(suffixes))
        if type(base) is str:
            return base + "".join(suffixes)
        merged = base
        for suffix in suffixes:
            merged = merged + suffix
        return merged


class Sum(Reducer):
    """The base plus each branch's delta (exact for ints).

    >>> Sum().reduce("calls", 10, [11, 10, 13], [1, 2, 3])
    14
    """

    def reduce(
        self, field: str, base: Any, values: Sequence[Any], states: Sequence[Any]
    ) -> Any:
        merged = base
        for v in values:
            merged = merged + (v - base)
        return merged


def _reducer_of(metadata: Sequence[object]) -> Reducer | None:
    for m in metadata:
        if isinstance(m, Reducer):
            return m
        if isinstance(m, type) and issubclass(m, Reducer):
            return m()
    return None


_Plan: TypeAlias = "tuple[str, tuple[tuple[str, Reducer | None], ...]]"
_plans: dict[type, _Plan] = {}


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception:
        pass
    # Some annotation cannot be resolved (a name only imported under
    # TYPE_CHECKING, a class local to a function, …): resolve the fields one by
    # one and keep what resolves; unresolved ones simply have no reducer.
    hints: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = sys.modules.get(getattr(klass, "__module__", ""), None)
        namespace = dict(vars(typing))
        namespace.update(vars(module) if module is not None else {})
        for name, hint in getattr(klass, "__annotations__", {}).items():
            if isinstance(hint, str):
                try:
                    hint = eval(hint, namespace)  # noqa: S307 - the class's own annotation
                except Exception:
                    pass
            hints[name] = hint
    return hints


def _metadata(hint: Any) -> tuple[object, ...]:
    return tuple(getattr(hint, "__metadata__", ()))


def _plan(cls: type) -> _Plan:
    """How to merge a state class: its kind and its fields with their reducers."""
    plan = _plans.get(cls)
    if plan is not None:
        return plan
    if dataclasses.is_dataclass(cls):
        hints = _hints(cls)
        fields = tuple(
            (f.name, _reducer_of(_metadata(hints.get(f.name, f.type))))
            for f in dataclasses.fields(cls)
            if f.init  # init=False fields are derived; replace() recomputes them
        )
        plan = ("dataclass", fields)
    elif hasattr(cls, "model_fields") and hasattr(cls, "model_copy"):
        # pydantic (duck-typed: pydantic is never imported here). pydantic moves
        # Annotated metadata into FieldInfo.metadata, so look there too.
        hints = _hints(cls)
        model_fields: dict[str, Any] = dict(getattr(cls, "model_fields"))
        fields = tuple(
            (
                name,
                _reducer_of(
                    _metadata(hints.get(name)) + tuple(getattr(info, "metadata", ()))
                ),
            )
            for name, info in model_fields.items()
        )
        plan = ("model", fields)
    else:
        plan = ("value", ((STATE_FIELD, None),))
    _plans[cls] = plan
    return plan


def _changed(value: object, base: object) -> bool:
    return not (value is base or value == base)


def _merge_field(
    field: str,
    base: Any,
    values: Sequence[Any],
    states: Sequence[Any],
    reducer: Reducer | None,
) -> Any:
    changed = [v for v in values if _changed(v, base)]
    if not changed:
        return base
    if len(changed) == 1:
        # docs/language.md §6: a field changed by exactly one branch takes that
        # branch's value. The reducer is for combining several changes; asking
        # it about one would let it object to a change nobody competes with
        # (``Append`` to a branch that replaced the log), which the checker
        # does not expect from a group with a single stateful branch.
        return changed[0]
    if reducer is not None:
        return reducer.reduce(field, base, values, states)
    first = changed[0]
    for v in changed[1:]:
        if _changed(v, first):
            raise MergeConflict(field, values, states)
    return first


def merge_states(base: _S, branches: Sequence[_S]) -> _S:
    """The default merge: three-way, by field; raises ``MergeConflict``.

    Returns ``base`` itself when no branch changed anything.

    >>> merge_states(1, [1, 2, 1])
    2
    >>> merge_states(1, [2, 3])
    Traceback (most recent call last):
    ...
    agentmonad.errors.MergeConflict: par branches changed field '<state>' to different values: [2, 3]
    """
    kind, fields = _plan(type(base))
    if kind == "value":
        result: _S = _merge_field(STATE_FIELD, base, branches, branches, None)
        return result
    updates: dict[str, Any] = {}
    for name, reducer in fields:
        b = getattr(base, name)
        merged = _merge_field(
            name, b, [getattr(s, name) for s in branches], branches, reducer
        )
        if merged is not b:
            updates[name] = merged
    if not updates:
        return base
    if kind == "dataclass":
        new: _S = dataclasses.replace(base, **updates)  # type: ignore[type-var]
        return new
    copied: _S = getattr(base, "model_copy")(update=updates)
    return copied
