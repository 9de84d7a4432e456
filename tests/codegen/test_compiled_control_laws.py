"""Identity laws of v2 control flow, on *compiled* code (docs/language.md §5–§6).

The runtime's combinators have their own laws (tests/runtime/test_control_laws.py);
these check what the code generator writes for them. Each example compiles, in
memory, one spec whose pipelines put the same random expression ``e`` (drawn from
tests/spec_gen.py, so on values, states, errors and Defects alike) on both sides
of a law:

- ``retry(1) e ≡ e``; ``timeout(S) e ≡ e`` when e finishes in time;
  ``loop(N) e ≡ e`` when e's first result ends the loop; ``match { _ => e } ≡ e``;
- ``if p then e else e`` is p on the input, then e on the *original* input with
  p's state.

The helpers (the law header, columns, observing a run) are in law_support.py; retry and
loop observed run by run, and timeouts, are in the sibling test_compiled_*.py files.
"""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from law_support import (
    SETTINGS,
    TOOLBOXES,
    bodies,
    call,
    compile_lines,
    inputs,
    line,
    retry_arguments,
    states,
)
from spec_gen import PREDICATES, Gen, expressions
from toolbox import TState

@SETTINGS
@given(e=bodies, data=st.data(), x=inputs, s=states)
def test_retry_once_is_the_body(e: Gen, data: st.DataObject, x: int, s: TState) -> None:
    arguments, _, _ = data.draw(retry_arguments(e, 1))
    wrapper = f"retry({arguments}) "
    module = compile_lines(line("lhs", "int -> int", wrapper + e.text), line("rhs", "int -> int", e.text, len(wrapper)))
    assert call(module, "lhs", s, x) == call(module, "rhs", s, x)


@SETTINGS
@given(e=bodies, seconds=st.sampled_from(["30", "12.5", "600"]), x=inputs, s=states)
def test_timeout_in_time_is_the_body(e: Gen, seconds: str, x: int, s: TState) -> None:
    wrapper = f"timeout({seconds}) "
    module = compile_lines(line("lhs", "int -> int", wrapper + e.text), line("rhs", "int -> int", e.text, len(wrapper)))
    assert call(module, "lhs", s, x) == call(module, "rhs", s, x)


@SETTINGS
@given(e=bodies, n=st.integers(1, 5), x=inputs, s=states)
def test_loop_whose_first_result_ends_it_is_the_body(e: Gen, n: int, x: int, s: TState) -> None:
    """``as_text`` is ``int -> int | str`` but always gives text: the first run ends the loop."""
    wrapper = f"loop({n}) "
    body = f"({e.text} >>= as_text)"
    module = compile_lines(
        line("lhs", "int -> str", wrapper + body), line("rhs", "int -> int | str", body, len(wrapper))
    )
    once = call(module, "rhs", s, x)
    assert call(module, "lhs", s, x) == once
    assert once[0] != "ok" or isinstance(once[1], str)


@SETTINGS
@given(e=bodies, x=inputs, s=states)
def test_match_with_only_a_wildcard_is_the_body(e: Gen, x: int, s: TState) -> None:
    wrapper = "match { _ => "
    module = compile_lines(
        line("lhs", "int -> int", wrapper + e.text + " }"), line("rhs", "int -> int", e.text, len(wrapper))
    )
    assert call(module, "lhs", s, x) == call(module, "rhs", s, x)


@st.composite
def conditions(draw: st.DrawFn) -> Gen:
    """An ``int -> bool`` term: a predicate, or an expression then a predicate."""
    predicate = draw(st.sampled_from(sorted(PREDICATES)))
    if draw(st.booleans()):
        return Gen(predicate, frozenset(), PREDICATES[predicate])
    before = draw(expressions(1, toolboxes=TOOLBOXES))
    return Gen(f"({before.text} >>= {predicate})", before.errors, True)


@SETTINGS
@given(p=conditions(), e=bodies, x=inputs, s=states)
def test_if_with_equal_branches_is_the_condition_then_the_body_on_the_input(
    p: Gen, e: Gen, x: int, s: TState
) -> None:
    """``if p then e else e`` on (s, x): p on (s, x) gives (b, s1); then e on (s1, x) —
    the original input, p's state. A failing p is the result."""
    then_at = len(f"if {p.text} then ")
    else_at = then_at + len(f"{e.text} else ")
    module = compile_lines(
        line("lhs", "int -> int", f"if {p.text} then {e.text} else {e.text}"),
        line("cond", "int -> bool", p.text, len("if ")),
        line("on_true", "int -> int", e.text, then_at),
        line("on_false", "int -> int", e.text, else_at),
    )
    tested = call(module, "cond", s, x)
    if tested[0] != "ok":
        assert call(module, "lhs", s, x) == tested
        return
    chosen, s1, pauses = tested[1], tested[2], tested[-1]
    assert isinstance(chosen, bool)
    branch = call(module, "on_true" if chosen else "on_false", s1, x)
    assert call(module, "lhs", s, x) == (*branch[:-1], pauses + branch[-1])
