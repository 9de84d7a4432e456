"""Laws and properties of v2 control flow, on *compiled* code (docs/language.md §5–§6).

The runtime's combinators have their own laws (tests/runtime/test_control_laws.py);
these check what the code generator writes for them. Each example compiles, in
memory, one spec whose pipelines put the same random expression ``e`` (drawn from
tests/spec_gen.py, so on values, states, errors and Defects alike) on both sides
of a law:

- ``retry(1) e ≡ e``; ``timeout(S) e ≡ e`` when e finishes in time;
  ``loop(N) e ≡ e`` when e's first result ends the loop; ``match { _ => e } ≡ e``;
- ``if p then e else e`` is p on the input, then e on the *original* input with
  p's state;
- retry, observed with a recording step before ``e``: each attempt is e on the
  original input with the state the previous attempt failed with, an attempt is
  rerun only after an error in ``on=`` and only while attempts remain (never
  after a Defect or another error), the pauses between attempts are
  ``retry_delay``'s, and the result is the last attempt's;
- loop, observed the same way: at most N runs, each on the previous run's
  result and state, ended by the first result not of the input type (or
  ``LoopExhausted(N, last)``);
- a ``timeout`` around a ``par`` cancels every branch and leaves no task; a
  ``Timeout`` carries the state after the last step of a chain that completed.

Every pipeline of a spec starts its body at the same column and puts ``e`` at
the same column, so the sites of e's failures (step, column) are comparable
across the two sides; the line is left out. Runs use ``fake_retry_clock``: no
retry waits, and the pauses asked for are part of what is compared.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_gen import ENDERS, HEADER, PLAN_HEADER, PREDICATES, Gen, expressions, plan_toolboxes
from toolbox import Neg, Odd, TState

from agentmonad import Defect, Err, LoopExhausted, MergeConflict, Ok, Outcome, PlanRejected, Site, Timeout
from agentmonad.control import fake_retry_clock, retry_delay
from mcec.compiler import compile_source
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile

LAW_HEADER = (
    HEADER
    + (
        "step probe : int -> int = tb.probe\n"
        "fn as_text : int -> int | str = tb.as_text\n"
        "async step hang : int -> int = tb.hang\n"
    )
    + PLAN_HEADER  # so that an `e` may spawn a plan (docs/language.md §12)
)
#: The toolboxes LAW_HEADER declares, for ``expressions``.
TOOLBOXES = plan_toolboxes()
#: The column (0-based, after the pipeline's head) where every law pipeline's body starts.
BODY_COLUMN = 48
ERRORS: dict[str, type] = {
    "Odd": Odd,
    "Neg": Neg,
    "MergeConflict": MergeConflict,
    "LoopExhausted": LoopExhausted,
    "Timeout": Timeout,
    "PlanRejected": PlanRejected,
}

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TIMED = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

bodies = st.integers(0, 2).flatmap(lambda depth: expressions(depth, toolboxes=TOOLBOXES))
inputs = st.integers(-20, 20) | st.just(13)  # 13 makes `crash` raise: a Defect
states = st.builds(
    TState,
    log=st.lists(st.sampled_from(["a", "b"]), max_size=2).map(tuple),
    count=st.integers(-3, 3),
    last=st.integers(-3, 3),
)
_counter = itertools.count()

Observed = tuple[Any, ...]


def line(name: str, sig: str, body: str, at: int = 0) -> str:
    """``pipeline name : sig = body;`` with the body at column ``BODY_COLUMN + at``."""
    head = f"pipeline {name} : {sig} ="
    assert len(head) < BODY_COLUMN, head
    return head.ljust(BODY_COLUMN) + " " * at + body + ";"


def compile_lines(*lines: str) -> Any:
    """The module compiled from the law header and ``lines``."""
    text = LAW_HEADER + "\n".join(lines) + "\n"
    source = SourceFile(f"law_{next(_counter)}.mce", text)
    result = compile_source(source)
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False) + text
    assert result.program is not None and result.generated is not None
    return load_module(result.program, result.generated)


def where(site: Site | None) -> tuple[str, int] | None:
    """A site without its line: the step and the column."""
    return None if site is None else (site.step, site.column)


def observe(run: Callable[[], Coroutine[Any, Any, Outcome[Any, Any, Any]]]) -> Observed:
    """One run on a fresh event loop, as comparable data; the retry pauses asked for last."""
    with fake_retry_clock() as pauses:
        try:
            out = asyncio.run(run())
        except Defect as defect:
            return ("defect", type(defect.cause).__name__, defect.state, where(defect.site), pauses)
    if isinstance(out, Ok):
        return ("ok", out.value, out.state, pauses)
    assert isinstance(out, Err)
    return ("err", out.error, out.state, where(out.site), pauses)


def call(module: Any, pipeline: str, state: TState, value: int) -> Observed:
    """Observe ``module.pipeline(state, value)``."""
    return observe(lambda: getattr(module, pipeline)(state, value))


class Recorder:
    """Stands in for the ``probe`` step: records the (state, value) of each run."""

    def __init__(self) -> None:
        self.runs: list[tuple[TState, int]] = []

    def __call__(self, state: TState, value: int) -> Ok[TState, int]:
        self.runs.append((state, value))
        return Ok(value, state)


# ---------------------------------------------------------------- the identity laws


@st.composite
def retry_arguments(draw: st.DrawFn, body: Gen, attempts: int) -> tuple[str, tuple[type, ...] | None, float]:
    """``retry(attempts, on=…, backoff=…)``'s argument text, its ``on`` classes (None: every
    error) and its backoff: ``on`` names only errors ``body`` can raise (else MCE014)."""
    text = str(attempts)
    on: tuple[type, ...] | None = None
    if len(body.errors) > 0 and draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(sorted(body.errors)), min_size=1, unique=True))
        text += ", on=" + " | ".join(names)
        on = tuple(ERRORS[n] for n in names)
    backoff = draw(st.sampled_from([None, 0.0, 0.25]))
    if backoff is not None:
        text += f", backoff={backoff:g}"
    return text, on, 0.5 if backoff is None else backoff


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


# ---------------------------------------------------------------- retry and loop, observed run by run


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


# ---------------------------------------------------------------- timeout: cancellation and state


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



# ---------------------------------------------------------------- a deadline that fires inside a nested form

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
    result = compile_source(source)
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
    result = compile_source(source)
    assert result.ok and result.program is not None and result.generated is not None, render_text(
        result.diagnostics, {source.path: source}, color=False
    ) + text
    module = load_module(result.program, result.generated)
    interpreted = _outcome(lambda: Interpreter(result.program).run("main", s, x))  # type: ignore[arg-type]
    assert _outcome(lambda: module.main(s, x)) == interpreted
