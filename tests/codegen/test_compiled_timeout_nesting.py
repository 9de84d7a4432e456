"""A deadline that fires inside every kind of nested helper, on *compiled* code
(docs/language.md §6): ``timeout(0.05)`` around each helper form, with a random
expression before the step that hangs; compiled and interpreted agree on the value,
error, state and site — in particular on the state a fired timeout carries, wherever in
the helpers the deadline landed.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from law_support import LAW_HEADER, TOOLBOXES, Observed, _counter, line, states, where
from spec_gen import Gen, expressions
from toolbox import TState

from agentmonad import Defect, Err, Ok, Outcome
from mcec.compiler import compile_source
from shared_index import shared_index
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile

#: Every kind of helper a deadline can fire in, with a random expression ``{e}`` run before the
#: step that hangs: each is ``int -> int`` and puts the helper in the middle of the timed chain
#: (``>>= inc`` after it), where its steps run in a function of their own, or as the whole body.
NESTINGS: dict[str, str] = {
    "chain": "({e} >>= note >>= hang)",
    "pipeline": "(sub >>= inc)",
    "pipeline-in-pipeline": "(outer >>= inc)",
    "catch-body": "((({e} >>= even_only >>= hang) catch Odd => recover) >>= inc)",
    "catch-handler": "((({e} >>= even_only) catch Odd => (recover >>= note >>= hang)) >>= inc)",
    "orelse-body": "((({e} >>= hang) orelse inc) >>= inc)",
    "orelse-fallback": "((({e} >>= even_only) orelse (note >>= hang)) >>= inc)",
    "local": "(note >>= local ({e} >>= hang) >>= inc)",
    "local-in-local": "(local (note >>= local ({e} >>= hang)) >>= inc)",
    "par": "({e} >>= par <(note >>= hang), inc> >>= add_pair >>= inc)",
    "each": "({e} >>= spread >>= each (note >>= hang) >>= total >>= inc)",
    "match": "((match {{ 0 => (note >>= hang), _ => ({e} >>= hang) }}) >>= inc)",
    "if": "((if is_positive then ({e} >>= hang) else (note >>= hang)) >>= inc)",
    "loop": "(loop(3) ({e} >>= note >>= hang >>= countdown) >>= parse >>= inc)",
    "loop-second-run": "(loop(3) (match {{ 8 => (note >>= countdown), _ => ({e} >>= hang >>= countdown) }}) >>= parse >>= inc)",
    "retry": "(retry(3) ({e} >>= flaky >>= hang) >>= inc)",
    "retry-pause": "(retry(3, on=Odd, backoff=5) ({e} >>= even_only) >>= inc)",
    "timeout": "(timeout(30) ({e} >>= note >>= hang) >>= inc)",
}


def _outcome(run: Callable[[], Coroutine[Any, Any, Outcome[Any, Any, Any]]]) -> Observed:
    """One run on a fresh event loop, on the real retry clock (a deadline may land in a pause)."""
    try:
        out = asyncio.run(run())
    except Defect as defect:
        return ("defect", type(defect.cause).__name__, defect.state, where(defect.site))
    if isinstance(out, Ok):
        return ("ok", out.value, out.state)
    assert isinstance(out, Err)
    return ("err", out.error, out.state, where(out.site))


@pytest.mark.parametrize("nesting", sorted(NESTINGS))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(e=st.integers(0, 1).flatmap(lambda depth: expressions(depth, toolboxes=TOOLBOXES)), x=st.integers(-20, 20) | st.just(8), s=states)
def test_a_fired_timeout_reports_the_interpreters_state_in_every_nested_helper(
    nesting: str, e: Gen, x: int, s: TState
) -> None:
    """``timeout(0.05)`` around each kind of helper, with a random ``e`` before the step that
    hangs: compiled and interpreted agree on the value, error, state and site — in particular
    on the state a fired timeout carries, wherever in the helpers the deadline landed."""
    text = (
        LAW_HEADER
        + f"pipeline sub : int -> int = {e.text} >>= note >>= hang;\n"
        + "pipeline outer : int -> int = inc >>= local (note >>= sub);\n"
        + line("main", "int -> int", "timeout(0.05) " + NESTINGS[nesting].format(e=e.text))
        + "\n"
    )
    source = SourceFile(f"law_{next(_counter)}.mce", text)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok and result.program is not None and result.generated is not None, render_text(
        result.diagnostics, {source.path: source}, color=False
    ) + text
    module = load_module(result.program, result.generated)
    interpreted = _outcome(lambda: Interpreter(result.program).run("main", s, x))  # type: ignore[arg-type]
    assert _outcome(lambda: module.main(s, x)) == interpreted
