"""Functor, applicative (sequential ``apply`` and parallel ``par``), monad and
catch/orelse laws of ``AgentMonad``, checked on values AND states over
generated programs and initial states, on the success and the failure track.

docs/language.md §6: when something fails, both sides of a law fail too, possibly
reporting a different one of the failures (that latitude is used only for the
``par`` laws; the sequential laws must agree exactly).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentmonad import AgentMonad, Append, Err, Ok, Sum

SETTINGS = settings(max_examples=100, deadline=None)


@dataclass(frozen=True)
class St:
    log: Annotated[tuple[int, ...], Append] = ()
    n: Annotated[int, Sum] = 0


M = AgentMonad[St, str, Any]

states = st.builds(
    St,
    log=st.lists(st.integers(-5, 5), max_size=3).map(tuple),
    n=st.integers(-100, 100),
)
# one op of a generated program: log k (state change), add k (value change),
# fail k (failure), or fail only when the value is divisible by k
ops = st.one_of(
    st.tuples(st.just("log"), st.integers(-9, 9)),
    st.tuples(st.just("add"), st.integers(-9, 9)),
    st.tuples(st.just("fail"), st.integers(0, 9)),
    st.tuples(st.just("failif"), st.integers(2, 4)),
)
op_lists = st.lists(ops, max_size=4)


def build(op_list: list[tuple[str, int]], start: M) -> M:
    m = start
    for op, k in op_list:
        if op == "log":
            m = m.then(
                lambda v, k=k: AgentMonad.modify(
                    lambda s: St(s.log + (v + k,), s.n + k)
                ).map(lambda _: v)
            )
        elif op == "add":
            m = m.map(lambda v, k=k: v + k)
        elif op == "fail":
            m = m.then(lambda v, k=k: AgentMonad.fail(f"e{k}:{v}"))
        else:
            m = m.then(
                lambda v, k=k: AgentMonad.fail(f"div{k}:{v}") if v % k == 0 else AgentMonad.pure(v)
            )
    return m


progs = st.tuples(st.integers(-20, 20), op_lists).map(lambda p: build(p[1], AgentMonad.pure(p[0])))
arrows = op_lists.map(lambda ops_: (lambda x: build(ops_, AgentMonad.pure(x))))
fns = st.sampled_from([lambda x: x + 1, lambda x: x * 2, lambda x: -x, lambda x: x // 3])


def run(m: M, s: St) -> Any:
    return m.run_sync(s)


def same(a: Any, b: Any) -> None:
    """Sequential laws: identical outcomes (value or error, and state)."""
    assert a == b, (a, b)


def both(a: Any, b: Any) -> None:
    """par laws: equal on success; on failure both fail (maybe differently)."""
    if isinstance(a, Ok) or isinstance(b, Ok):
        assert a == b, (a, b)
    else:
        assert isinstance(a, Err) and isinstance(b, Err)


def compose(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda g: lambda x: f(g(x))


def as_fn(m: M, f: Callable[[Any], Any]) -> M:
    """A program whose value is a function (its effects are m's)."""
    return m.map(lambda a: lambda x: f(x) + a)


# -- functor -----------------------------------------------------------------


@SETTINGS
@given(progs, states)
def test_functor_identity(m: M, s: St) -> None:
    same(run(m.map(lambda x: x), s), run(m, s))


@SETTINGS
@given(progs, fns, fns, states)
def test_functor_composition(m: M, f: Any, g: Any, s: St) -> None:
    same(run(m.map(f).map(g), s), run(m.map(lambda x: g(f(x))), s))


# -- monad -------------------------------------------------------------------


@SETTINGS
@given(st.integers(-20, 20), arrows, states)
def test_monad_left_identity(a: int, f: Any, s: St) -> None:
    same(run(AgentMonad.pure(a).then(f), s), run(f(a), s))


@SETTINGS
@given(progs, states)
def test_monad_right_identity(m: M, s: St) -> None:
    same(run(m.then(AgentMonad.pure), s), run(m, s))


@SETTINGS
@given(progs, arrows, arrows, states)
def test_monad_associativity(m: M, f: Any, g: Any, s: St) -> None:
    same(run(m.then(f).then(g), s), run(m.then(lambda x: f(x).then(g)), s))


@SETTINGS
@given(st.integers(-20, 20), st.lists(arrows, min_size=1, max_size=5), states)
def test_chain_is_then_after_then(a: int, fs: list[Any], s: St) -> None:
    """``chain([f, g, …])(a)`` (the interpreter's ``>>=``, one node) is ``f(a).then(g).then(…)``."""
    program = fs[0](a)
    for f in fs[1:]:
        program = program.then(f)
    chained = AgentMonad.chain(fs)(a)
    same(run(chained, s), run(program, s))
    same(run(chained, s), run(chained, s))  # a program is a value: it runs again the same


# -- sequential applicative (apply) ------------------------------------------


@SETTINGS
@given(progs, states)
def test_apply_identity(v: M, s: St) -> None:
    same(run(AgentMonad.pure(lambda x: x).apply(v), s), run(v, s))


@SETTINGS
@given(fns, st.integers(-20, 20), states)
def test_apply_homomorphism(f: Any, x: int, s: St) -> None:
    same(run(AgentMonad.pure(f).apply(AgentMonad.pure(x)), s), run(AgentMonad.pure(f(x)), s))


@SETTINGS
@given(progs, fns, st.integers(-20, 20), states)
def test_apply_interchange(m: M, f: Any, y: int, s: St) -> None:
    u = as_fn(m, f)
    same(
        run(u.apply(AgentMonad.pure(y)), s),
        run(AgentMonad.pure(lambda h: h(y)).apply(u), s),
    )


@SETTINGS
@given(progs, progs, progs, fns, fns, states)
def test_apply_composition(mu: M, mv: M, w: M, f: Any, g: Any, s: St) -> None:
    u, v = as_fn(mu, f), as_fn(mv, g)
    left = AgentMonad.pure(compose).apply(u).apply(v).apply(w)
    right = u.apply(v.apply(w))
    same(run(left, s), run(right, s))


def test_apply_threads_the_function_state() -> None:
    """The paper's version drops the function flow's state; ours threads it."""
    f = AgentMonad.modify(lambda s: s + ["f"]).map(lambda _: lambda x: x + 1)
    x = AgentMonad.get().then(lambda s: AgentMonad.put(s + ["x"]).map(lambda _: len(s)))
    assert f.apply(x).run_sync([]) == Ok(2, ["f", "x"])


# -- parallel applicative (par) ----------------------------------------------


@SETTINGS
@given(progs, states)
def test_par_identity(v: M, s: St) -> None:
    both(run(AgentMonad.pure(lambda x: x).par_apply(v), s), run(v, s))


@SETTINGS
@given(fns, st.integers(-20, 20), states)
def test_par_homomorphism(f: Any, x: int, s: St) -> None:
    both(
        run(AgentMonad.pure(f).par_apply(AgentMonad.pure(x)), s),
        run(AgentMonad.pure(f(x)), s),
    )


@SETTINGS
@given(progs, fns, st.integers(-20, 20), states)
def test_par_interchange(m: M, f: Any, y: int, s: St) -> None:
    u = as_fn(m, f)
    both(
        run(u.par_apply(AgentMonad.pure(y)), s),
        run(AgentMonad.pure(lambda h: h(y)).par_apply(u), s),
    )


@SETTINGS
@given(progs, progs, progs, fns, fns, states)
def test_par_composition(mu: M, mv: M, w: M, f: Any, g: Any, s: St) -> None:
    u, v = as_fn(mu, f), as_fn(mv, g)
    left = AgentMonad.pure(compose).par_apply(u).par_apply(v).par_apply(w)
    right = u.par_apply(v.par_apply(w))
    both(run(left, s), run(right, s))


@SETTINGS
@given(progs, progs, states)
def test_par_failure_side_fails_both(a: M, b: M, s: St) -> None:
    """A failing branch makes the group fail whichever side it is on."""
    failing = a.then(lambda _: AgentMonad.fail("boom"))
    assert isinstance(run(AgentMonad.par([failing, b]), s), Err)
    assert isinstance(run(AgentMonad.par([b, failing]), s), Err)


# -- catch / orelse ----------------------------------------------------------


@SETTINGS
@given(st.integers(-20, 20), arrows, states)
def test_catch_after_pure_is_pure(a: int, h: Any, s: St) -> None:
    same(run(AgentMonad.pure(a).catch(str, lambda e: h(len(e))), s), run(AgentMonad.pure(a), s))


@SETTINGS
@given(st.text(max_size=5), arrows, states)
def test_catch_after_fail_is_the_handler(e: str, h: Any, s: St) -> None:
    handler = lambda err: h(len(err))  # noqa: E731
    same(run(AgentMonad.fail(e).catch(str, handler), s), run(handler(e), s))


@SETTINGS
@given(progs, arrows, states)
def test_catch_sees_state_at_failure(m: M, h: Any, s: St) -> None:
    caught = run(m.catch(str, lambda e: h(len(e))), s)
    plain = run(m, s)
    if isinstance(plain, Ok):
        assert caught == plain
    else:
        assert caught == run(h(len(plain.error)), plain.state)


@SETTINGS
@given(st.integers(-20, 20), progs, states)
def test_orelse_laws(a: int, n: M, s: St) -> None:
    same(run(AgentMonad.pure(a).orelse(n), s), run(AgentMonad.pure(a), s))
    same(run(AgentMonad.fail("x").orelse(n), s), run(n, s))


def test_catch_does_not_catch_other_types() -> None:
    out = AgentMonad.fail(KeyError("k")).catch(ValueError, lambda e: AgentMonad.pure(1)).run_sync(0)
    assert isinstance(out, Err) and isinstance(out.error, KeyError)


@SETTINGS
@given(progs, states)
def test_local_restores_state(m: M, s: St) -> None:
    out = run(m.local(), s)
    plain = run(m, s)
    assert out.state == s
    if isinstance(plain, Ok):
        assert isinstance(out, Ok) and out.value == plain.value
    else:
        assert isinstance(out, Err) and out.error == plain.error
