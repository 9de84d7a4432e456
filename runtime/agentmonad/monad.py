"""``AgentMonad[S, E, A]``: a lazy computation ``S -> IO (Outcome[S, E, A])``.

This is the reference interpreter, the oracle that compiled code is tested
against: it is written to be read first. Accepted plans run on it too, so its
loop's hot path (a ``then`` onto a step) is also written to be fast.

A program is a tree of small typed nodes (``_Pure``, ``_Bind``, ``_Step``, …),
built by the combinators and run by ``_interpret``: one loop with an explicit
stack of frames. The loop descends to a leaf, runs it to an ``Outcome``, then
pops frames until one of them gives the next program to run. Nothing recurses
on the Python stack, so a chain of 100,000 binds or a 10,000-deep nesting of
``then``/``catch``/``orelse``/``local``/``map`` runs in constant Python stack
depth (the paper's nested-closure design overflows at about 1,000). Only
``par``/``each`` branches run in nested interpreter calls, one per branch task.

What each frame does with an outcome is written once, in the unwinding half
of ``_interpret``'s loop:

- ``then`` (``_Bind``): on success, the continuation gives the next program;
  a failure passes by (short-circuit).
- ``chain`` (``_Link``): on success, the next arrow gives the next program
  (the frame stays on the stack while arrows remain); a failure passes by.
- ``map``: on success, the function maps the value; a failure passes by.
- ``catch``: a failure whose error is an instance of the listed types runs the
  handler, with the state at the failure; anything else passes by.
- ``orelse``: any failure runs the alternative, with the state at the failure.
- ``local`` (``_Restore``): success or failure, the state goes back to the one
  ``local`` started with.
- ``retry`` (``_Attempt``): a failure whose error is retryable, with attempts
  left, runs the same program again (after ``control.retry_pause``), from the
  state at the failure; anything else passes by.
- ``loop`` (``_Round``): a success whose value continues the loop runs the
  body again on it, until the value ends the loop or the runs are used up
  (``LoopExhausted``); a failure passes by. Iterations reuse one frame, so a
  loop of any length runs in constant stack.
- ``timeout`` (``_Timed``): the deadline (``control.Deadline``) is left,
  and the outcome passes by.
- ``budget`` (``_Budgeted``): the token budget (``llm.usage.Budget``) is
  left; should it find itself spent as it closes, the outcome becomes
  ``Err(BudgetExceeded(N, used), state, site)`` with the outcome's state.

A ``timeout`` and a ``budget`` are the constructs that need the stack when an
*exception* ends the run: the deadline (or the spent budget) cancels the task,
the cancellation leaves whatever leaf was awaiting, and ``_escape`` pops frames
down to the ``_Timed`` (``_Budgeted``) one, leaving every deadline and budget on
the way. If that deadline's own cancellation becomes its ``TimeoutError``, the
exception turns into ``Err(Timeout(S), state, site)`` (a budget's, into
``Err(BudgetExceeded(N, used), state, site)``) and unwinding goes on as for any
failure; the state is the one the body had reached (the state the interrupted
leaf started from, or the start state of a ``local`` that was in progress,
which gives back its start state on any failure), as in the generated code,
which keeps the state after the last step that completed. Any other exception
(a Defect, an outer cancellation) leaves every deadline and budget and
propagates.

>>> prog = AgentMonad.get().then(lambda n: AgentMonad.put(n + 1)).map(lambda _: "done")
>>> prog.run_sync(41)
Ok(value='done', state=42)
>>> AgentMonad.fail("nope").catch(str, lambda e: AgentMonad.pure(e.upper())).run_sync(0)
Ok(value='NOPE', state=0)
>>> count_to_3 = AgentMonad.loop(lambda n: AgentMonad.pure(n + 1 if n < 3 else "done"), 10, int)
>>> count_to_3(0).run_sync(None)
Ok(value='done', state=None)
"""

from __future__ import annotations

import asyncio
import math
from contextvars import Token
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Never, TypeAlias, TypeVar, assert_never, cast, final

from ._show import callable_name, short_repr
from .concurrency import elements_start, run_group
from .contract import fn_defect, raised, stop
from .context import EffectKind, RunContext, current_run_context
from .effects import perform, perform_sync
from .observe import RUN_SINKS, run_observed
from .control import Deadline, forget_failure, remember_failure, retry_pause
from .errors import Defect, LoopExhausted, Timeout
from .errors import BudgetExceeded
from .usage import Budget
from .merge import merge_states
from .outcome import Err, Ok, Outcome, Site

__all__ = ["AgentMonad", "StepSpec", "FnSpec"]

_S = TypeVar("_S")
_E_co = TypeVar("_E_co", covariant=True)
_A_co = TypeVar("_A_co", covariant=True)
_E = TypeVar("_E")
_E2 = TypeVar("_E2")
_E3 = TypeVar("_E3")
_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C")

_MergeFn: TypeAlias = Callable[[_S, Sequence[_S]], _S]


