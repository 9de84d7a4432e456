"""``retry`` and ``loop`` on *compiled* code, observed run by run (docs/language.md §5–§6).

A recording step (``probe``, replaced by a :class:`law_support.Recorder`) before the
random expression ``e`` sees every run:

- retry: each attempt is e on the original input with the state the previous attempt
  failed with, an attempt is rerun only after an error in ``on=`` and only while
  attempts remain (never after a Defect or another error), the pauses between attempts
  are ``retry_delay``'s, and the result is the last attempt's;
- loop: at most N runs, each on the previous run's result and state, ended by the
  first result not of the input type (or ``LoopExhausted(N, last)``).
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from law_support import BODY_COLUMN, SETTINGS, Recorder, bodies, call, compile_lines, inputs, line, retry_arguments, states
from spec_gen import ENDERS, Gen
from toolbox import TState

from agentmonad import LoopExhausted
from agentmonad.control import retry_delay


#: What the retried body ends with, so it mostly can fail, with one error or another.
FAILING = {"": frozenset[str](), " >>= flaky": frozenset({"Odd"}), " >>= even_only >>= no_negatives": frozenset({"Odd", "Neg"})}


@SETTINGS
@given(
    e=bodies, failing=st.sampled_from(sorted(FAILING)), attempts=st.integers(1, 4), data=st.data(), x=inputs, s=states
)
def test_retry_reruns_only_errors_in_on_with_the_state_at_failure(
    e: Gen, failing: str, attempts: int, data: st.DataObject, x: int, s: TState
) -> None:
    e = Gen(f"({e.text}{failing})", e.errors | FAILING[failing], True)
    arguments, on, backoff = data.draw(retry_arguments(e, attempts))
    wrapper = f"retry({arguments}) (probe >>= "
    module = compile_lines(
        line("lhs", "int -> int", wrapper + e.text + ")"), line("rhs", "int -> int", e.text, len(wrapper))
    )
    module.probe = recorder = Recorder()
    got = call(module, "lhs", s, x)
    runs = recorder.runs
    assert 1 <= len(runs) <= attempts
    assert [value for _, value in runs] == [x] * len(runs)  # always the original input
    assert runs[0][0] == s
    expected_pauses: list[float] = []
    for k, (state, _) in enumerate(runs, start=1):
        attempt = call(module, "rhs", state, x)  # what attempt k was: e from that state
        expected_pauses += attempt[-1]
        retryable = attempt[0] == "err" and (on is None or isinstance(attempt[1], on))
        if k < len(runs):
            assert retryable, (k, attempt)  # rerun only after an error in on=
            assert runs[k][0] == attempt[2]  # with the state the attempt failed with
            if backoff > 0:
                expected_pauses.append(retry_delay(k, backoff, jitter=1.0))
        else:
            assert k == attempts or not retryable, (k, attempt)  # stops after a Defect or another error
            assert got == (*attempt[:-1], expected_pauses)


@pytest.mark.parametrize(
    ("body", "on", "value", "runs", "outcome"),
    [
        ("crash", "", 13, 1, "defect"),  # a Defect: never rerun
        ("even_only", ", on=Odd", 1, 3, "err"),  # Odd is in on=: every attempt
        ("(even_only >>= no_negatives)", ", on=Neg", 1, 1, "err"),  # Odd is not
        ("(even_only >>= no_negatives)", ", on=Neg", -4, 3, "err"),  # Neg is
        ("flaky", "", 1, 3, "ok"),  # succeeds on the third attempt (state handed on)
    ],
)
def test_retry_counts_on_known_bodies(body: str, on: str, value: int, runs: int, outcome: str) -> None:
    module = compile_lines(line("main", "int -> int", f"retry(3{on}, backoff=0) (probe >>= {body})"))
    module.probe = recorder = Recorder()
    assert call(module, "main", TState(), value)[0] == outcome
    assert len(recorder.runs) == runs


@SETTINGS
@given(e=bodies, n=st.integers(1, 5), ender=st.sampled_from(ENDERS), x=inputs, s=states)
def test_loop_runs_at_most_n_times_each_on_the_last_result(e: Gen, n: int, ender: str, x: int, s: TState) -> None:
    wrapper = f"loop({n}) (probe >>= "
    module = compile_lines(
        line("lhs", "int -> str", wrapper + f"{e.text} >>= {ender})"),
        line("rhs", "int -> int | str", f"({e.text} >>= {ender})", len(wrapper) - 1),
    )
    module.probe = recorder = Recorder()
    got = call(module, "lhs", s, x)
    runs = recorder.runs
    assert 1 <= len(runs) <= n
    assert runs[0] == (s, x)
    pauses: list[float] = []
    for k, (state, value) in enumerate(runs, start=1):
        turn = call(module, "rhs", state, value)  # what run k was: the body on the last result
        pauses += turn[-1]
        goes_round = turn[0] == "ok" and isinstance(turn[1], int)
        if k < len(runs):
            assert goes_round and runs[k] == (turn[2], turn[1]), (k, turn)
        elif goes_round:  # the N-th run still goes round
            assert k == n
            assert got == ("err", LoopExhausted(n, turn[1]), turn[2], ("loop", BODY_COLUMN + 1), pauses)
        else:  # ended by text or by a failure
            assert got == (*turn[:-1], pauses)
