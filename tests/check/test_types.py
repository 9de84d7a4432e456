"""Unit tests of the type representation: ``union`` normalisation and the ``≤`` relation ``flows``."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from mcec.check.types import (
    ANY,
    MERGE_CONFLICT,
    NEVER,
    NONE,
    STR,
    TOOL_FAILED,
    TOOL_UNAVAILABLE,
    Builtin,
    ClassRef,
    Compat,
    Generic,
    Type,
    Union,
    flows,
    same,
    union,
)

YES, NO, UNKNOWN = Compat.YES, Compat.NO, Compat.UNKNOWN
INT, FLOAT, BOOL, BYTES = Builtin("int"), Builtin("float"), Builtin("bool"), Builtin("bytes")
A = ClassRef("app.impl.A", "A")
A_DOTTED = ClassRef("app.impl.A", "impl.A")
B = ClassRef("app.impl.B", "B")


def lst(t: Type) -> Generic:
    return Generic("list", (t,))


def tup(*ts: Type) -> Generic:
    return Generic("tuple", ts)


def test_union_flattens_dedups_and_drops_never() -> None:
    assert union([INT, union([STR, INT]), NEVER]) == Union((INT, STR))
    assert union([INT]) == INT
    assert union([]) == NEVER
    assert union([NEVER, NEVER]) == NEVER
    assert union([A, ANY, B]) == ANY
    assert union([A, A_DOTTED]) == A
    assert union([B, A]) == union([A, B])


@pytest.mark.parametrize(
    ("actual", "expected", "answer"),
    [
        # 1 equality (paths, not spellings)
        (STR, STR, YES),
        (A, A_DOTTED, YES),
        (lst(A), lst(A_DOTTED), YES),
        # 2 Never flows anywhere
        (NEVER, STR, YES),
        (NEVER, A, YES),
        # 3 Any both ways
        (ANY, STR, YES),
        (A, ANY, YES),
        (lst(INT), lst(ANY), YES),
        # 4 union on the left: every member
        (union([INT, STR]), union([STR, INT, BYTES]), YES),
        (union([INT, STR]), INT, NO),
        (union([A, INT]), A, UNKNOWN),
        # 5 union on the right: some member
        (INT, union([STR, INT]), YES),
        (INT, union([STR, BYTES]), NO),
        (A, union([B, STR]), UNKNOWN),
        # 6 nothing but Never flows into Never
        (STR, NEVER, NO),
        (A, NEVER, NO),
        # 7 builtins
        (INT, STR, NO),
        (BOOL, INT, YES),
        (INT, FLOAT, YES),
        (BOOL, FLOAT, YES),
        (FLOAT, INT, NO),
        (NONE, STR, NO),
        # 8 imported classes
        (A, B, UNKNOWN),
        (MERGE_CONFLICT, TOOL_FAILED, NO),
        (MERGE_CONFLICT, A, NO),
        (A, TOOL_FAILED, UNKNOWN),
        # 9 an imported class and a builtin or generic
        (A, STR, UNKNOWN),
        (STR, A, UNKNOWN),
        (lst(STR), A, UNKNOWN),
        (TOOL_UNAVAILABLE, STR, NO),
        (STR, TOOL_UNAVAILABLE, NO),
        # 10 tuples element-wise (covariant), same length
        (tup(BOOL, STR), tup(INT, STR), YES),
        (tup(INT, STR), tup(INT, INT), NO),
        (tup(INT), tup(INT, INT), NO),
        (tup(A), tup(B), UNKNOWN),
        # 11 list/set/dict invariant
        (lst(BOOL), lst(INT), NO),
        (lst(A), lst(B), UNKNOWN),
        (Generic("dict", (STR, INT)), Generic("dict", (STR, INT)), YES),
        (Generic("dict", (STR, INT)), Generic("dict", (STR, FLOAT)), NO),
        (Generic("set", (INT,)), lst(INT), NO),
        # 12 otherwise no
        (STR, lst(STR), NO),
        (lst(STR), STR, NO),
    ],
)
def test_flows(actual: Type, expected: Type, answer: Compat) -> None:
    assert flows(actual, expected) is answer


def test_same_is_both_ways() -> None:
    assert same(INT, INT) is YES
    assert same(BOOL, INT) is NO
    assert same(A, B) is UNKNOWN
    assert same(ANY, A) is YES


BUILTINS = st.sampled_from([STR, INT, FLOAT, BOOL, BYTES, NONE, ANY, NEVER])
CLASSES = st.sampled_from([A, B, MERGE_CONFLICT, TOOL_FAILED])
TYPES: st.SearchStrategy[Type] = st.recursive(
    BUILTINS | CLASSES,
    lambda inner: st.one_of(
        st.builds(lst, inner),
        st.builds(lambda xs: Generic("tuple", tuple(xs)), st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: union(xs), st.lists(inner, min_size=2, max_size=3)),
    ),
    max_leaves=8,
)


@given(TYPES)
def test_reflexive(t: Type) -> None:
    assert flows(t, t) is YES


@given(TYPES, TYPES)
def test_union_members_flow_into_union(x: Type, y: Type) -> None:
    assert flows(x, union([x, y])) is YES
    assert flows(union([x, y]), union([y, x])) is YES


@given(TYPES, TYPES, TYPES)
def test_no_transitivity_violation_among_definite_answers(x: Type, y: Type, z: Type) -> None:
    # If x ≤ y and y ≤ z are definite yes, x ≤ z cannot be a definite no. `Any` is
    # exempt: it is gradual (str ≤ Any ≤ int), as in mypy.
    assume("Any" not in str(y))
    if flows(x, y) is YES and flows(y, z) is YES:
        assert flows(x, z) is not NO


@given(TYPES)
def test_never_and_any_are_bottom_and_top(t: Type) -> None:
    assert flows(NEVER, t) is YES
    assert flows(t, ANY) is YES