class AgentMonad(Generic[_S, _E_co, _A_co]):
    """A lazy, stack-safe computation over state ``S`` that fails with ``E``
    or succeeds with ``A``. Nothing runs until ``run``/``run_sync``.

    ``S`` is invariant (``get`` and ``put`` both touch it); ``E`` and ``A`` are
    covariant, so ``AgentMonad[S, Never, int]`` is an ``AgentMonad[S, E, object]``.
    """

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The node classes below are the only subclasses: the interpreter's
        # dispatch is over exactly them (``_Node``), checked exhaustively.
        super().__init_subclass__(**kwargs)
        if cls.__module__ != __name__:
            raise TypeError(
                "AgentMonad cannot be subclassed: build programs with its constructors and combinators"
            )

    # -- constructors ----------------------------------------------------------

    @staticmethod
    def pure(value: _B) -> AgentMonad[_S, Never, _B]:
        """Succeed with ``value``, leaving the state alone.

        >>> AgentMonad.pure(None).run_sync("s")
        Ok(value=None, state='s')
        """
        return _Pure(value)

    @staticmethod
    def fail(error: _E, site: Site | None = None) -> AgentMonad[_S, _E, Never]:
        """Fail with ``error`` (the state at the failure is the current one).

        >>> AgentMonad.fail("no").run_sync(1)
        Err(error='no', state=1, site=None)
        """
        return _Fail(error, site)

    @staticmethod
    def get() -> AgentMonad[_S, Never, _S]:
        """Succeed with the current state."""
        return _Get()

    @staticmethod
    def put(state: _S) -> AgentMonad[_S, Never, None]:
        """Replace the state; succeed with ``None``."""
        return _Put(state)

    @staticmethod
    def modify(f: Callable[[_S], _S]) -> AgentMonad[_S, Never, None]:
        """Replace the state with ``f(state)``; succeed with ``None``.

        >>> AgentMonad.modify(lambda s: s * 2).run_sync(21)
        Ok(value=None, state=42)
        """
        return _Modify(f)

    @staticmethod
    def par(
        branches: Sequence[AgentMonad[_S, _E, _B]],
        *,
        merge: Callable[[_S, Sequence[_S]], _S] | None = merge_states,
        site: Site | None = None,
    ) -> AgentMonad[_S, _E, tuple[_B, ...]]:
        """Run ``branches`` concurrently from the same state (docs/language.md §6).

        Fail-fast with cancellation; outputs in source order; states combined
        with ``merge`` (default: the three-way by-field ``merge_states``;
        ``None`` keeps the input state). A failed merge is
        ``Err(MergeConflict(...), S0)``.

        >>> AgentMonad.par([AgentMonad.pure(1), AgentMonad.pure(2)]).run_sync(0)
        Ok(value=(1, 2), state=0)
        """
        return _Par(tuple(branches), merge, site)

    @staticmethod
    def each(
        values: Sequence[_A],
        body: Callable[[_A], AgentMonad[_S, _E, _B]],
        *,
        limit: int | None = None,
        merge: Callable[[_S, Sequence[_S]], _S] | None = merge_states,
        site: Site | None = None,
    ) -> AgentMonad[_S, _E, list[_B]]:
        """Traverse ``values`` with ``body`` concurrently, at most ``limit`` at
        once: ``par`` over the elements, outputs in list order.

        >>> AgentMonad.each([1, 2, 3], lambda x: AgentMonad.pure(x * 10), limit=2).run_sync(0)
        Ok(value=[10, 20, 30], state=0)
        """
        if limit is not None and limit < 1:
            raise ValueError(f"each: limit must be at least 1, got {limit}")
        return _Each(tuple(values), body, limit, merge, site)

    # -- combinators -------------------------------------------------------------

    def map(self, f: Callable[[_A_co], _B]) -> AgentMonad[_S, _E_co, _B]:
        """Apply a pure function to the success value (an exception is a Defect)."""
        return _Map(self, f)

    def then(
        self, k: Callable[[_A_co], AgentMonad[_S, _E, _B]]
    ) -> AgentMonad[_S, _E_co | _E, _B]:
        """Bind: run ``k`` on the success value, with the state after ``self``.
        A failure short-circuits: ``k`` does not run.

        >>> AgentMonad.pure(2).then(lambda x: AgentMonad.pure(x + 1)).run_sync(0)
        Ok(value=3, state=0)
        """
        return _Bind(self, k)

    @staticmethod
    def chain(
        arrows: Sequence[Callable[[Any], AgentMonad[_S, _E, Any]]],
    ) -> Callable[[Any], AgentMonad[_S, _E, Any]]:
        """The Kleisli composition of ``arrows``, the language's ``a >>= b >>= c``:
        ``chain([f, g, h])(v)`` is ``f(v).then(g).then(h)``, made as one node
        instead of one per ``then`` (the reference interpreter, which plans run
        on, builds a chain at each run).

        >>> inc = lambda x: AgentMonad.pure(x + 1)
        >>> AgentMonad.chain([inc, inc, inc])(0).run_sync(None)
        Ok(value=3, state=None)
        """
        if not arrows:
            raise ValueError("chain: at least one arrow is needed")
        composed = tuple(arrows)

        def chained(value: Any) -> AgentMonad[_S, _E, Any]:
            return _Chain(composed, value)

        return chained

    def apply(
        self: AgentMonad[_S, _E_co, Callable[[_A], _B]],
        arg: AgentMonad[_S, _E, _A],
    ) -> AgentMonad[_S, _E_co | _E, _B]:
        """Sequential applicative ``<*>``: ``self``'s effects first, then
        ``arg``'s, threading the state through both.

        >>> inc = AgentMonad.modify(lambda s: s + 1)
        >>> f = inc.map(lambda _: lambda x: x * 2)
        >>> f.apply(inc.map(lambda _: 21)).run_sync(0)
        Ok(value=42, state=2)
        """

        def applied(f: Callable[[_A], _B]) -> AgentMonad[_S, _E, _B]:
            return arg.map(f)

        return self.then(applied)

    def gather(self, other: AgentMonad[_S, _E, _B]) -> AgentMonad[_S, _E_co | _E, tuple[_A_co, _B]]:
        """``par`` of two: both from the same state, outputs as a pair."""
        pair: AgentMonad[_S, _E_co | _E, tuple[Any, ...]] = _Par((self, other), merge_states, None)
        return cast(AgentMonad[_S, _E_co | _E, tuple[_A_co, _B]], pair)

    def par_apply(
        self: AgentMonad[_S, _E_co, Callable[[_A], _B]],
        arg: AgentMonad[_S, _E, _A],
        *,
        merge: Callable[[_S, Sequence[_S]], _S] | None = merge_states,
    ) -> AgentMonad[_S, _E_co | _E, _B]:
        """Parallel applicative ``<*>`` (like Haskell's ``Concurrently``):
        function and argument run concurrently from the same state, and the
        states merge."""
        pair: AgentMonad[_S, _E_co | _E, tuple[Any, ...]] = _Par((self, arg), merge, None)
        return pair.map(_apply_pair)

    def catch(
        self,
        errors: type[_E2] | tuple[type[_E2], ...],
        handler: Callable[[_E2], AgentMonad[_S, _E, _B]],
    ) -> AgentMonad[_S, _E_co | _E, _A_co | _B]:
        """If ``self`` fails with an instance of ``errors``, run ``handler`` on
        the error with the state at the failure (no rollback). Defects pass."""
        types = errors if isinstance(errors, tuple) else (errors,)
        return _Catch(self, types, handler)

    def orelse(self, other: AgentMonad[_S, _E, _B]) -> AgentMonad[_S, _E, _A_co | _B]:
        """If ``self`` fails with any error, run ``other`` with the state at the
        failure. (For ``e orelse f`` on input ``a``, pass ``f(a)``: programs are
        lazy, so building it costs nothing until it runs.)"""
        return _OrElse(self, other)

    def local(self) -> AgentMonad[_S, _E_co, _A_co]:
        """Run ``self`` and then restore the state it started with, on success
        and on failure.

        >>> AgentMonad.put(5).local().run_sync(1)
        Ok(value=None, state=1)
        """
        return _Local(self)

    def retry(
        self,
        n: int,
        on: type | tuple[type, ...] | None = None,
        backoff: float = 0.5,
    ) -> AgentMonad[_S, _E_co, _A_co]:
        """``retry(n, on=…, backoff=…) e`` (docs/language.md §6): at most ``n`` runs of
        ``self`` in all.

        When a run fails with an error that is an instance of ``on`` (``None``:
        any error) and runs remain, ``self`` runs again — on the same input, since
        a program holds its input — from the state at the failure, after
        ``await control.retry_pause(k, backoff)`` (k = the run that failed).
        Other errors, and the ``n``-th failure, propagate as they are; a Defect
        propagates at once. ``backoff=0`` retries without waiting.

        >>> tries = []
        >>> def flaky(state: int, value: str) -> Outcome[int, str, str]:
        ...     tries.append(value)
        ...     return Err("busy", state + 1) if len(tries) < 3 else Ok(value, state)
        >>> from agentmonad.steps import lift_step
        >>> lift_step(flaky, name="flaky", errors=(str,))("q").retry(5, backoff=0).run_sync(0)
        Ok(value='q', state=2)
        """
        if n < 1:
            raise ValueError(f"retry: n must be at least 1, got {n}")
        if not (math.isfinite(backoff) and backoff >= 0):
            raise ValueError(f"retry: backoff must be a finite number of seconds >= 0, got {backoff}")
        types = on if on is None or isinstance(on, tuple) else (on,)
        return _Retry(self, n, types, backoff)

    def timeout(self, seconds: float, site: Site | None = None) -> AgentMonad[_S, _E_co | Timeout, _A_co]:
        """``timeout(seconds) e`` (docs/language.md §6): if ``self`` has not finished
        ``seconds`` after it started, it is cancelled like a losing ``par``
        branch and the result is ``Err(Timeout(seconds), state, site)``.

        The state is the one after the last step inside that completed (the
        input state if none did), as the body would have reported a failure at
        the point it was interrupted: a ``par``/``each`` in progress has not
        completed (its branches' states are dropped, as for losing branches),
        and a ``local`` in progress gives back the state it started from. A
        running sync step is not interrupted: the deadline lands at the next
        await. A Defect raised while the body is cancelled propagates instead.
        Uses :class:`agentmonad.control.Deadline`, as generated code does.

        >>> AgentMonad.put(1).timeout(5).run_sync(0)  # in time: the same as without
        Ok(value=None, state=1)
        """
        if not seconds > 0:
            raise ValueError(f"timeout: seconds must be > 0, got {seconds}")
        return _Timeout(self, seconds, site)

    def budget(self, tokens: int, site: Site | None = None) -> AgentMonad[_S, _E_co | BudgetExceeded, _A_co]:
        """``budget(N) e`` (docs/language.md §10): ``self`` runs inside
        ``agentmonad.llm.budget(tokens)``; once the model tokens used inside
        pass ``tokens``, what is in flight is cancelled and the result is
        ``Err(BudgetExceeded(tokens, used), state, site)``.

        The state is the one after the last step inside that completed, as for
        ``timeout`` (and as the generated code reports it): a failed step keeps
        the state it failed with. When the body ends before the cancellation
        arrives (a step recorded the tokens itself and nothing awaited after
        it), its outcome is replaced by that failure, with the outcome's state.

        >>> AgentMonad.put(1).budget(10).run_sync(0)  # no model call: the same as without
        Ok(value=None, state=1)
        """
        if type(tokens) is not int or tokens < 0:
            raise ValueError(f"budget: tokens must be an int >= 0, got {tokens!r}")
        return _Budget(self, tokens, site)

    @staticmethod
    def loop(
        body: Callable[[_A], AgentMonad[_S, _E, _B]],
        n: int,
        continues: type | tuple[type, ...] | Callable[[Any], bool],
        site: Site | None = None,
    ) -> Callable[[_A], AgentMonad[_S, _E | LoopExhausted, _B]]:
        """``loop(n) e`` (docs/language.md §6) as a Kleisli arrow, from e's arrow ``body``.

        On an input, ``body`` runs on it; while its result *continues* and fewer
        than ``n`` runs were made, ``body`` runs again on that result, with the
        state threaded through. The first result that does not continue ends the
        loop with that value. If the ``n``-th result still continues, the loop
        fails with ``LoopExhausted(iterations=n, last=that value)`` and the state
        at that point (``site`` attached). A failure of ``body`` ends the loop at
        once. ``continues`` is the loop's input type as a class or a tuple of
        classes (an ``isinstance`` test) or a predicate (for ``None``, literals:
        anything an ``isinstance`` cannot say); a predicate that raises is a
        Defect. Runs in constant stack for any ``n``.

        >>> halve = AgentMonad.loop(lambda x: AgentMonad.pure(x // 2 if x > 1 else str(x)), 3, int)
        >>> halve(4).run_sync(None), halve(64).run_sync(None)
        (Ok(value='1', state=None), Err(error=LoopExhausted(iterations=3, last=8), state=None, site=None))
        """
        if n < 1:
            raise ValueError(f"loop: n must be at least 1, got {n}")
        test: tuple[type, ...] | Callable[[Any], bool]
        if isinstance(continues, tuple):
            test = continues
        elif isinstance(continues, type):  # a class is callable too: test it with isinstance
            test = (continues,)
        else:
            test = continues

        def looped(value: _A) -> AgentMonad[_S, _E | LoopExhausted, _B]:
            return _Loop(body, value, n, test, site)

        return looped

    @staticmethod
    def branch(
        test: Callable[[_A], AgentMonad[_S, _E, bool]],
        then: Callable[[_A], AgentMonad[_S, _E2, _B]],
        otherwise: Callable[[_A], AgentMonad[_S, _E3, _C]],
    ) -> Callable[[_A], AgentMonad[_S, _E | _E2 | _E3, _B | _C]]:
        """``if p then e1 else e2`` (docs/language.md §6) as a Kleisli arrow: ``test``
        runs on the input; the branch it chooses runs on the *original* input,
        with the state ``test`` left. A true result (Python truthiness, as the
        generated ``if`` tests it) chooses ``then``.

        >>> sign = AgentMonad.branch(
        ...     lambda x: AgentMonad.pure(x >= 0),
        ...     lambda x: AgentMonad.pure("+"),
        ...     lambda x: AgentMonad.pure(-x),
        ... )
        >>> sign(3).run_sync(None), sign(-3).run_sync(None)
        (Ok(value='+', state=None), Ok(value=3, state=None))
        """

        def branched(value: _A) -> AgentMonad[_S, _E | _E2 | _E3, _B | _C]:
            def choose(chosen: bool) -> AgentMonad[_S, _E2 | _E3, _B | _C]:
                if chosen:
                    return then(value)
                return otherwise(value)

            return test(value).then(choose)

        return branched

    # -- running -----------------------------------------------------------------

    async def run(self, state: _S) -> Outcome[_S, _E_co, _A_co]:
        """Run from ``state``; awaitable. Defects propagate as exceptions.

        With an event sink attached or a process-wide run sink (``agentmonad.otel.instrument``)
        and no run open yet, the run is told to it (``RunStarted``/``RunEnded``,
        :func:`agentmonad.observe.run_observed`)."""
        if RUN_SINKS or current_run_context().events is not None:
            return await run_observed("program", None, lambda: _interpret(self, state))
        return await _interpret(self, state)

    def run_sync(self, state: _S) -> Outcome[_S, _E_co, _A_co]:
        """Run from ``state`` on a fresh event loop (``asyncio.run``).

        Raises ``RuntimeError`` inside a running loop: ``await prog.run(s)`` there.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_interpret(self, state))
        raise RuntimeError("run_sync() inside a running event loop; use `await prog.run(state)`")


def _apply_pair(pair: tuple[Any, ...]) -> Any:
    return pair[0](pair[1])


# -- lifted implementations -------------------------------------------------------


@final
class StepSpec(Generic[_S, _A, _E, _B]):
    """A lifted ``step``: calling it with a value gives the program that runs
    the step on that value (a Kleisli arrow ``A -> AgentMonad[S, E, B]``).

    ``impl`` is typed to return ``object`` on purpose: what it really returns
    is checked when it runs (docs/language.md §3, ``contract.stop``).
    """

    __slots__ = ("impl", "name", "errors", "site", "is_async", "kind", "__weakref__")

    def __init__(
        self,
        impl: Callable[[_S, _A], object],
        name: str,
        errors: tuple[type, ...],
        site: Site,
        is_async: bool,
        kind: EffectKind | None = "step",
    ) -> None:
        self.impl = impl
        self.name = name
        self.errors = errors
        self.site = site
        self.is_async = is_async
        #: What effect a call is, for the hooks (:mod:`agentmonad.effects`): a user step, a tool, a model;
        #: ``None``, none: a construct the interpreter runs as a step (``spawn``) whose planner and
        #: plan make the effects, as in compiled code.
        self.kind: EffectKind | None = kind

    def __call__(self, value: _A) -> AgentMonad[_S, _E, _B]:
        return _Step(self, value)

    def __repr__(self) -> str:
        return f"<step {self.name} at {self.site.location}>"


@final
class FnSpec(Generic[_S, _A, _B]):
    """A lifted ``fn``: calling it with a value gives the program applying it."""

    __slots__ = ("impl", "name", "site", "__weakref__")

    def __init__(self, impl: Callable[[_A], _B], name: str, site: Site) -> None:
        self.impl = impl
        self.name = name
        self.site = site

    def __call__(self, value: _A) -> AgentMonad[_S, Never, _B]:
        return _FnCall(self, value)

    def __repr__(self) -> str:
        return f"<fn {self.name} at {self.site.location}>"


# -- nodes ------------------------------------------------------------------------
# Plain slotted classes, one per construct. Leaves run to an Outcome; the other
# nodes push themselves (or a _Restore) as a frame and descend into ``m``.


@final
class _Pure(AgentMonad[_S, Never, _A]):
    __slots__ = ("value",)

    def __init__(self, value: _A) -> None:
        self.value = value


@final
class _Fail(AgentMonad[_S, _E, Never]):
    __slots__ = ("error", "site")

    def __init__(self, error: _E, site: Site | None) -> None:
        self.error = error
        self.site = site


@final
class _Get(AgentMonad[_S, Never, _S]):
    __slots__ = ()


@final
class _Put(AgentMonad[_S, Never, None]):
    __slots__ = ("state",)

    def __init__(self, state: _S) -> None:
        self.state = state


@final
class _Modify(AgentMonad[_S, Never, None]):
    __slots__ = ("f",)

    def __init__(self, f: Callable[[_S], _S]) -> None:
        self.f = f


@final
class _Step(AgentMonad[_S, _E, _B], Generic[_S, _A, _E, _B]):
    __slots__ = ("spec", "value")

    def __init__(self, spec: StepSpec[_S, _A, _E, _B], value: _A) -> None:
        self.spec = spec
        self.value = value


@final
class _FnCall(AgentMonad[_S, Never, _B], Generic[_S, _A, _B]):
    __slots__ = ("spec", "value")

    def __init__(self, spec: FnSpec[_S, _A, _B], value: _A) -> None:
        self.spec = spec
        self.value = value


@final
class _Par(AgentMonad[_S, _E, tuple[_A, ...]]):
    """``par``: every branch from the same state, outputs as a tuple."""

    __slots__ = ("branches", "merge", "site")

    def __init__(
        self,
        branches: tuple[AgentMonad[_S, _E, _A], ...],
        merge: _MergeFn[_S] | None,
        site: Site | None,
    ) -> None:
        self.branches = branches
        self.merge = merge
        self.site = site


@final
class _Each(AgentMonad[_S, _E, list[_B]], Generic[_S, _E, _A, _B]):
    """``each``: ``body`` on every value, at most ``limit`` at once, outputs as a list."""

    __slots__ = ("values", "body", "limit", "merge", "site")

    def __init__(
        self,
        values: tuple[_A, ...],
        body: Callable[[_A], AgentMonad[_S, _E, _B]],
        limit: int | None,
        merge: _MergeFn[_S] | None,
        site: Site | None,
    ) -> None:
        self.values = values
        self.body = body
        self.limit = limit
        self.merge = merge
        self.site = site


@final
class _Map(AgentMonad[_S, _E, _B], Generic[_S, _E, _A, _B]):
    __slots__ = ("m", "f")

    def __init__(self, m: AgentMonad[_S, _E, _A], f: Callable[[_A], _B]) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.f = f


@final
class _Bind(AgentMonad[_S, _E, _B], Generic[_S, _E, _A, _B]):
    __slots__ = ("m", "k")

    def __init__(self, m: AgentMonad[_S, _E, _A], k: Callable[[_A], AgentMonad[_S, _E, _B]]) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.k = k


@final
class _Chain(AgentMonad[_S, _E, Any]):
    """``chain``: ``arrows[0]`` on ``value``, then each next arrow on the value before."""

    __slots__ = ("arrows", "value")

    def __init__(self, arrows: tuple[Callable[[Any], AgentMonad[_S, _E, Any]], ...], value: object) -> None:
        self.arrows = arrows
        self.value = value


@final
class _Link:
    """The frame of a ``chain`` in a run: the arrows still to run, the next one last."""

    __slots__ = ("rest",)

    def __init__(self, rest: list[Callable[[Any], AgentMonad[Any, Any, Any]]]) -> None:
        self.rest = rest


@final
class _Catch(AgentMonad[_S, _E, _A]):
    __slots__ = ("m", "types", "handler")

    def __init__(
        self,
        m: AgentMonad[_S, _E, _A],
        types: tuple[type, ...],
        handler: Callable[[Any], AgentMonad[_S, _E, _A]],
    ) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.types = types
        self.handler = handler


@final
class _OrElse(AgentMonad[_S, _E, _A]):
    __slots__ = ("m", "alt")

    def __init__(self, m: AgentMonad[_S, object, _A], alt: AgentMonad[_S, _E, _A]) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.alt = alt


@final
class _Local(AgentMonad[_S, _E, _A]):
    __slots__ = ("m",)

    def __init__(self, m: AgentMonad[_S, _E, _A]) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)


@final
class _Restore:
    """The frame of a ``local``: the state to go back to."""

    __slots__ = ("state",)

    def __init__(self, state: object) -> None:
        self.state = state


@final
class _Retry(AgentMonad[_S, _E, _A]):
    """``retry``: ``m`` at most ``n`` times; ``on`` the retryable errors (``None``: all)."""

    __slots__ = ("m", "n", "on", "backoff")

    def __init__(self, m: AgentMonad[_S, _E, _A], n: int, on: tuple[type, ...] | None, backoff: float) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.n = n
        self.on = on
        self.backoff = backoff


@final
class _Timeout(AgentMonad[_S, _E, _A]):
    __slots__ = ("m", "seconds", "site")

    def __init__(self, m: AgentMonad[_S, Any, _A], seconds: float, site: Site | None) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.seconds = seconds
        self.site = site


@final
class _Budget(AgentMonad[_S, _E, _A]):
    __slots__ = ("m", "tokens", "site")

    def __init__(self, m: AgentMonad[_S, Any, _A], tokens: int, site: Site | None) -> None:
        self.m: _Node = cast("_Node", m)  # every program is a node (``_as_node``)
        self.tokens = tokens
        self.site = site


@final
class _Loop(AgentMonad[_S, _E, _B]):
    """``loop``: ``body`` on ``value``, again on every result that passes ``test``, at most ``n`` runs."""

    __slots__ = ("body", "value", "n", "test", "site")

    def __init__(
        self,
        body: Callable[[Any], AgentMonad[_S, Any, Any]],
        value: object,
        n: int,
        test: tuple[type, ...] | Callable[[Any], bool],
        site: Site | None,
    ) -> None:
        self.body = body
        self.value = value
        self.n = n
        self.test = test
        self.site = site


@final
class _Pause(AgentMonad[Any, Any, Any]):
    """Internal, between two attempts of a ``retry``: wait, then run ``next``."""

    __slots__ = ("attempt", "backoff", "next")

    def __init__(self, attempt: int, backoff: float, next: AgentMonad[Any, Any, Any]) -> None:
        self.attempt = attempt
        self.backoff = backoff
        self.next: _Node = cast("_Node", next)


@final
class _Attempt:
    """The frame of a ``retry``: which attempt is running (1-based)."""

    __slots__ = ("retry", "attempt", "remembered")

    def __init__(self, retry: _Retry[Any, Any, Any], attempt: int) -> None:
        self.retry = retry
        self.attempt = attempt
        #: undoes the failures this retry showed its later attempts (``control.remember_failure``)
        self.remembered: Token[RunContext] | None = None


@final
class _Round:
    """The frame of a ``loop``: how many runs of the body have started."""

    __slots__ = ("loop", "runs")

    def __init__(self, loop: _Loop[Any, Any, Any], runs: int) -> None:
        self.loop = loop
        self.runs = runs


@final
class _Timed:
    """The frame of a ``timeout``: its entered deadline."""

    __slots__ = ("timeout", "deadline")

    def __init__(self, timeout: _Timeout[Any, Any, Any], deadline: Deadline) -> None:
        self.timeout = timeout
        self.deadline = deadline


@final
class _Budgeted:
    """The frame of a ``budget``: its entered token budget."""

    __slots__ = ("node", "budget")

    def __init__(self, node: _Budget[Any, Any, Any], budget: Budget) -> None:
        self.node = node
        self.budget = budget


@final
class _Leave(AgentMonad[Any, Any, Any]):
    """Internal, what unwinding gives at a ``_Timed`` or ``_Budgeted`` frame:
    leave the deadline or budget (an ``await``, so the main loop does it), then
    go on unwinding ``outcome`` as the result of this node (for a budget found
    spent as it closes, ``BudgetExceeded`` at ``site`` with the outcome's state)."""

    __slots__ = ("guard", "outcome", "site")

    def __init__(self, guard: Deadline | Budget, outcome: Outcome[Any, Any, Any], site: Site | None = None) -> None:
        self.guard = guard
        self.outcome = outcome
        self.site = site


_Node: TypeAlias = (
    "_Pure[Any, Any] | _Fail[Any, Any] | _Get[Any] | _Put[Any] | _Modify[Any]"
    " | _Step[Any, Any, Any, Any] | _FnCall[Any, Any, Any] | _Par[Any, Any, Any] | _Each[Any, Any, Any, Any]"
    " | _Map[Any, Any, Any, Any] | _Bind[Any, Any, Any, Any] | _Chain[Any, Any] | _Catch[Any, Any, Any]"
    " | _OrElse[Any, Any, Any] | _Local[Any, Any, Any]"
    " | _Retry[Any, Any, Any] | _Timeout[Any, Any, Any] | _Budget[Any, Any, Any] | _Loop[Any, Any, Any]"
    " | _Pause | _Leave"
)
_Frame: TypeAlias = (
    "_Map[Any, Any, Any, Any] | _Bind[Any, Any, Any, Any] | _Catch[Any, Any, Any] | _OrElse[Any, Any, Any] | _Restore"
    " | _Link | _Attempt | _Round | _Timed | _Budgeted"
)

def _as_node(program: AgentMonad[Any, Any, Any]) -> _Node:
    """Every ``AgentMonad`` is one of the nodes (``__init_subclass__`` sees to it)."""
    return cast(_Node, program)


# -- the interpreter ----------------------------------------------------------------


def _node(program: object, source: object, state: object) -> _Node:
    """What a continuation or handler ``source`` returned, as a node; anything
    that is not a program is a Defect of ``source``."""
    if isinstance(program, AgentMonad):
        return _as_node(program)
    name = callable_name(source) if source is not None else "<program>"
    raise Defect(name, state, reason=lambda: f"{short_repr(program)} is not an AgentMonad program")


def _continue(k: Callable[[Any], object], value: object, state: object) -> _Node:
    """The program a continuation or handler gives for ``value``."""
    try:
        program = k(value)
    except Exception as exc:
        fn_defect(exc, callable_name(k), state)
    return _node(program, k, state)


async def _interpret(program: AgentMonad[Any, Any, Any], state: Any) -> Outcome[Any, Any, Any]:
    """Run ``program`` from ``state`` with an explicit stack of frames.

    Each turn of the loop has two halves. *Descend*: a wrapper leaves its
    frame on the stack and its inner program runs next; a leaf runs to an
    outcome. *Unwind*: the outcome goes down the stack until a frame gives the
    next program (and the state to run it from); with the stack empty, the
    outcome is the result. An exception from anywhere in a turn goes to
    ``_escape``, which leaves the deadlines on the stack and may turn a
    deadline's own cancellation into a timeout: the next turn then runs
    ``fail(Timeout(S))`` from the state the body reached, which unwinds like
    any other failure. (Nothing of this costs a check per turn: a ``try`` is
    free in Python 3.11 until something raises.)

    A turn is the per-step cost of every interpreted program (a plan's, the
    oracle's), so the loop is written for it: both halves inline in this one
    function; the most frequent nodes and frames (``then``'s ``_Bind``, a
    step, a ``chain``'s ``_Link``) tested with ``type(x) is`` before the
    ``match`` that covers the rest
    (a class pattern that matches costs about 100 ns in CPython 3.11: it
    builds a set and a list); and a step to run held as its ``StepSpec`` in
    ``node`` with its input in ``arg`` (what a ``_Step`` is), so that a
    ``then`` onto a lifted step makes no node. A coroutine per step, a
    function call per unwind, a ``_Step`` per bound step and two matching
    class patterns per turn took a 1,000-step chain from 1.4× to 4.3× the
    hand-written floor (benchmarks/README.md, "The interpreter's per-step cost").
    """
    stack: list[_Frame] = []
    # read once: with no hook attached (the default) each step is a plain call
    run = current_run_context()
    hooked = run.hooked
    node: _Node | StepSpec[Any, Any, Any, Any] = _as_node(program)
    arg: Any = None  # the input of the step to run, when ``node`` is a StepSpec
    while True:
        try:
            outcome: Outcome[Any, Any, Any]
            # -- descend ---------------------------------------------------------
            if type(node) is _Step:
                arg = node.value
                node = node.spec
            if type(node) is StepSpec:
                result: Any
                try:
                    if hooked:  # every effect goes through the seam, with its site
                        result = await _through_seam(run, node, state, arg)
                    else:
                        result = node.impl(state, arg)
                        if node.is_async:
                            result = await result
                except Exception as exc:
                    # the step contract (docs/language.md §3): a declared error is an Err
                    # with the state the step received; anything else, a Defect
                    outcome = raised(exc, node.site, state, node.errors)
                else:
                    outcome = result if isinstance(result, Ok) else stop(result, node.site, node.errors, state=state)
            elif type(node) is _Bind:
                stack.append(node)
                node = node.m
                continue
            else:
                match node:
                    case _Map() | _Catch() | _OrElse():
                        stack.append(node)
                        node = node.m
                        continue
                    case _Chain():
                        if len(node.arrows) > 1:
                            stack.append(_Link(list(reversed(node.arrows[1:]))))
                        node = _continue(node.arrows[0], node.value, state)
                        continue
                    case _Pure():
                        outcome = Ok(node.value, state)
                    case _FnCall():
                        try:
                            # a pure fn is no effect (docs/language.md §14): never through the seam
                            outcome = Ok(node.spec.impl(node.value), state)
                        except Exception as exc:
                            fn_defect(exc, node.spec.site, state)
                    case _Local():
                        stack.append(_Restore(state))
                        node = node.m
                        continue
                    case _Retry():
                        stack.append(_Attempt(node, 1))
                        node = node.m
                        continue
                    case _Loop():
                        stack.append(_Round(node, 1))
                        node = _continue(node.body, node.value, state)
                        continue
                    case _Timeout():
                        deadline = Deadline(node.seconds)
                        await deadline.__aenter__()
                        stack.append(_Timed(node, deadline))
                        node = node.m
                        continue
                    case _Budget():
                        spending = Budget(node.tokens)
                        await spending.__aenter__()
                        stack.append(_Budgeted(node, spending))
                        node = node.m
                        continue
                    case _Pause():
                        await retry_pause(node.attempt, node.backoff)
                        node = node.next
                        continue
                    case _Leave():
                        try:
                            await node.guard.__aexit__(None, None, None)
                        except BudgetExceeded as spent:  # a budget spent by the body's last step
                            outcome = Err(spent, node.outcome.state, node.site)
                        else:
                            outcome = node.outcome
                    case _Fail():
                        outcome = Err(node.error, state, node.site)
                    case _Get():
                        outcome = Ok(state, state)
                    case _Put():
                        outcome = Ok(None, node.state)
                    case _Modify():
                        try:
                            outcome = Ok(None, node.f(state))
                        except Exception as exc:
                            fn_defect(exc, callable_name(node.f), state)
                    case _Par():
                        outcome = await _run_par(node, state)
                    case _Each():
                        outcome = await _run_each(node, state)
                    case _:
                        assert_never(node)
            # -- unwind ----------------------------------------------------------
            # ``state`` changes only with the next program: until then it is the
            # state the outcome's node started from, which ``_escape`` needs.
            while stack:
                frame = stack.pop()
                if type(frame) is _Link or type(frame) is _Bind:
                    if isinstance(outcome, Ok):
                        if type(frame) is _Link:  # a chain's next arrow; the frame stays while more follow
                            k = frame.rest.pop()
                            if frame.rest:
                                stack.append(frame)
                        else:
                            k = frame.k
                        if type(k) is StepSpec:  # a lifted step, the usual continuation: run it next
                            node, arg = k, outcome.value
                        else:
                            node = _continue(k, outcome.value, outcome.state)
                        state = outcome.state
                        break
                    continue
                match frame:
                    case _Map():
                        if isinstance(outcome, Ok):
                            try:
                                value = frame.f(outcome.value)
                            except Exception as exc:
                                fn_defect(exc, callable_name(frame.f), outcome.state)
                            outcome = Ok(value, outcome.state)
                    case _Catch():
                        if isinstance(outcome, Err) and isinstance(outcome.error, frame.types):
                            node = _continue(frame.handler, outcome.error, outcome.state)
                            state = outcome.state
                            break
                    case _OrElse():
                        if isinstance(outcome, Err):
                            node, state = _as_node(frame.alt), outcome.state
                            break
                    case _Restore():
                        if isinstance(outcome, Ok):
                            outcome = Ok(outcome.value, frame.state)
                        else:
                            outcome = Err(outcome.error, frame.state, outcome.site)
                    case _Attempt():
                        retry = frame.retry
                        if (
                            isinstance(outcome, Err)
                            and frame.attempt < retry.n
                            and (retry.on is None or isinstance(outcome.error, retry.on))
                        ):
                            # the frame is this run's own: count the attempt on it and keep it
                            failed = frame.attempt
                            frame.attempt += 1
                            frame.remembered = remember_failure(outcome.error, failed, frame.remembered)
                            stack.append(frame)
                            node, state = _Pause(failed, retry.backoff, retry.m), outcome.state
                            break
                        if frame.remembered is not None:
                            forget_failure(frame.remembered)
                    case _Round():
                        if isinstance(outcome, Ok):
                            loop = frame.loop
                            if _continues(loop, outcome.value, outcome.state):
                                if frame.runs < loop.n:
                                    frame.runs += 1
                                    stack.append(frame)
                                    node = _continue(loop.body, outcome.value, outcome.state)
                                    state = outcome.state
                                    break
                                outcome = Err(LoopExhausted(loop.n, outcome.value), outcome.state, loop.site)
                    case _Timed():
                        # leaving a deadline is an await: the next turn does it (``_Leave``)
                        node, state = _Leave(frame.deadline, outcome), outcome.state
                        break
                    case _Budgeted():
                        node, state = _Leave(frame.budget, outcome, frame.node.site), outcome.state
                        break
                    case _:
                        assert_never(frame)
            else:
                return outcome
        except BaseException as exc:
            # ``state`` is the state the interrupted node started from: after the
            # last leaf that completed. (An exception from a continuation or a
            # handler is a Defect, which no deadline turns into a timeout.)
            escaped = await _escape(stack, exc, state)
            if escaped is exc:
                raise
            if isinstance(escaped, BaseException):
                raise escaped
            node, state = escaped
            continue


def _continues(loop: _Loop[Any, Any, Any], value: object, state: object) -> bool:
    """Whether a loop body's result goes round again (is a value of the loop's input type)."""
    test = loop.test
    if isinstance(test, tuple):
        return isinstance(value, test)
    try:
        return bool(test(value))
    except Exception as exc:
        fn_defect(exc, loop.site if loop.site is not None else callable_name(test), state)


async def _escape(stack: list[_Frame], exc: BaseException, state: Any) -> tuple[_Node, Any] | BaseException:
    """An exception is ending the run: pop frames, leaving every deadline and
    budget on the way, until one deadline turns its own cancellation into a
    timeout (or one budget into ``BudgetExceeded``).

    Returns the program that fails with that ``Timeout(S)`` (``BudgetExceeded``)
    at the ``timeout``'s (``budget``'s) site, and the state to run it from — the rest of the stack then unwinds
    the failure as any other — or, with the stack empty, the exception to
    raise (``exc`` itself, unless leaving a deadline replaced it). The state of
    the timeout is the one the timed body reached: ``state``, or the start state
    of the outermost ``local`` popped on the way (a ``local`` gives back its
    start state on any failure). ``__aexit__`` is exactly what ``async with``
    would call, so a ``Defect`` raised while cancelling passes every deadline
    unchanged and wins, as in groups.
    """
    current = state
    while stack:
        frame = stack.pop()
        match frame:
            case _Restore():
                current = frame.state
            case _Timed():
                try:
                    await frame.deadline.__aexit__(type(exc), exc, exc.__traceback__)
                except TimeoutError:
                    # only this deadline's own cancellation becomes TimeoutError (Deadline)
                    return _Fail(Timeout(frame.timeout.seconds), frame.timeout.site), current
                except BaseException as other:  # pragma: no cover - asyncio's __aexit__ raises nothing else
                    exc = other
            case _Budgeted():
                try:
                    await frame.budget.__aexit__(type(exc), exc, exc.__traceback__)
                except BudgetExceeded as spent:
                    # only this budget's own cancellation becomes BudgetExceeded (Budget.__aexit__)
                    return _Fail(spent, frame.node.site), current
                except BaseException as other:  # pragma: no cover - Budget.__aexit__ raises nothing else
                    exc = other
            case _Attempt():
                if frame.remembered is not None:
                    forget_failure(frame.remembered)
            case _Bind() | _Link() | _Map() | _Catch() | _OrElse() | _Round():
                pass  # an exception passes them: only outcomes are theirs to handle
            case _:
                assert_never(frame)
    return exc


async def _through_seam(run: RunContext, spec: StepSpec[Any, Any, Any, Any], state: Any, arg: Any) -> Any:
    """A step's call through the effect seam (:mod:`agentmonad.effects`): a hook is attached."""
    if spec.kind is None:  # not an effect of its own (see StepSpec.kind)
        result: Any = spec.impl(state, arg)
        return await result if spec.is_async else result
    if spec.is_async:
        return await perform(run, spec.kind, spec.site, lambda: cast(Awaitable[object], spec.impl(state, arg)))
    return perform_sync(run, spec.kind, spec.site, lambda: spec.impl(state, arg))


async def _run_par(node: _Par[Any, Any, Any], state: Any) -> Outcome[Any, Any, tuple[Any, ...]]:
    branches = node.branches
    out = await run_group(state, len(branches), lambda i: _interpret(branches[i], state), None, node.merge, node.site)
    return Ok(tuple(out.value), out.state) if isinstance(out, Ok) else out


async def _run_each(node: _Each[Any, Any, Any, Any], state: Any) -> Outcome[Any, Any, list[Any]]:
    values, body = node.values, node.body
    # The body runs inside its branch, so an exception in it is that branch's
    # Defect, not an escape from the group.
    # a durable run may hand the elements to workers (the interpreter's own body: found there by site)
    start = elements_start(state, values, None, node.limit, node.site)
    if start is None:
        start = lambda i: _interpret(_Bind(_Pure(values[i]), body), state)  # noqa: E731
    return await run_group(state, len(values), start, node.limit, node.merge, node.site)
