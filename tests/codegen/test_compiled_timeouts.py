"""``timeout`` on *compiled* code: cancellation and the state a fired deadline carries
(docs/language.md §6).

A ``timeout`` around a ``par`` cancels every branch and leaves no task; a ``Timeout``
carries the state after the last step of a chain that completed, in every form the
deadline can fire in (the fixed cases below, run on the interpreter and compiled). The
same with a random expression in every kind of nested helper is
test_compiled_timeout_nesting.py.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from law_support import BODY_COLUMN, LAW_HEADER, TIMED, _counter, bodies, call, compile_lines, inputs, line, states, where
from spec_gen import Gen
from toolbox import TState

from agentmonad import Err, Ok, Outcome, Timeout
from mcec.compiler import compile_source
from shared_index import shared_index
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile


class Sleepers:
    """Stands in for the ``hang`` step: sleeps for an hour, recording starts and cancellations."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0

    async def __call__(self, state: TState, value: int) -> Ok[TState, int]:
        self.started += 1
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return Ok(value, state)  # pragma: no cover - never reached


BRANCHES = ["hang", "(local hang)", "(inc >>= hang)", "(note >>= slow_inc >>= hang)", "inc", "slow_inc", "note"]


@TIMED
@given(
    branches=st.lists(st.sampled_from(BRANCHES), min_size=2, max_size=3).filter(
        lambda bs: any("hang" in b for b in bs)
    ),
    x=st.integers(-20, 20),
    s=states,
)
def test_a_timeout_around_par_cancels_every_branch_and_leaves_no_task(branches: list[str], x: int, s: TState) -> None:
    joiner = "add_pair" if len(branches) == 2 else "add_triple"
    module = compile_lines(line("main", "int -> int", f"timeout(0.05) (par <{', '.join(branches)}> >>= {joiner})"))
    module.hang = sleepers = Sleepers()

    async def run() -> tuple[Outcome[TState, Any, int], set[asyncio.Task[Any]]]:
        out = await module.main(s, x)
        return out, asyncio.all_tasks() - {asyncio.current_task()}

    out, left = asyncio.run(run())
    assert isinstance(out, Err), out
    assert (out.error, out.state, where(out.site)) == (Timeout(0.05), s, ("timeout", BODY_COLUMN + 1))
    hanging = sum("hang" in b for b in branches)
    assert sleepers.started == sleepers.cancelled == hanging
    assert not left


@TIMED
@given(e=bodies, after=st.sampled_from(["", " >>= inc", " >>= slow_inc >>= note"]), x=inputs, s=states)
def test_a_timeout_carries_the_state_after_the_last_completed_step(e: Gen, after: str, x: int, s: TState) -> None:
    """``timeout(S) (e >>= hang …)``: e completes, hang does not; the Timeout carries e's
    state (and a failing e is the result)."""
    wrapper = "timeout(0.05) ("
    module = compile_lines(
        line("lhs", "int -> int", f"{wrapper}{e.text} >>= hang{after})"), line("rhs", "int -> int", e.text, len(wrapper))
    )
    before = call(module, "rhs", s, x)
    got = call(module, "lhs", s, x)
    if before[0] == "ok":
        assert got == ("err", Timeout(0.05), before[2], ("timeout", BODY_COLUMN + 1), before[-1])
    else:
        assert got == before


def test_a_timeout_keeps_a_logged_note() -> None:
    module = compile_lines(line("main", "int -> int", "timeout(0.05) (note >>= inc >>= hang >>= note)"))
    out = call(module, "main", TState(), 4)
    assert out[:3] == ("err", Timeout(0.05), TState(log=("note 4",), count=1))


#: ``timeout(0.05) BODY`` on an input: the steps before ``hang`` complete, ``hang`` does not, and
#: the Timeout carries the state after the last step that completed (docs/language.md §6). In a
#: ``par``/``each`` in progress nothing has completed; a ``local`` gives back its start state.
FIRED: list[Any] = [
    pytest.param("(note >>= hang)", 1, TState(log=("note 1",)), id="chain"),
    pytest.param("(local (note >>= hang))", 1, TState(), id="local"),
    pytest.param("(par <note >>= hang, inc> >>= add_pair)", 1, TState(), id="par"),
    pytest.param("(spread >>= each (note >>= hang) >>= total)", 1, TState(), id="each"),
    pytest.param("slow_then_hang", 1, TState(log=("note 1",)), id="pipeline"),
    pytest.param(
        "((note >>= even_only >>= hang) catch Odd => recover)", 2, TState(log=("note 2",)), id="catch"
    ),
    pytest.param("(even_only orelse (note >>= hang))", 1, TState(log=("odd 1", "note 1")), id="orelse"),
    pytest.param("(match { _ => (note >>= hang) })", 1, TState(log=("note 1",)), id="match"),
    pytest.param(
        "(if is_positive then (note >>= hang) else hang)", 1, TState(log=("pos? 1", "note 1")), id="if"
    ),
    pytest.param(
        "(loop(3) (match { 8 => (note >>= countdown), _ => (hang >>= countdown) }) >>= parse)",
        8,
        TState(log=("note 8", "cd 8")),
        id="loop",
    ),
    pytest.param("(retry(3) (note >>= flaky >>= hang))", 0, TState(log=("note 0",), count=1), id="retry"),
    pytest.param(  # the deadline fires in the pause before the second attempt
        "(retry(3, on=Odd, backoff=5) even_only)", 1, TState(log=("odd 1",)), id="retry-pause"
    ),
    pytest.param("(timeout(30) (note >>= hang))", 1, TState(log=("note 1",)), id="timeout"),
]


def _fired(body: str) -> tuple[Any, Any]:
    """The program and module of ``timeout(0.05) body`` (with a pipeline ``slow_then_hang``)."""
    text = LAW_HEADER + "pipeline slow_then_hang : int -> int = note >>= hang;\n" + line("main", "int -> int", f"timeout(0.05) {body}") + "\n"
    source = SourceFile(f"law_{next(_counter)}.mce", text)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok and result.program is not None and result.generated is not None, render_text(
        result.diagnostics, {source.path: source}, color=False
    )
    return result.program, load_module(result.program, result.generated)


@pytest.mark.parametrize(("body", "value", "state"), [p.values for p in FIRED], ids=[p.id for p in FIRED])
def test_a_fired_timeout_keeps_the_last_completed_steps_state_interpreted(body: str, value: int, state: TState) -> None:
    """The reference interpreter does what §6 says in every case (the compiled code must match it)."""
    program, _ = _fired(body)
    out = asyncio.run(Interpreter(program).run("main", TState(), value))
    assert isinstance(out, Err) and (out.error, out.state) == (Timeout(0.05), state)


@pytest.mark.parametrize(("body", "value", "state"), FIRED)
def test_a_fired_timeout_keeps_the_last_completed_steps_state_compiled(body: str, value: int, state: TState) -> None:
    _, module = _fired(body)
    out = asyncio.run(module.main(TState(), value))
    assert isinstance(out, Err) and (out.error, out.state) == (Timeout(0.05), state)
