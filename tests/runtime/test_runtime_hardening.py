"""Hostile values meet the runtime's messages (issue 18, items 10, 14 and 26).

User values reach error messages: an exception a step raised, the error of an
``Err`` it returned, whatever else it returned, a field's branch values. Those
values may have a ``__str__``/``__repr__`` that raises, or be huge. The runtime
must turn them into Defects or errors like any other value, and rendering those
(``str``, ``repr``, the MCP result) must never raise nor grow without bound.
"""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Never

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentmonad import (
    AgentMonad,
    Defect,
    Err,
    MergeConflict,
    Ok,
    Site,
    ToolFailed,
    ToolUnavailable,
    lift_step,
    merge_states,
    to_tool_result,
)
from agentmonad.compiled import raised, stop

SITE = Site("plan", "hostile.mce", 4, 2)


class Declared(Exception):
    """The one error type the steps below declare."""


# -- hostile values -------------------------------------------------------------------

# What a broken __str__/__repr__ does: raise one of these, or return a non-str
# (which makes str()/repr() raise TypeError).
FAILURES: list[Callable[[], Any]] = [
    lambda: (_ for _ in ()).throw(RuntimeError("repr is broken")),
    lambda: (_ for _ in ()).throw(ValueError("no text for you")),
    lambda: (_ for _ in ()).throw(RecursionError("maximum recursion depth exceeded")),
    lambda: (_ for _ in ()).throw(AttributeError("missing")),
    lambda: 42,  # not a str
    lambda: None,
]


def hostile_class(base: type, str_fails: bool, repr_fails: bool, failure: Callable[[], Any]) -> type:
    namespace: dict[str, Any] = {}
    if str_fails:
        namespace["__str__"] = lambda self: failure()
    if repr_fails:
        namespace["__repr__"] = lambda self: failure()
    return type("Hostile" + (base.__name__ if base is not object else "Object"), (base,), namespace)


@st.composite
def hostile_values(draw: st.DrawFn, *, exception: bool | None = None, str_broken: bool = False) -> Any:
    """An object (an exception or not) whose __str__, __repr__ or both are broken
    (``str_broken``: at least ``__str__``)."""
    is_exc = draw(st.booleans()) if exception is None else exception
    base: type = draw(st.sampled_from([RuntimeError, KeyError, OSError])) if is_exc else object
    broken = [(True, False), (True, True)] if str_broken else [(True, False), (False, True), (True, True)]
    str_fails, repr_fails = draw(st.sampled_from(broken))
    failure = draw(st.sampled_from(FAILURES))
    cls = hostile_class(base, str_fails, repr_fails, failure)
    return cls("boom") if is_exc else cls()


def check_renders(d: Defect) -> None:
    """Every way of looking at a Defect works and names the step."""
    text, shown = str(d), repr(d)
    assert "defect in step 'plan'" in text and "hostile.mce:4:2" in text
    assert "Defect(" in shown
    assert d.reason is None or isinstance(d.reason, str)
    copy = pickle.loads(pickle.dumps(Defect(d.site or d.step, 1, None, reason=d.reason)))
    assert str(copy) == str(Defect(d.site or d.step, 1, None, reason=d.reason))


# The three ways a step hands a hostile value to the runtime.
SITUATIONS = ["raises", "returns_undeclared_err", "returns_non_outcome"]


def hostile_step(situation: str, value: Any) -> Callable[[int, str], Any]:
    def step(state: int, _: str) -> Any:
        if situation == "raises":
            raise value
        if situation == "returns_undeclared_err":
            return Err(value, state + 1)
        return value

    return step


def expected_state(situation: str) -> int:
    return 8 if situation == "returns_undeclared_err" else 7


