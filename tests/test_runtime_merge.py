"""The default three-way by-field merge, reducers, conflicts, custom merges.

This module uses ``from __future__ import annotations`` on purpose: every state
class below has string annotations, so reducers are found only through
``typing.get_type_hints(S, include_extras=True)``.
"""

from __future__ import annotations

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
    with pytest.raises(MergeConflict) as info:
        merge_states(DC(log=("x",)), [DC(log=("y", "z")), DC(log=("x",))])
    assert info.value.field == "log"


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
