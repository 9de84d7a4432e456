"""``AgentMonad[S, E, A]``: a lazy computation ``S -> IO (Outcome[S, E, A])``.

A program is a tree of small node objects (``_Pure``, ``_Bind``, ``_Step``, …),
built by the combinators and run by ``_interpret``: one loop with an explicit
stack of continuation frames. Nothing recurses on the Python stack, so a chain
of 100,000 binds or a 10,000-deep nesting of ``then``/``catch``/``orelse``/
``local``/``map`` runs in constant Python stack depth (the paper's nested-
closure design overflows at about 1,000). Only ``par``/``each`` branches run
in nested interpreter calls, one per branch task.

>>> prog = AgentMonad.get().then(lambda n: AgentMonad.put(n + 1)).map(lambda _: "done")
>>> prog.run_sync(41)
Ok(value='done', state=42)
>>> AgentMonad.fail("nope").catch(str, lambda e: AgentMonad.pure(e.upper())).run_sync(0)
Ok(value='NOPE', state=0)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Generic, Never, TypeVar

from ._show import callable_name, short_repr
from .concurrency import run_group
from .contract import fn_defect, raised, stop
from .errors import Defect
from .merge import merge_states
from .outcome import Err, Ok, Outcome, Site

__all__ = ["AgentMonad"]

_S = TypeVar("_S")
_E_co = TypeVar("_E_co", covariant=True)
_A_co = TypeVar("_A_co", covariant=True)
_E = TypeVar("_E")
_E2 = TypeVar("_E2")
_A = TypeVar("_A")
_B = TypeVar("_B")
_C = TypeVar("_C")

_DEFAULT_MERGE: Any = merge_states


def _name(f: object) -> str:
    return callable_name(f)


class AgentMonad(Generic[_S, _E_co, _A_co]):
    """A lazy, stack-safe computation over state ``S`` that fails with ``E``
    or succeeds with ``A``. Nothing runs until ``run``/``run_sync``.

    ``S`` is invariant (``get`` and ``put`` both touch it); ``E`` and ``A`` are
    covariant, so ``AgentMonad[S, Never, int]`` is an ``AgentMonad[S, E, object]``.
    """

    __slots__ = ()

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
        return _GET

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
        merge: Callable[[_S, Sequence[_S]], _S] | None = _DEFAULT_MERGE,
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
        return _Group(tuple(branches), None, None, merge, site, True)

    @staticmethod
    def each(
        values: Sequence[_A],
        body: Callable[[_A], AgentMonad[_S, _E, _B]],
        *,
        limit: int | None = None,
        merge: Callable[[_S, Sequence[_S]], _S] | None = _DEFAULT_MERGE,
        site: Site | None = None,
    ) -> AgentMonad[_S, _E, list[_B]]:
        """Traverse ``values`` with ``body`` concurrently, at most ``limit`` at
        once: ``par`` over the elements, outputs in list order.

        >>> AgentMonad.each([1, 2, 3], lambda x: AgentMonad.pure(x * 10), limit=2).run_sync(0)
        Ok(value=[10, 20, 30], state=0)
        """
        if limit is not None and limit < 1:
            raise ValueError(f"each: limit must be at least 1, got {limit}")
        return _Group(tuple(values), body, limit, merge, site, False)

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
        return _Bind(self, lambda f: _Map(arg, f))

    def gather(self, other: AgentMonad[_S, _E, _B]) -> AgentMonad[_S, _E_co | _E, tuple[_A_co, _B]]:
        """``par`` of two: both from the same state, outputs as a pair."""
        return _Group((self, other), None, None, _DEFAULT_MERGE, None, True)

    def par_apply(
        self: AgentMonad[_S, _E_co, Callable[[_A], _B]],
        arg: AgentMonad[_S, _E, _A],
        *,
        merge: Callable[[_S, Sequence[_S]], _S] | None = _DEFAULT_MERGE,
    ) -> AgentMonad[_S, _E_co | _E, _B]:
        """Parallel applicative ``<*>`` (like Haskell's ``Concurrently``):
        function and argument run concurrently from the same state, and the
        states merge."""
        group: AgentMonad[_S, Any, tuple[Any, ...]] = _Group(
            (self, arg), None, None, merge, None, True
        )
        return group.map(_apply_pair)

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


# -- nodes ----------------------------------------------------------------------
# Each node is a plain slotted object; the interpreter dispatches on exact type.


class _Pure(AgentMonad[Any, Any, Any]):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Fail(AgentMonad[Any, Any, Any]):
    __slots__ = ("error", "site")

    def __init__(self, error: Any, site: Site | None) -> None:
        self.error = error
        self.site = site


class _Get(AgentMonad[Any, Any, Any]):
    __slots__ = ()


_GET = _Get()


class _Put(AgentMonad[Any, Any, Any]):
    __slots__ = ("state",)

    def __init__(self, state: Any) -> None:
        self.state = state


class _Modify(AgentMonad[Any, Any, Any]):
    __slots__ = ("f",)

    def __init__(self, f: Callable[[Any], Any]) -> None:
        self.f = f


class _Map(AgentMonad[Any, Any, Any]):
    __slots__ = ("m", "f")

    def __init__(self, m: AgentMonad[Any, Any, Any], f: Callable[[Any], Any]) -> None:
        self.m = m
        self.f = f


class _Bind(AgentMonad[Any, Any, Any]):
    __slots__ = ("m", "k")

    def __init__(
        self, m: AgentMonad[Any, Any, Any], k: Callable[[Any], AgentMonad[Any, Any, Any]]
    ) -> None:
        self.m = m
        self.k = k


class _Catch(AgentMonad[Any, Any, Any]):
    __slots__ = ("m", "types", "handler")

    def __init__(
        self,
        m: AgentMonad[Any, Any, Any],
        types: tuple[type, ...],
        handler: Callable[[Any], AgentMonad[Any, Any, Any]],
    ) -> None:
        self.m = m
        self.types = types
        self.handler = handler


class _OrElse(AgentMonad[Any, Any, Any]):
    __slots__ = ("m", "alt")

    def __init__(self, m: AgentMonad[Any, Any, Any], alt: AgentMonad[Any, Any, Any]) -> None:
        self.m = m
        self.alt = alt


class _Local(AgentMonad[Any, Any, Any]):
    __slots__ = ("m",)

    def __init__(self, m: AgentMonad[Any, Any, Any]) -> None:
        self.m = m


class _Restore:
    """Stack frame of a ``local``: the state to restore."""

    __slots__ = ("state",)

    def __init__(self, state: Any) -> None:
        self.state = state


class StepSpec:
    """A lifted ``step``: calling it with a value gives the program node that
    runs the step on that value (a Kleisli arrow without a closure)."""

    __slots__ = ("impl", "name", "errors", "site", "is_async", "__weakref__")

    def __init__(
        self,
        impl: Callable[[Any, Any], Any],
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

    def __call__(self, value: Any) -> AgentMonad[Any, Any, Any]:
        return _Step(self, value)

    def __repr__(self) -> str:
        return f"<step {self.name} at {self.site.location}>"


class FnSpec:
    """A lifted ``fn``: calling it with a value gives the node applying it."""

    __slots__ = ("impl", "name", "site", "__weakref__")

    def __init__(self, impl: Callable[[Any], Any], name: str, site: Site) -> None:
        self.impl = impl
        self.name = name
        self.site = site

    def __call__(self, value: Any) -> AgentMonad[Any, Any, Any]:
        return _FnCall(self, value)

    def __repr__(self) -> str:
        return f"<fn {self.name} at {self.site.location}>"


class _Step(AgentMonad[Any, Any, Any]):
    __slots__ = ("spec", "value")

    def __init__(self, spec: StepSpec, value: Any) -> None:
        self.spec = spec
        self.value = value


class _FnCall(AgentMonad[Any, Any, Any]):
    __slots__ = ("spec", "value")

    def __init__(self, spec: FnSpec, value: Any) -> None:
        self.spec = spec
        self.value = value


class _Group(AgentMonad[Any, Any, Any]):
    """``par`` (``items`` are programs, ``body`` None) or ``each`` (``items``
    are values, ``body`` the Kleisli arrow)."""

    __slots__ = ("items", "body", "limit", "merge", "site", "as_tuple")

    def __init__(
        self,
        items: tuple[Any, ...],
        body: Callable[[Any], AgentMonad[Any, Any, Any]] | None,
        limit: int | None,
        merge: Callable[[Any, Sequence[Any]], Any] | None,
        site: Site | None,
        as_tuple: bool,
    ) -> None:
        self.items = items
        self.body = body
        self.limit = limit
        self.merge = merge
        self.site = site
        self.as_tuple = as_tuple


async def _run_group(node: _Group, state: Any) -> Outcome[Any, Any, Any]:
    items = node.items
    body = node.body
    if body is None:

        def start(i: int) -> Any:
            return _interpret(items[i], state)

    else:
        k = body

        def start(i: int) -> Any:
            # the body runs inside the branch, so an exception in it is that
            # branch's Defect, not an escape from the group
            return _interpret(_Bind(_Pure(items[i]), k), state)

    out = await run_group(state, len(items), start, node.limit, node.merge, node.site)
    if node.as_tuple and type(out) is Ok:
        return Ok(tuple(out.value), out.state)
    return out


class _InlineStep:
    """Marker: the next leaf is the step ``spec`` applied to ``arg``, set up by
    the unwinding loop without allocating a ``_Step`` node."""

    __slots__ = ()


_INLINE = _InlineStep()


async def _interpret(prog: AgentMonad[Any, Any, Any], state: Any) -> Outcome[Any, Any, Any]:
    """Run ``prog`` from ``state`` with an explicit continuation stack.

    Frames on ``stack`` are the nodes that pushed them (``_Bind``, ``_Map``,
    ``_Catch``, ``_OrElse``) or a ``_Restore``. A leaf produces either a value
    (``failed`` false) or an error; then frames are popped until one of them
    yields a new program to evaluate, or the stack is empty.
    """
    stack: list[Any] = []
    push = stack.append
    pop = stack.pop
    cur: Any = prog
    value: Any = None
    error: Any = None
    site: Site | None = None
    spec: Any = None
    arg: Any = None
    while True:
        # -- descend to a leaf -------------------------------------------------
        t = type(cur)
        while t is _Bind or t is _Map:
            push(cur)
            cur = cur.m
            t = type(cur)
        if t is _Step:
            spec, arg = cur.spec, cur.value
            t = _InlineStep
        if t is _InlineStep:
            try:
                if spec.is_async:
                    r = await spec.impl(state, arg)
                else:
                    r = spec.impl(state, arg)
            except Exception as exc:
                e = raised(exc, spec.site, state, spec.errors)
                error, state, site, failed = e.error, e.state, e.site, True
            else:
                if type(r) is Ok:
                    value, state, failed = r.value, r.state, False
                else:
                    e = stop(r, spec.site, spec.errors, state=state)
                    error, state, site, failed = e.error, e.state, e.site, True
        elif t is _Pure:
            value, failed = cur.value, False
        elif t is _FnCall:
            spec = cur.spec
            try:
                value = spec.impl(cur.value)
            except Exception as exc:
                fn_defect(exc, spec.site, state)
            failed = False
        elif t is _Catch or t is _OrElse:
            push(cur)
            cur = cur.m
            continue
        elif t is _Local:
            push(_Restore(state))
            cur = cur.m
            continue
        elif t is _Fail:
            error, site, failed = cur.error, cur.site, True
        elif t is _Get:
            value, failed = state, False
        elif t is _Put:
            value, state, failed = None, cur.state, False
        elif t is _Modify:
            try:
                state = cur.f(state)
            except Exception as exc:
                fn_defect(exc, _name(cur.f), state)
            value, failed = None, False
        elif t is _Group:
            out = await _run_group(cur, state)
            if type(out) is Ok:
                value, state, failed = out.value, out.state, False
            else:
                error, state, site, failed = out.error, out.state, out.site, True
        else:
            # a continuation, handler or ``each`` body returned something else
            bad = cur
            raise Defect("<program>", state, reason=lambda: f"{short_repr(bad)} is not an AgentMonad program")

        # -- unwind ------------------------------------------------------------
        if not failed:
            while stack:
                frame = pop()
                tf = type(frame)
                if tf is _Bind:
                    k = frame.k
                    tk = type(k)
                    # Fast paths for lifted steps and fns: no node allocated.
                    if tk is StepSpec:
                        spec, arg, cur = k, value, _INLINE
                        break
                    if tk is FnSpec:
                        try:
                            value = k.impl(value)
                        except Exception as exc:
                            fn_defect(exc, k.site, state)
                        continue
                    try:
                        cur = k(value)
                    except Exception as exc:
                        fn_defect(exc, _name(k), state)
                    break
                if tf is _Map:
                    try:
                        value = frame.f(value)
                    except Exception as exc:
                        fn_defect(exc, _name(frame.f), state)
                elif tf is _Restore:
                    state = frame.state
                # _Catch / _OrElse frames: nothing to do on success
            else:
                return Ok(value, state)
        else:
            while stack:
                frame = pop()
                tf = type(frame)
                if tf is _Catch:
                    if isinstance(error, frame.types):
                        try:
                            cur = frame.handler(error)
                        except Exception as exc:
                            fn_defect(exc, _name(frame.handler), state)
                        break
                elif tf is _OrElse:
                    cur = frame.alt
                    break
                elif tf is _Restore:
                    state = frame.state
                # _Bind / _Map frames are skipped: failure short-circuits
            else:
                return Err(error, state, site)