@settings(max_examples=150, deadline=None)
@given(situation=st.sampled_from(SITUATIONS), data=st.data())
def test_compiled_entry_points_turn_hostile_values_into_defects(situation: str, data: st.DataObject) -> None:
    """``agentmonad.compiled.stop``/``raised``, as generated code calls them."""
    value = data.draw(hostile_values(exception=True if situation == "raises" else None))
    step = hostile_step(situation, value)
    with pytest.raises(Defect) as info:
        try:
            r = step(7, "q")
        except Exception as exc:  # what generated code does around a sync step
            r = raised(exc, SITE, 7, (Declared,))
        if not isinstance(r, Ok):
            stop(r, SITE, (Declared,), state=7)
    d = info.value
    assert d.state == expected_state(situation) and d.site == SITE
    if situation == "raises":
        assert d.cause is value and d.__cause__ is value
    check_renders(d)


@settings(max_examples=150, deadline=None)
@given(situation=st.sampled_from(SITUATIONS), is_async=st.booleans(), data=st.data())
def test_interpreter_turns_hostile_values_into_defects(situation: str, is_async: bool, data: st.DataObject) -> None:
    """``lift_step`` run by ``AgentMonad``, sync and async steps alike."""
    value = data.draw(hostile_values(exception=True if situation == "raises" else None))
    sync = hostile_step(situation, value)

    async def async_step(state: int, q: str) -> Any:
        return sync(state, q)

    k = lift_step(async_step if is_async else sync, name="plan", errors=(Declared,), site=SITE, is_async=is_async)
    with pytest.raises(Defect) as info:
        AgentMonad.put(7).then(lambda _: k("q")).run_sync(0)
    d = info.value
    assert d.state == expected_state(situation) and d.site == SITE
    check_renders(d)


@settings(max_examples=60, deadline=None)
@given(value=hostile_values(exception=False))
def test_a_continuation_returning_a_hostile_non_program_is_a_defect(value: Any) -> None:
    with pytest.raises(Defect) as info:
        AgentMonad.pure(1).then(lambda _: value).run_sync(0)
    assert "not an AgentMonad program" in str(info.value) and repr(info.value)


def test_agentmonad_cannot_be_subclassed() -> None:
    """The interpreter dispatches over its own node classes only, exhaustively."""
    with pytest.raises(TypeError, match="cannot be subclassed"):

        class Mine(AgentMonad[int, Never, int]):
            pass


@settings(max_examples=100, deadline=None)
@given(value=hostile_values())
def test_outcomes_and_builtin_errors_render_whatever_they_hold(value: Any) -> None:
    """``str``/``repr`` of ``Ok``, ``Err``, the built-in errors and Defects never raise."""
    for shown in (
        Ok(value, value),
        Err(value, value, SITE),
        MergeConflict("f", [value, value], [value]),
        ToolFailed("s", "t", value),
        ToolUnavailable("s", "t", value),
        Defect(SITE, value, value if isinstance(value, BaseException) else None),
        Defect("plan", value, reason=lambda: f"{value}"),
    ):
        assert isinstance(str(shown), str) and isinstance(repr(shown), str)
    try:
        own = repr(value)
    except Exception:
        own = f"<unprintable {type(value).__name__} object>"
    assert repr(Err(value, 0)) == f"Err(error={own}, state=0, site=None)"


def test_a_declared_error_with_a_hostile_message_is_an_err_that_renders() -> None:
    bad = hostile_class(Declared, True, True, FAILURES[0])("x")

    def step(state: int, _: str) -> Any:
        raise bad

    out = lift_step(step, name="plan", errors=(Declared,), site=SITE)("q").run_sync(3)
    assert out == Err(bad, 3) and out.error is bad
    assert repr(out) == "Err(error=<unprintable HostileDeclared object>, state=3, site=" + repr(SITE) + ")"


