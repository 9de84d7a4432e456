"""The default three-way by-field merge, reducers, conflicts, custom merges.

This module uses ``from __future__ import annotations`` on purpose: every state
class below has string annotations, so reducers are found only through
``typing.get_type_hints(S, include_extras=True)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from agentmonad import AgentMonad, Append, Err, MergeConflict, Ok, Reducer, Sum, merge_states


@dataclass(frozen=True)
class DC:
    log: Annotated[tuple[str, ...], Append] = ()
    total: Annotated[int, Sum] = 0
    answer: str = ""
    other: int = 0


class PM(BaseModel):
    model_config = ConfigDict(frozen=True)

    log: Annotated[list[str], Append] = []
    total: Annotated[int, Sum] = 0
    answer: str = ""
    other: int = 0


def test_append_collects_suffixes_in_branch_order() -> None:
    base = DC(log=("start",))
    branches = [DC(log=("start", "a1", "a2")), DC(log=("start",)), DC(log=("start", "c"))]
    assert merge_states(base, branches).log == ("start", "a1", "a2", "c")


def test_append_rejects_rewritten_history() -> None:
    # Two branches changed the log and one of them rewrote it: Append cannot combine them.
    with pytest.raises(MergeConflict) as info:
        merge_states(DC(log=("x",)), [DC(log=("y", "z")), DC(log=("x",)), DC(log=("x", "a"))])
    assert info.value.field == "log"
    # Alone, the rewrite is just that branch's value (docs/language.md §6).
    assert merge_states(DC(log=("x",)), [DC(log=("y", "z")), DC(log=("x",))]).log == ("y", "z")


def test_sum_adds_deltas() -> None:
    assert merge_states(DC(total=10), [DC(total=11), DC(total=10), DC(total=15)]).total == 16
    assert merge_states(DC(total=10), [DC(total=7), DC(total=12)]).total == 9


def test_disjoint_changes_merge() -> None:
    merged = merge_states(DC(), [DC(answer="yes"), DC(other=3), DC()])
    assert merged == DC(answer="yes", other=3)


def test_same_change_in_two_branches_is_no_conflict() -> None:
    assert merge_states(DC(), [DC(answer="yes"), DC(answer="yes")]).answer == "yes"


def test_real_conflict() -> None:
    a, b = DC(answer="a"), DC(answer="b")
    with pytest.raises(MergeConflict) as info:
        merge_states(DC(), [a, b])
    assert (info.value.field, info.value.values, info.value.states) == ("answer", ["a", "b"], [a, b])


def test_no_change_returns_the_base_itself() -> None:
    base = DC(log=("x",))
    assert merge_states(base, [DC(log=("x",)), base]) is base


def test_pydantic_models_merge() -> None:
    merged = merge_states(
        PM(log=["s"], total=1),
        [PM(log=["s", "a"], total=3), PM(log=["s", "b"], total=1, answer="ok")],
    )
    assert merged == PM(log=["s", "a", "b"], total=3, answer="ok")
    with pytest.raises(MergeConflict):
        merge_states(PM(), [PM(other=1), PM(other=2)])


def test_annotations_are_strings_here() -> None:
    assert isinstance(DC.__annotations__["log"], str)
    assert isinstance(PM.__annotations__["log"], str)


def test_non_dataclass_state_is_one_field() -> None:
    assert merge_states(None, [None, None]) is None
    assert merge_states(1, [1, 5, 1]) == 5
    with pytest.raises(MergeConflict) as info:
        merge_states(1, [2, 3])
    assert info.value.field == "<state>"


class Max(Reducer):
    def reduce(self, field: str, base: Any, values: Sequence[Any], states: Sequence[Any]) -> Any:
        return max(values)


@dataclass(frozen=True)
class Best:
    best: Annotated[int, Max()] = 0
    kind: Annotated[int, Max] = 0  # a Reducer class works as well as an instance


def test_custom_reducer() -> None:
    assert merge_states(Best(), [Best(3, 1), Best(7), Best(5, 2)]) == Best(7, 2)


# -- merge associativity (property) ---------------------------------------------

dcs = st.builds(
    DC,
    log=st.lists(st.sampled_from("ab"), max_size=2).map(lambda l: ("b0",) + tuple(l)),
    total=st.integers(-5, 5),
    answer=st.sampled_from(["", "x", "y"]),
    other=st.sampled_from([0, 1]),
)
BASE = DC(log=("b0",))


def merged_or_conflict(branches: list[DC]) -> DC | None:
    try:
        return merge_states(BASE, branches)
    except MergeConflict:
        return None


@settings(max_examples=200, deadline=None)
@given(dcs, dcs, dcs)
def test_merge_is_associative(a: DC, b: DC, c: DC) -> None:
    flat = merged_or_conflict([a, b, c])
    ab = merged_or_conflict([a, b])
    bc = merged_or_conflict([b, c])
    left = merged_or_conflict([ab, c]) if ab is not None else None
    right = merged_or_conflict([a, bc]) if bc is not None else None
    assert flat == left == right


# -- a field changed by one branch takes its value (property) ---------------------


class Veto(Reducer):
    """A reducer that refuses every combination: it must never be asked about a
    field that only one branch changed."""

    def reduce(self, field: str, base: Any, values: Sequence[Any], states: Sequence[Any]) -> Any:
        raise MergeConflict(field, values, states)


@dataclass(frozen=True)
class Fields:
    log: Annotated[tuple[str, ...], Append] = ("b0",)
    total: Annotated[int, Sum] = 0
    answer: str = ""
    veto: Annotated[int, Veto] = 0


FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    # any tuple: a branch may extend the log or replace it altogether
    "log": st.lists(st.sampled_from(["a", "b", "b0"]), max_size=3).map(tuple),
    "total": st.integers(-3, 3),
    "answer": st.sampled_from(["", "x", "y"]),
    "veto": st.integers(-2, 2),
}


@st.composite
def single_writer_groups(draw: st.DrawFn) -> tuple[Fields, list[Fields], dict[str, Any]]:
    """A base, branches in which each field is changed by at most one branch, and those changes."""
    base = Fields(
        log=draw(FIELD_VALUES["log"]),
        total=draw(FIELD_VALUES["total"]),
        answer=draw(FIELD_VALUES["answer"]),
        veto=draw(FIELD_VALUES["veto"]),
    )
    n = draw(st.integers(1, 5))
    changes: list[dict[str, Any]] = [{} for _ in range(n)]
    expected: dict[str, Any] = {}
    for name, values in FIELD_VALUES.items():
        owner = draw(st.integers(-1, n - 1))  # -1: no branch changes this field
        if owner >= 0:
            value = draw(values.filter(lambda v, old=getattr(base, name): v != old))
            changes[owner][name] = value
            expected[name] = value
    branches = [dataclasses.replace(base, **c) for c in changes]
    return base, branches, expected


@settings(max_examples=300, deadline=None)
@given(single_writer_groups())
def test_a_field_changed_by_one_branch_takes_its_value_and_never_conflicts(
    group: tuple[Fields, list[Fields], dict[str, Any]],
) -> None:
    """docs/language.md §6: reducers (here ``Append``, ``Sum`` and the refusing ``Veto``)
    only combine two or more changes; with at most one writer per field the
    merge never raises, whatever that writer did to the field."""
    base, branches, expected = group
    assert merge_states(base, branches) == dataclasses.replace(base, **expected)


def test_par_with_one_stateful_branch_that_replaces_an_append_log() -> None:
    """The issue's ``note >>= par <restart, ident>``: only ``restart`` touches the
    ``Append`` log, and it replaces it; the group succeeds with that log."""

    def note(_: int) -> AgentMonad[Fields, Any, int]:
        return AgentMonad.modify(lambda s: dataclasses.replace(s, log=s.log + ("note",))).map(lambda _: 1)

    restart = AgentMonad.modify(lambda s: dataclasses.replace(s, log=("restarted",))).map(lambda _: 2)
    ident: AgentMonad[Fields, Any, int] = AgentMonad.pure(3)
    prog = note(0).then(lambda _: AgentMonad.par([restart, ident]))
    assert prog.run_sync(Fields()) == Ok((2, 3), Fields(log=("restarted",)))


# -- merges inside par ------------------------------------------------------------


def test_par_merges_branch_states() -> None:
    def branch(tag: str) -> AgentMonad[DC, Any, str]:
        return AgentMonad.modify(
            lambda s: DC(s.log + (tag,), s.total + 1, s.answer, s.other)
        ).map(lambda _: tag)

    out = AgentMonad.par([branch("a"), branch("b"), branch("c")]).run_sync(DC())
    assert out == Ok(("a", "b", "c"), DC(log=("a", "b", "c"), total=3))


def test_failed_merge_is_err_with_the_input_state() -> None:
    s0 = DC(other=9)
    out = AgentMonad.par(
        [AgentMonad.put(DC(answer="a")), AgentMonad.put(DC(answer="b"))]
    ).run_sync(s0)
    assert isinstance(out, Err) and isinstance(out.error, MergeConflict)
    assert out.state == s0 and out.error.field == "answer"


def test_custom_merge_function_and_none() -> None:
    def keep_last(base: int, branches: Sequence[int]) -> int:
        return branches[-1]

    prog = AgentMonad.par([AgentMonad.put(1), AgentMonad.put(2)], merge=keep_last)
    assert prog.run_sync(0) == Ok((None, None), 2)
    # merge=None: no branch is stateful, the state stays the input state
    prog = AgentMonad.par([AgentMonad.pure(1), AgentMonad.pure(2)], merge=None)
    assert prog.run_sync(5) == Ok((1, 2), 5)
