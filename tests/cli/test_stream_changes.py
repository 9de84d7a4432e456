"""``mcec run --stream``'s lines for a structured answer (issue 47, docs/language.md §14): the
changes from one partial to the next, which applied in order give every partial again."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from mcec.run.changes import apply, changes

_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=6)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from("abc"), inner, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_values, min_size=1, max_size=6))
def test_the_changes_applied_in_order_give_each_value(values: list[object]) -> None:
    shown = apply(None, {"path": [], "set": copy.deepcopy(values[0])})
    for old, new in zip(values, values[1:]):
        for change in changes(old, new):
            shown = apply(shown, copy.deepcopy(change))
        assert shown == new and type(shown) is type(new)


def test_a_growing_answer_is_told_by_what_was_added() -> None:
    old = {"title": "Par", "cites": [{"url": "https://a"}], "n": None}
    new = {"title": "Paris", "cites": [{"url": "https://a.example"}, {"url": ""}], "n": 1}
    assert list(changes(old, new)) == [
        {"path": ["title"], "append": "is"},
        {"path": ["cites", 0, "url"], "append": ".example"},
        {"path": ["cites", 1], "set": {"url": ""}},
        {"path": ["n"], "set": 1},
    ]
    assert list(changes(new, new)) == []
