"""Outcome types, Defect, the step contract (lift_step/lift_fn and the compiled
stop/raised slow paths), stack safety, the MCP mapping, and the doctests."""

from __future__ import annotations

import asyncio
import doctest
import importlib
import inspect
import pickle
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel

import agentmonad
from agentmonad import (
    AgentMonad,
    Defect,
    Err,
    MergeConflict,
    Ok,
    Site,
    ToolFailed,
    ToolUnavailable,
    from_tool_result,
    lift_fn,
    lift_step,
    to_tool_result,
)
from agentmonad.compiled import raised, stop

SITE = Site("plan", "research.mce", 12, 5)


class LLMError(Exception):
    pass


class ToolError(Exception):
    pass


# -- outcome types ----------------------------------------------------------------


def test_ok_err_basics() -> None:
    assert Ok(None, 1) == Ok(None, 1) and Ok(None, 1) != Ok(None, 2)
    assert Err("e", 1, SITE) == Err("e", 1) and hash(Err("e", 1, SITE)) == hash(Err("e", 1))
    with pytest.raises(AttributeError):
        Ok(1, 2).value = 3  # type: ignore[misc]
    assert not hasattr(Ok(1, 2), "__dict__")
    match Err("e", 0, SITE):
        case Err(error, state):
            assert (error, state) == ("e", 0)
        case _:
            pytest.fail("match failed")
    assert str(SITE) == "research.mce:12:5 (plan)"


def test_defect_message_and_fields() -> None:
    cause = ValueError("bad")
    d = Defect(SITE, {"s": 1}, cause)
    assert (d.step, d.site, d.state, d.cause, d.__cause__, d.others) == (
        "plan", SITE, {"s": 1}, cause, cause, []
    )
    assert str(d) == "defect in step 'plan' at research.mce:12:5: ValueError: bad"
    d.attach(Defect("other", None, KeyError("k")))
    assert "1 other defect" in str(d) and "other" in str(d)


def test_builtin_errors_compare_by_value() -> None:
    assert MergeConflict("f", [1, 2], [3, 4]) == MergeConflict("f", [1, 2], [3, 4])
    assert ToolFailed("s", "t", "x") != ToolFailed("s", "t", "y")
    assert ToolUnavailable("s", "t", "r") == pickle.loads(pickle.dumps(ToolUnavailable("s", "t", "r")))
    for cls in (MergeConflict, ToolFailed, ToolUnavailable, Defect):
        assert issubclass(cls, Exception)


# -- the step contract --------------------------------------------------------------


def test_raising_a_declared_error_is_err_with_the_received_state() -> None:
    def plan(state: int, q: str) -> Ok[int, str]:
        raise LLMError(q)

    k = lift_step(plan, name="plan", errors=(LLMError,), site=SITE)
    out = AgentMonad.put(4).then(lambda _: k("q")).run_sync(0)
    assert isinstance(out, Err) and isinstance(out.error, LLMError)
    assert out.state == 4 and out.site == SITE


def test_undeclared_exception_is_a_defect() -> None:
    def plan(state: int, q: str) -> Ok[int, str]:
        raise ZeroDivisionError("oops")

    k = lift_step(plan, name="plan", errors=(LLMError,), site=SITE)
    with pytest.raises(Defect) as info:
        AgentMonad.put(4).then(lambda _: k("q")).catch(Exception, lambda e: AgentMonad.pure("x")).run_sync(0)
    d = info.value
    assert d.state == 4 and isinstance(d.cause, ZeroDivisionError) and d.site == SITE


def test_err_of_undeclared_type_is_a_defect() -> None:
    def plan(state: int, q: str) -> Err[int, ToolError]:
        return Err(ToolError("t"), state + 1)

    k = lift_step(plan, name="plan", errors=(LLMError,), site=SITE)
    with pytest.raises(Defect) as info:
        k("q").run_sync(0)
    assert info.value.state == 1 and "ToolError" in str(info.value)


def test_returning_a_non_outcome_is_a_defect() -> None:
    k = lift_step(lambda s, v: v, name="plan", errors=())
    with pytest.raises(Defect, match="not an Ok or Err"):
        k(3).run_sync(0)

    async def forgot_async(state: int, v: int) -> Ok[int, int]:
        return Ok(v, state)

    k2 = lift_step(forgot_async, name="plan", errors=())  # is_async missing
    with pytest.raises(Defect, match="async"):
        k2(3).run_sync(0)