def test_defect_messages_are_built_only_when_read() -> None:
    calls: list[int] = []

    class Counted:
        def __repr__(self) -> str:
            calls.append(1)
            return "Counted()"

    with pytest.raises(Defect) as info:
        stop(Counted(), SITE, (Declared,), state=0)
    assert calls == []  # raising the Defect formatted nothing
    assert str(info.value) == "defect in step 'plan' at hostile.mce:4:2: returned Counted(), not an Ok or Err"
    assert str(info.value) and calls == [1]  # built once, then kept


# -- bounded messages (item 14) ----------------------------------------------------------


@dataclass(frozen=True)
class Big:
    answer: str = ""


def test_merge_conflict_message_is_bounded_and_lazy() -> None:
    """2,000 branches of 50 KB: the conflict keeps the values, its text stays small."""
    branches = [Big(answer=f"{i:05d}" + "x" * 50_000) for i in range(2_000)]
    with pytest.raises(MergeConflict) as info:
        merge_states(Big(), branches)
    conflict = info.value
    assert conflict.values == [b.answer for b in branches] and conflict.states == branches
    text, shown = str(conflict), repr(conflict)
    assert len(text) < 4_000 and len(shown) < 8_000
    assert text.startswith("par branches changed field 'answer' to different values: ['00000xxx")
    assert text.endswith("… and 1992 more]")
    assert conflict.args[0] == "answer"  # no message string was built to raise it


def test_defect_with_many_siblings_quotes_a_few() -> None:
    d = Defect(SITE, None, ValueError("first"))
    for i in range(1_000):
        d.attach(Defect(f"branch{i}", None, ValueError("x" * 1_000)))
    text = str(d)
    assert "+1000 other defects" in text and "… and 995 more" in text and len(text) < 10_000


# -- to_tool_result is total (item 26) -------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@settings(max_examples=60, deadline=None)
@given(value=hostile_values(str_broken=True))
def test_to_tool_result_renders_a_hostile_error(value: Any) -> None:
    result = to_tool_result(Err(value, None))
    assert result["isError"] is True and result["structuredContent"] is None
    assert "<unprintable" in result["content"][0]["text"]
    json.dumps(result)


@pytest.mark.parametrize(
    "value",
    [nested(100_000), {"a": nested(50_000)}, object(), {1j: 2}, float("nan"), b"\xff"],
    ids=["deep-list", "deep-dict", "object", "complex-key", "nan", "bytes"],
)
def test_to_tool_result_of_a_value_it_cannot_serialise_is_an_error_result(value: Any) -> None:
    result = to_tool_result(Ok(value, None))
    text = result["content"][0]["text"]
    json.dumps(result, allow_nan=False)  # what goes on the wire is valid JSON
    if result["isError"]:
        assert result["structuredContent"] is None and "cannot be serialised" in text
    else:  # str() fallbacks are fine when they give JSON
        assert result["structuredContent"] is not None


def test_to_tool_result_never_raises_on_hostile_ok_values() -> None:
    bad = hostile_class(object, True, True, FAILURES[0])()
    for value in (bad, [bad], {"k": bad}):
        result = to_tool_result(Ok(value, None))
        json.dumps(result, allow_nan=False)
        assert result["isError"] is True and "cannot be serialised" in result["content"][0]["text"]


def test_to_tool_result_of_an_error_with_a_deep_value() -> None:
    result = to_tool_result(Err(nested(100_000), None))
    assert result["isError"] is True
    json.dumps(result)


def test_run_of_a_hostile_step_inside_a_running_loop() -> None:
    """The same through ``await prog.run(s)``: the Defect escapes, nothing else."""
    bad = hostile_class(RuntimeError, True, True, FAILURES[2])("x")

    def step(state: int, _: str) -> Any:
        raise bad

    async def main() -> None:
        with pytest.raises(Defect) as info:
            await lift_step(step, name="plan", errors=(), site=SITE)("q").run(0)
        assert str(info.value) == (
            "defect in step 'plan' at hostile.mce:4:2: HostileRuntimeError: <unprintable HostileRuntimeError object>"
        )

    asyncio.run(main())
