"""``AgentMonad[S, E, A]``: a lazy computation ``S -> IO (Outcome[S, E, A])``.

This is the reference interpreter, the oracle that compiled code is tested
against: it is written to be read, not to be fast.

A program is a tree of small typed nodes (``_Pure``, ``_Bind``, ``_Step``, …),
built by the combinators and run by ``_interpret``: one loop with an explicit
stack of frames. The loop descends to a leaf, runs it to an ``Outcome``, then
pops frames until one of them gives the next program to run. Nothing recurses
on the Python stack, so a chain of 100,000 binds or a 10,000-deep nesting of
``then``/``catch``/``orelse``/``local``/``map`` runs in constant Python stack
depth (the paper's nested-closure design overflows at about 1,000). Only
``par``/``each`` branches run in nested interpreter calls, one per branch task.

What each frame does with an outcome is written once, in ``_unwind``:

- ``then`` (``_Bind``): on success, the continuation gives the next program;
  a failure passes by (short-circuit).
- ``map``: on success, the function maps the value; a failure passes by.
- ``catch``: a failure whose error is an instance of the listed types runs the
  handler, with the state at the failure; anything else passes by.
- ``orelse``: any failure runs the alternative, with the state at the failure.
- ``local`` (``_Restore``): success or failure, the state goes back to the one
  ``local`` started with.

>>> prog = AgentMonad.get().then(lambda n: AgentMonad.put(n + 1)).map(lambda _: "done")
>>> prog.run_sync(41)
Ok(value='done', state=42)
>>> AgentMonad.fail("nope").catch(str, lambda e: AgentMonad.pure(e.upper())).run_sync(0)
Ok(value='NOPE', state=0)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, Never, TypeAlias, TypeVar, assert_never, cast, final

from ._show import callable_name, short_repr
from .concurrency import run_group
from .contract import fn_defect, raised, stop
from .errors import Defect
from .merge import merge_states
from .outcome import Err, Ok, Outcome, Site

__all__ = ["AgentMonad", "StepSpec", "FnSpec"]

_S = TypeVar("_S")
_E_co = TypeVar("_E_co", covariant=True)
_A_co = TypeVar("_A_co", covariant=True)
_E = TypeVar("_E")
_E2 = TypeVar("_E2")
_A = TypeVar("_A")
_B = TypeVar("_B")

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
        """Run ``branches`` concurrently from the same state (LANGUAGE.md §6).

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

    # -- running -----------------------------------------------------------------

    async def run(self, state: _S) -> Outcome[_S, _E_co, _A_co]:
        """Run from ``state``; awaitable. Defects propagate as exceptions."""
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
    is checked when it runs (LANGUAGE.md §3, ``contract.stop``).
    """

    __slots__ = ("impl", "name", "errors", "site", "is_async", "__weakref__")

    def __init__(
        self,
        impl: Callable[[_S, _A], object],
        name: str,
        errors: tuple[type, ...],
        site: Site,
        is_async: bool,
    ) -> None:
        self.impl = impl
        self.name = name
        self.errors = errors
        self.site = site
        self.is_async = is_async

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
        self.m = m
        self.f = f


@final
class _Bind(AgentMonad[_S, _E, _B], Generic[_S, _E, _A, _B]):
    __slots__ = ("m", "k")

    def __init__(self, m: AgentMonad[_S, _E, _A], k: Callable[[_A], AgentMonad[_S, _E, _B]]) -> None:
        self.m = m
        self.k = k


@final
class _Catch(AgentMonad[_S, _E, _A]):
    __slots__ = ("m", "types", "handler")

    def __init__(
        self,
        m: AgentMonad[_S, _E, _A],
        types: tuple[type, ...],
        handler: Callable[[Any], AgentMonad[_S, _E, _A]],
    ) -> None:
        self.m = m
        self.types = types
        self.handler = handler


@final
class _OrElse(AgentMonad[_S, _E, _A]):
    __slots__ = ("m", "alt")

    def __init__(self, m: AgentMonad[_S, object, _A], alt: AgentMonad[_S, _E, _A]) -> None:
        self.m = m
        self.alt = alt


@final
class _Local(AgentMonad[_S, _E, _A]):
    __slots__ = ("m",)

    def __init__(self, m: AgentMonad[_S, _E, _A]) -> None:
        self.m = m


@final
class _Restore:
    """The frame of a ``local``: the state to go back to."""

    __slots__ = ("state",)

    def __init__(self, state: object) -> None:
        self.state = state


_Node: TypeAlias = (
    "_Pure[Any, Any] | _Fail[Any, Any] | _Get[Any] | _Put[Any] | _Modify[Any]"
    " | _Step[Any, Any, Any, Any] | _FnCall[Any, Any, Any] | _Par[Any, Any, Any] | _Each[Any, Any, Any, Any]"
    " | _Map[Any, Any, Any, Any] | _Bind[Any, Any, Any, Any] | _Catch[Any, Any, Any]"
    " | _OrElse[Any, Any, Any] | _Local[Any, Any, Any]"
)
_Frame: TypeAlias = (
    "_Map[Any, Any, Any, Any] | _Bind[Any, Any, Any, Any] | _Catch[Any, Any, Any] | _OrElse[Any, Any, Any] | _Restore"
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

    Each turn of the loop looks at one node: a wrapper leaves its frame on the
    stack and its inner program runs next; a leaf runs to an outcome, which
    ``_unwind`` hands down the stack until a frame gives the next program.
    """
    stack: list[_Frame] = []
    node = _as_node(program)
    while True:
        outcome: Outcome[Any, Any, Any]
        match node:
            case _Bind() | _Map() | _Catch() | _OrElse():
                stack.append(node)
                node = _as_node(node.m)
                continue
            case _Local():
                stack.append(_Restore(state))
                node = _as_node(node.m)
                continue
            case _Step():
                outcome = await _run_step(node.spec, node.value, state)
            case _FnCall():
                try:
                    outcome = Ok(node.spec.impl(node.value), state)
                except Exception as exc:
                    fn_defect(exc, node.spec.site, state)
            case _Pure():
                outcome = Ok(node.value, state)
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
        nxt = _unwind(stack, outcome)
        if isinstance(nxt, tuple):
            node, state = nxt
        else:
            return nxt