def test_none_value_is_success() -> None:
    k = lift_step(lambda s, v: Ok(None, s + 1), name="n", errors=())
    assert k(0).then(lambda v: AgentMonad.pure(v is None)).run_sync(0) == Ok(True, 1)


def test_async_step_and_err_site() -> None:
    async def plan(state: int, q: str) -> Err[int, LLMError]:
        await asyncio.sleep(0)
        return Err(LLMError(q), state)

    k = lift_step(plan, name="plan", errors=(LLMError,), is_async=True, site=SITE)
    out = k("q").run_sync(0)
    assert isinstance(out, Err) and out.site == SITE
    # a site the Err already had (from a nested pipeline) is kept
    inner = Site("inner", "x.mce", 1, 1)
    k2 = lift_step(lambda s, v: Err(LLMError(), s, inner), name="outer", errors=(LLMError,), site=SITE)
    assert k2(0).run_sync(0).site == inner  # type: ignore[union-attr]


def test_lift_fn() -> None:
    f = lift_fn(lambda x: x * 2, name="double", site=SITE)
    assert AgentMonad.pure(21).then(f).run_sync("s") == Ok(42, "s")
    g = lift_fn(lambda x: 1 // x, name="inv")
    with pytest.raises(Defect) as info:
        AgentMonad.put("t").then(lambda _: g(0)).run_sync("s")
    assert info.value.state == "t" and info.value.step == "inv"


def test_map_and_continuation_exceptions_are_defects() -> None:
    with pytest.raises(Defect):
        AgentMonad.pure(0).map(lambda x: 1 // x).run_sync(0)
    with pytest.raises(Defect):
        AgentMonad.pure(0).then(lambda x: 1 // x).run_sync(0)  # type: ignore[arg-type, return-value]


def test_interrupts_and_cancellation_are_never_converted() -> None:
    def interrupt(state: int, v: None) -> Ok[int, None]:
        raise KeyboardInterrupt

    def cancelled(state: int, v: None) -> Ok[int, None]:
        raise asyncio.CancelledError

    def exits(state: int, v: None) -> Ok[int, None]:
        raise SystemExit(3)

    for impl, exc in ((interrupt, KeyboardInterrupt), (cancelled, asyncio.CancelledError), (exits, SystemExit)):
        k = lift_step(impl, name="k", errors=(Exception,))
        with pytest.raises(exc):
            asyncio.run(k(None).catch(Exception, lambda e: AgentMonad.pure(None)).run(0))
    with pytest.raises(KeyboardInterrupt):
        raised(KeyboardInterrupt(), SITE, 0, (Exception,))  # type: ignore[arg-type]


def test_local_restores_on_failure_too() -> None:
    prog = AgentMonad.put(9).then(lambda _: AgentMonad.fail("x")).local()
    assert prog.run_sync(1) == Err("x", 1)


def test_run_sync_inside_a_loop_is_refused() -> None:
    async def main() -> None:
        with pytest.raises(RuntimeError, match="await"):
            AgentMonad.pure(1).run_sync(0)

    asyncio.run(main())


# -- compiled slow paths ------------------------------------------------------------


def test_compiled_stop() -> None:
    e = stop(Err(LLMError("x"), 3), SITE, (LLMError, ToolError))
    assert e == Err(e.error, 3) and e.site == SITE
    with pytest.raises(Defect) as info:
        stop(Err(KeyError("k"), 3), SITE, (LLMError,))
    assert info.value.state == 3 and info.value.site == SITE
    with pytest.raises(Defect):
        stop("garbage", SITE, (LLMError,), state=7)


def test_compiled_raised() -> None:
    exc = LLMError("x")
    assert raised(exc, SITE, 5, (LLMError,)) == Err(exc, 5)
    assert raised(exc, SITE, 5, (LLMError,)).site == SITE
    inner = Defect("inner", 1, ValueError())
    with pytest.raises(Defect) as info:
        raised(inner, SITE, 5, (LLMError,))
    assert info.value is inner
    with pytest.raises(Defect) as info:
        raised(ValueError("v"), SITE, 5, (LLMError,))
    assert info.value.state == 5 and isinstance(info.value.__cause__, ValueError)


def test_compiled_aliases_parameter_order() -> None:
    from agentmonad.compiled import AsyncStep, Fn, Step

    alias = Step[int, str, bytes, KeyError]
    assert "Callable[[int, str]" in str(alias) and "Ok[int, bytes]" in str(alias)
    assert "Err[int, KeyError]" in str(alias)
    assert "Awaitable" in str(AsyncStep[int, str, bytes, KeyError])
    assert str(Fn[int, str]) == "collections.abc.Callable[[int], str]"


# -- stack safety -------------------------------------------------------------------


def test_100_000_binds() -> None:
    k = lift_step(lambda s, v: Ok(v + 1, s), name="inc", errors=())
    prog: AgentMonad[int, Any, int] = AgentMonad.pure(0)
    for _ in range(100_000):
        prog = prog.then(k)
    assert prog.run_sync(1) == Ok(100_000, 1)


def test_right_nested_binds() -> None:
    def count(n: int) -> AgentMonad[int, Any, int]:
        return AgentMonad.pure(n) if n == 0 else AgentMonad.pure(n - 1).then(count)

    assert count(100_000).run_sync(0) == Ok(0, 0)
    # right-nested as data (not through continuations)
    prog: AgentMonad[int, Any, int] = AgentMonad.pure(0)
    for i in range(10_000):
        prog = AgentMonad.pure(i).then(lambda _, p=prog: p.map(lambda x: x + 1))
    assert prog.run_sync(0) == Ok(10_000, 0)


def test_10_000_deep_nesting() -> None:
    prog: AgentMonad[int, Any, int] = AgentMonad.pure(0)
    for _ in range(10_000):
        prog = prog.map(lambda x: x + 1).catch(KeyError, lambda e: AgentMonad.pure(-1)).orelse(
            AgentMonad.pure(-2)
        ).local()
    assert prog.run_sync(5) == Ok(10_000, 5)
    failing: AgentMonad[int, Any, int] = AgentMonad.fail("x")
    for i in range(10_000):
        failing = failing.catch(str, lambda e: AgentMonad.fail(e + "!")).local()
    out = failing.run_sync(0)
    assert isinstance(out, Err) and len(out.error) == 10_001


# -- MCP mapping --------------------------------------------------------------------


class Hit(BaseModel):
    title: str
    score: float


@dataclass
class Pair:
    a: int
    b: list[str]


@pytest.mark.parametrize(
    "value", [{"a": 1, "b": [1, 2]}, 5, "text", None, [1, "x"], {"result": 1, "more": 2}]
)
def test_mcp_round_trip_builtins(value: Any) -> None:
    result = to_tool_result(Ok(value, 0))
    assert result["isError"] is False and isinstance(result["structuredContent"], dict)
    assert result["content"][0]["type"] == "text"
    assert from_tool_result(result, "s") == Ok(value, "s")


def test_mcp_models_and_dataclasses() -> None:
    hit = Hit(title="t", score=0.5)
    result = to_tool_result(Ok(hit, 0))
    assert result["structuredContent"] == {"title": "t", "score": 0.5}
    assert from_tool_result(result, 1, output=Hit) == Ok(hit, 1)
    bad = from_tool_result(to_tool_result(Ok({"title": 3}, 0)), 1, server="srv", tool="t", output=Hit)
    assert isinstance(bad, Err) and isinstance(bad.error, ToolUnavailable)
    assert to_tool_result(Ok(Pair(1, ["x"]), 0))["structuredContent"] == {"a": 1, "b": ["x"]}
    assert from_tool_result(to_tool_result(Ok("hi", 0)), 0, output=str) == Ok("hi", 0)


def test_mcp_errors() -> None:
    result = to_tool_result(Err(LLMError("model down"), 0, SITE))
    assert result["isError"] is True and result["content"][0]["text"] == "LLMError: model down"
    back = from_tool_result(result, 3, server="srv", tool="answer")
    assert back == Err(ToolFailed("srv", "answer", "LLMError: model down"), 3)


def test_mcp_accepts_objects_with_attributes() -> None:
    class Block:
        type = "text"
        text = "hello"

    class Result:
        content = [Block()]
        structuredContent = None
        isError = False

    assert from_tool_result(Result(), 0) == Ok("hello", 0)


# -- doctests and exports -------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        "outcome", "errors", "merge", "contract", "monad", "steps", "compiled",
        "mcp.mcp_result", "concurrency", "_show", "mcp.tools", "mcp._stdio", "mcp._tail",
    ],
)
def test_doctests(module: str) -> None:
    mod = importlib.import_module(f"agentmonad.{module}")
    failures, _ = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_public_api_is_exported() -> None:
    for name in agentmonad.__all__:
        assert getattr(agentmonad, name) is not None
        obj = getattr(agentmonad, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            assert getattr(obj, "__doc__", None), f"{name} has no docstring"
