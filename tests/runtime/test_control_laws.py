"""Laws and properties of v2 control flow in the runtime (docs/language.md §6), by
property-based testing over generated programs, values and states, on the
success and the failure track (Defects included):

- ``retry(1) e ≡ e``, and ``retry(n) e ≡ e`` whenever e succeeds;
- ``timeout(S) e ≡ e`` when e finishes in time;
- ``loop(N) e ≡ e`` when e's first result already ends the loop;
- observed run counts: retry re-runs exactly the retryable failures, never
  after a Defect or an error outside ``on=``, at most n runs, pausing between
  them as ``retry_delay`` says; loop runs at most N times and ends exactly as
  the body's results say;
- a ``timeout`` around a ``par``/``each`` cancels every branch: no task left;
- the generated shapes (``control_shapes``) and the interpreter agree on
  random scripts of attempt and iteration results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from hypothesis import given, settings
from hypothesis import strategies as st

import control_shapes as shapes
from agentmonad import AgentMonad, Append, Defect, Err, LoopExhausted, Ok, Outcome, Sum, Timeout, lift_fn, lift_step
from agentmonad.control import fake_retry_clock, retry_delay
from control_shapes import Fatal, Flaky, St

SETTINGS = settings(max_examples=100, deadline=None)
SLOW_SETTINGS = settings(max_examples=15, deadline=None)


@dataclass(frozen=True)
class S2:
    log: Annotated[tuple[int, ...], Append] = ()
    n: Annotated[int, Sum] = 0


M = AgentMonad[S2, Any, Any]

states = st.builds(S2, log=st.lists(st.integers(-5, 5), max_size=3).map(tuple), n=st.integers(-100, 100))

# one op of a generated program: change the state, change the value, fail with a
# str (soft) or an int (hard) error, fail on some values, yield to the event loop
# in an async step, or raise in a fn (a Defect)
ops = st.one_of(
    st.tuples(st.just("log"), st.integers(-9, 9)),
    st.tuples(st.just("add"), st.integers(-9, 9)),
    st.tuples(st.just("soft"), st.integers(0, 9)),
    st.tuples(st.just("hard"), st.integers(0, 9)),
    st.tuples(st.just("failif"), st.integers(2, 4)),
    st.tuples(st.just("async"), st.integers(0, 2)),
    st.tuples(st.just("defect"), st.integers(2, 5)),
)
op_lists = st.lists(ops, max_size=5)


async def _yield_n(state: S2, value: tuple[int, int]) -> Ok[S2, int]:
    v, times = value
    for _ in range(times):
        await asyncio.sleep(0)
    return Ok(v, S2(state.log, state.n + 1))


_async_step = lift_step(_yield_n, name="yield", errors=(), is_async=True)


def _boom(value: int) -> int:
    raise ValueError(f"boom at {value}")


def build(op_list: list[tuple[str, int]], start: M) -> M:
    m = start
    for op, k in op_list:
        if op == "log":
            m = m.then(lambda v, k=k: AgentMonad.modify(lambda s: S2(s.log + (v + k,), s.n + k)).map(lambda _: v))
        elif op == "add":
            m = m.map(lambda v, k=k: v + k)
        elif op == "soft":
            m = m.then(lambda v, k=k: AgentMonad.fail(f"e{k}:{v}"))
        elif op == "hard":
            m = m.then(lambda v, k=k: AgentMonad.fail(k * 1000 + v))
        elif op == "failif":
            m = m.then(lambda v, k=k: AgentMonad.fail(f"div{k}:{v}") if v % k == 0 else AgentMonad.pure(v))
        elif op == "async":
            m = m.then(lambda v, k=k: _async_step((v, k)))
        else:
            boom = lift_fn(_boom, name="boom")
            m = m.then(lambda v, k=k, boom=boom: boom(v) if v % k == 0 else AgentMonad.pure(v))
    return m


progs = st.tuples(st.integers(-20, 20), op_lists).map(lambda p: build(p[1], AgentMonad.pure(p[0])))


def observe(m: M, s: S2) -> Any:
    """The outcome, or a Defect as ("defect", its cause's text)."""
    try:
        return m.run_sync(s)
    except Defect as d:
        return ("defect", str(d.cause))


# -- retry ------------------------------------------------------------------------


@SETTINGS
@given(progs, states, st.sampled_from([0, 0.5, 3.0]), st.sampled_from([None, str, (int,)]))
def test_retry_one_is_the_program(m: M, s: S2, backoff: float, on: Any) -> None:
    with fake_retry_clock() as pauses:
        assert observe(m.retry(1, on=on, backoff=backoff), s) == observe(m, s)
    assert pauses == []


@SETTINGS
@given(progs, states, st.integers(1, 5))
def test_retry_of_a_success_is_the_program(m: M, s: S2, n: int) -> None:
    plain = observe(m, s)
    if isinstance(plain, Ok):
        with fake_retry_clock() as pauses:
            assert observe(m.retry(n), s) == plain
        assert pauses == []


# each attempt's result: succeed, a soft (retryable) error, a hard one, or a Defect
attempt_results = st.lists(st.sampled_from(["ok", "soft", "hard", "defect"]), min_size=1, max_size=8)


def scripted_step(script: list[str]) -> tuple[Callable[[int], AgentMonad[S2, Any, int]], list[tuple[int, S2]]]:
    """A step that does ``script[i]`` on its i-th run (the last entry repeats),
    recording the value and state of each run and counting runs in the state."""
    runs: list[tuple[int, S2]] = []

    def impl(state: S2, value: int) -> Outcome[S2, Any, int]:
        runs.append((value, state))
        what = script[min(len(runs), len(script)) - 1]
        state = S2(state.log + (len(runs),), state.n + 1)
        if what == "ok":
            return Ok(value, state)
        if what == "soft":
            return Err(f"soft {len(runs)}", state)
        if what == "hard":
            return Err(len(runs), state)
        raise KeyError("a bug")

    return lift_step(impl, name="scripted", errors=(str, int)), runs


@SETTINGS
@given(attempt_results, st.integers(1, 6), st.integers(-5, 5), states, st.sampled_from([0, 0.25, 1.0]))
def test_retry_reruns_exactly_the_retryable_failures(
    script: list[str], n: int, value: int, s: S2, backoff: float
) -> None:
    k, runs = scripted_step(script)
    with fake_retry_clock() as pauses:
        out = observe(k(value).retry(n, on=str, backoff=backoff), s)
    # the first attempt that is not a soft failure ends it, and at most n run
    full = script + [script[-1]] * n
    stop = next((i for i, what in enumerate(full) if what != "soft"), len(full))
    expected_runs = min(n, stop + 1)
    assert len(runs) == expected_runs
    assert all(v == value for v, _ in runs)  # every attempt on the original input
    for i in range(1, len(runs)):  # ... from the state at the previous failure
        assert runs[i][1] == S2(runs[i - 1][1].log + (i,), runs[i - 1][1].n + 1)
    assert pauses == ([] if backoff == 0 else [retry_delay(i, backoff, jitter=1.0) for i in range(1, expected_runs)])
    last = full[expected_runs - 1]
    final = S2(s.log + tuple(range(1, expected_runs + 1)), s.n + expected_runs)
    if last == "ok":
        assert out == Ok(value, final)
    elif last == "soft":
        assert out == Err(f"soft {expected_runs}", final)
    elif last == "hard":
        assert out == Err(expected_runs, final)
    else:
        assert out == ("defect", "'a bug'")


# -- timeout ------------------------------------------------------------------------


@SETTINGS
@given(progs, states)
def test_timeout_in_time_is_the_program(m: M, s: S2) -> None:
    assert observe(m.timeout(60), s) == observe(m, s)


@SETTINGS
@given(progs, states)
def test_timeout_of_a_retry_and_retry_of_a_timeout_in_time(m: M, s: S2) -> None:
    with fake_retry_clock():
        assert observe(m.timeout(60).retry(2, on=int), s) == observe(m.retry(2, on=int).timeout(60), s)


@SLOW_SETTINGS
@given(
    st.lists(st.sampled_from(["hang", "quick", "each"]), min_size=2, max_size=6),
    states,
)
def test_timeout_around_par_cancels_every_branch(kinds: list[str], s: S2) -> None:
    if "hang" not in kinds and "each" not in kinds:
        kinds = [*kinds, "hang"]
    started: list[int] = []
    cancelled: list[int] = []

    async def slow(state: S2, i: int) -> Ok[S2, int]:
        started.append(i)
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        return Ok(i, state)

    async def quick(state: S2, i: int) -> Ok[S2, int]:
        await asyncio.sleep(0)
        return Ok(i, S2(state.log + (i,), state.n))

    k_slow = lift_step(slow, name="slow", errors=(), is_async=True)
    k_quick = lift_step(quick, name="quick", errors=(), is_async=True)
    branches: list[M] = []
    for i, kind in enumerate(kinds):
        if kind == "hang":
            branches.append(k_slow(i))
        elif kind == "quick":
            branches.append(k_quick(i))
        else:
            branches.append(AgentMonad.each([100 + i, 200 + i, 300 + i], k_slow, limit=2))
    prog = AgentMonad.par(branches).timeout(0.02)

    async def main() -> tuple[Any, set[asyncio.Task[Any]]]:
        out = await prog.run(s)
        return out, asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    out, leftover = asyncio.run(main())
    assert out == Err(Timeout(0.02), s)
    assert not leftover
    assert sorted(started) == sorted(cancelled) and started


# -- loop ---------------------------------------------------------------------------


@dataclass(frozen=True)
class End:
    """A value that ends a loop over ints."""

    value: Any


@SETTINGS
@given(op_lists, st.integers(-20, 20), states, st.integers(1, 6))
def test_loop_whose_first_result_ends_is_the_body(op_list: list[tuple[str, int]], x: int, s: S2, n: int) -> None:
    def body(v: int) -> M:
        return build(op_list, AgentMonad.pure(v)).map(End)

    assert observe(AgentMonad.loop(body, n, int)(x), s) == observe(body(x), s)


# each run's result: go round again, end the loop, or fail
iteration_results = st.lists(st.sampled_from(["again", "again", "end", "fail"]), min_size=1, max_size=10)


@SETTINGS
@given(iteration_results, st.integers(1, 8), states)
def test_loop_runs_at_most_n_times_and_ends_as_the_results_say(script: list[str], n: int, s: S2) -> None:
    runs: list[int] = []

    def impl(state: S2, value: int) -> Outcome[S2, str, int | End]:
        runs.append(value)
        what = script[min(len(runs), len(script)) - 1]
        state = S2(state.log + (value,), state.n + 1)
        if what == "again":
            return Ok(value + 1, state)
        if what == "end":
            return Ok(End(value), state)
        return Err(f"failed at {value}", state)

    out = observe(AgentMonad.loop(lift_step(impl, name="body", errors=(str,)), n, int)(0), s)
    full = script + [script[-1]] * n
    stop = next((i for i, what in enumerate(full) if what != "again"), len(full))
    expected = min(n, stop + 1)
    assert runs == list(range(expected))  # each run on the previous result
    final = S2(s.log + tuple(range(expected)), s.n + expected)
    last = full[expected - 1]
    if last == "again":
        assert out == Err(LoopExhausted(iterations=n, last=expected), final)
    elif last == "end":
        assert out == Ok(End(expected - 1), final)
    else:
        assert out == Err(f"failed at {expected - 1}", final)


# -- generated shapes ≡ interpreter ------------------------------------------------------


@SETTINGS
@given(st.lists(st.sampled_from(["ok", "flaky", "fatal", "defect"]), min_size=1, max_size=4), st.integers(-5, 5))
def test_generated_retry_shape_agrees_with_the_interpreter(script: list[str], value: int) -> None:
    def make() -> tuple[Any, list[Any]]:
        seen: list[Any] = []
        errors: dict[int, Exception] = {}

        async def impl(state: St, v: int) -> Outcome[St, Flaky | Fatal, int]:
            seen.append((v, state))
            what = script[min(len(seen), len(script)) - 1]
            state = shapes.noted(state, what)
            if what == "ok":
                return Ok(v * 3, state)
            if what == "defect":
                raise LookupError("bug")
            error = errors.setdefault(len(seen), (Flaky if what == "flaky" else Fatal)(str(len(seen))))
            return Err(error, state)

        return impl, seen

    def view(run: Callable[[], Any]) -> Any:
        try:
            out = asyncio.run(run())
        except Defect as d:
            return ("defect", type(d.cause).__name__, d.site)
        if isinstance(out, Err):
            return ("err", type(out.error).__name__, str(out.error), out.state, out.site)
        return out

    impl_c, seen_c = make()
    impl_i, seen_i = make()
    saved = shapes.first
    shapes.first = impl_c
    try:
        with fake_retry_clock() as pauses_c:
            compiled = view(lambda: shapes.retried(St(), value))
    finally:
        shapes.first = saved
    k = lift_step(impl_i, name="first", errors=(Flaky, Fatal), site=shapes.SITE_FIRST, is_async=True)
    with fake_retry_clock() as pauses_i:
        interpreted = view(lambda: k(value).retry(3, on=Flaky, backoff=0.5).run(St()))
    assert compiled == interpreted
    assert seen_c == seen_i and pauses_c == pauses_i


@SETTINGS
@given(st.lists(st.sampled_from(["again", "end", "fatal"]), min_size=1, max_size=6), st.integers(-5, 5))
def test_generated_loop_shape_agrees_with_the_interpreter(script: list[str], value: int) -> None:
    def make() -> Any:
        count = [0]
        fatal = Fatal("fatal")

        def impl(state: St, v: int) -> Outcome[St, Fatal, int | str]:
            count[0] += 1
            what = script[min(count[0], len(script)) - 1]
            state = shapes.noted(state, f"{what} {v}")
            if what == "again":
                return Ok(v + 1, state)
            if what == "end":
                return Ok(f"end {v}", state)
            return Err(fatal, state)

        return impl

    saved = shapes.hop
    shapes.hop = make()
    try:
        try:
            compiled: Any = asyncio.run(shapes.looped(St(), value))
        except Defect as d:  # pragma: no cover - the scripts raise no Defect
            compiled = d
    finally:
        shapes.hop = saved
    k = lift_step(make(), name="hop", errors=(Fatal,), site=shapes.SITE_HOP)
    interpreted = AgentMonad.loop(k, 4, int, shapes.SITE_LOOP)(value).run_sync(St())

    def view(out: Any) -> Any:
        if isinstance(out, Err):
            return (type(out.error).__name__, str(out.error), getattr(out.error, "last", None), out.state, out.site)
        return out

    assert view(compiled) == view(interpreted)