def _unwind(stack: list[_Frame], outcome: Outcome[Any, Any, Any]) -> Outcome[Any, Any, Any] | tuple[_Node, Any]:
    """Pop frames until one gives the next program (with the state to run it
    from), or the stack is empty and ``outcome`` is the result."""
    while stack:
        frame = stack.pop()
        match frame:
            case _Bind():
                if isinstance(outcome, Ok):
                    return _continue(frame.k, outcome.value, outcome.state), outcome.state
            case _Map():
                if isinstance(outcome, Ok):
                    try:
                        value = frame.f(outcome.value)
                    except Exception as exc:
                        fn_defect(exc, callable_name(frame.f), outcome.state)
                    outcome = Ok(value, outcome.state)
            case _Catch():
                if isinstance(outcome, Err) and isinstance(outcome.error, frame.types):
                    return _continue(frame.handler, outcome.error, outcome.state), outcome.state
            case _OrElse():
                if isinstance(outcome, Err):
                    return _as_node(frame.alt), outcome.state
            case _Restore():
                if isinstance(outcome, Ok):
                    outcome = Ok(outcome.value, frame.state)
                else:
                    outcome = Err(outcome.error, frame.state, outcome.site)
            case _:
                assert_never(frame)
    return outcome


async def _run_par(node: _Par[Any, Any, Any], state: Any) -> Outcome[Any, Any, tuple[Any, ...]]:
    branches = node.branches
    out = await run_group(state, len(branches), lambda i: _interpret(branches[i], state), None, node.merge, node.site)
    return Ok(tuple(out.value), out.state) if isinstance(out, Ok) else out


async def _run_each(node: _Each[Any, Any, Any, Any], state: Any) -> Outcome[Any, Any, list[Any]]:
    values, body = node.values, node.body
    # The body runs inside its branch, so an exception in it is that branch's
    # Defect, not an escape from the group.
    return await run_group(
        state, len(values), lambda i: _interpret(_Bind(_Pure(values[i]), body), state), node.limit, node.merge, node.site
    )


async def _run_step(spec: StepSpec[Any, Any, Any, Any], value: Any, state: Any) -> Outcome[Any, Any, Any]:
    """A step under the contract (LANGUAGE.md §3): raising a declared error is
    an ``Err`` with the state the step received; everything else that is not
    an ``Outcome`` is a Defect."""
    try:
        result = spec.impl(state, value)
        if spec.is_async:
            result = await cast(Awaitable[object], result)
    except Exception as exc:
        return raised(exc, spec.site, state, spec.errors)
    if isinstance(result, Ok):
        return result
    return stop(result, spec.site, spec.errors, state=state)
