"""A plan runs only what the checker proves (issue 29 item 1).

In a spec, a type relation the checker cannot settle (``Label ≤ int``, where
``Label`` is a Python alias; ``Internal ≤ AgentError``, where ``AgentError`` is
an abstract base) is left to mypy, which checks the generated module (MCE100).
A plan has no mypy behind it, so there an unknown relation is a rejection, and
an accepted plan's outcome is held to its toolbox's type at run time too (an
entry declared ``-> Any`` flows anywhere). The fixture is
tests/plans/edgebox/alias.mce; its planner plays ``impl.SCRIPT[0]``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmonad import Defect, Err, Ok, PlanRejected
from mcec.run.interpret import interpret
from mcec.plans.engine import AcceptedPlan, CheckedToolbox

from edgebox import impl
from plan_support import compiled_edge


@pytest.fixture(autouse=True)
def script() -> Iterator[list[str]]:
    yield impl.SCRIPT
    impl.SCRIPT[:] = ["same"]


def toolbox(name: str = "tb") -> CheckedToolbox:
    checked = getattr(compiled_edge("alias")[0], f"TOOLBOX_{name}").checked()
    assert isinstance(checked, CheckedToolbox)
    return checked


def go(plan: str, value: int, pipeline: str = "go") -> Any:
    impl.SCRIPT[:] = [plan]
    return asyncio.run(getattr(compiled_edge("alias")[0], pipeline)(impl.Log(), value))


@pytest.mark.parametrize(
    "plan, code, unproved",
    [
        ("label >>= double", "MCE010", "`Label ≤ int` cannot be proved"),  # gave the str "label-3label-3"
        ("boom", "MCE013", "`Internal ≤ AgentError`, and that cannot be proved"),  # failed with Internal
        ("double >>= unlabel", "MCE010", "`int ≤ Label` cannot be proved"),
        ("code >>= double", "MCE010", "`Code ≤ int` cannot be proved"),  # true, but not provable
        ("double orelse code", "MCE020", "`Code ≤ int` cannot be proved"),
        ("double catch AgentError => mend_internal", "MCE014", ""),
        ("boom catch Internal => mend", "MCE020", "`Internal ≤ AgentError` cannot be proved"),
        ("label >>= match { int => double, _ => double }", "MCE010", "receives is Label, and `Label ≤ int` cannot"),
        ("label >>= if is_empty then unlabel else unlabel", "MCE010", "`Label ≤ str` cannot be proved"),
        ("label >>= par <unlabel, is_empty> >>= pick", "MCE011", "`Label ≤ str` cannot be proved"),
    ],
)
def test_a_relation_that_cannot_be_proved_rejects_the_plan(plan: str, code: str, unproved: str) -> None:
    verdict = toolbox().check(plan)
    assert isinstance(verdict, PlanRejected), plan
    assert code in [d["code"] for d in verdict.errors], verdict.text
    assert unproved in verdict.text, verdict.text


def test_the_issues_plans_are_rejected_at_the_spawn() -> None:
    outcome = go("label >>= double", 3)  # was Ok("label-3label-3"): a str out of `int -> int`
    assert isinstance(outcome, Err) and isinstance(outcome.error, PlanRejected), outcome
    outcome = go("boom", 3)  # was Err(Internal("boom 3")): an error `! AgentError` does not declare
    assert isinstance(outcome, Err) and isinstance(outcome.error, PlanRejected), outcome
    assert "`Label ≤ int`" not in outcome.error.text and "Internal ≤ AgentError" in outcome.error.text


def test_the_condition_of_an_if_is_held_to_the_ifs_input() -> None:
    # `is_empty : str -> bool` given the int the `if` receives (the spec checker leaves this to mypy)
    verdict = toolbox().check("if is_empty then double else double")
    assert isinstance(verdict, PlanRejected)
    assert verdict.errors[0]["message"] == "the condition `is_empty` expects str, but the `if` gives it its input, int"


@pytest.mark.parametrize(
    "plan",
    [
        "label >>= unlabel",  # Label ≤ Label: the same type
        "refuse catch AgentError => mend",  # Refused derives from AgentError
        "refuse orelse double",
        "boom catch Internal => mend_internal",
        "label >>= match { Label => unlabel }",
    ],
)
def test_a_proved_plan_is_accepted_and_gives_the_toolboxs_type(plan: str) -> None:
    assert isinstance(toolbox().check(plan), AcceptedPlan)
    for value in (2, 3):
        outcome = go(plan, value)
        assert isinstance(outcome, Ok) and type(outcome.value) is int, outcome


@pytest.mark.parametrize("how", ["compiled", "interpreted"])
def test_a_value_outside_the_toolboxs_type_is_a_defect_never_the_spawns_result(how: str) -> None:
    # `anything : int -> Any` flows anywhere (as in a spec, where mypy accepts it too): the run-time
    # guard holds the plan's value to `int` (it was Ok("any-3"))
    assert isinstance(toolbox("loose").check("anything"), AcceptedPlan)
    impl.SCRIPT[:] = ["anything"]
    module, program = compiled_edge("alias")
    with pytest.raises(Defect) as raised:
        if how == "compiled":
            asyncio.run(module.go_loose(impl.Log(), 3))
        else:
            asyncio.run(interpret(program, "go_loose", impl.Log(), 3))
    message = str(raised.value)
    assert "the plan gave 'any-3' (str), but toolbox `loose` gives int" in message, message
    assert raised.value.site is not None and raised.value.site.file == "<plan loose>"


# ---------------------------------------------------------------- the property, over random plans

ENTRIES = ("label", "code", "unlabel", "double", "is_empty", "pick", "mend", "mend_internal", "boom", "refuse")
ERRORS = ("AgentError", "Refused", "Internal")
PATTERNS = ("int", "str", "Label", "Code", "bool")


#: Parts that take and give an int (or a Label), which most plans are made of, so that many are accepted.
FITTING = ("double", "refuse", "boom", "(label >>= unlabel)", "(refuse >>= double)")
HANDLERS = ("mend", "mend_internal", "double", "unlabel")


def _plans() -> st.SearchStrategy[str]:
    """Plans over `tb` of every shape, well typed or not: references, chains, `catch`, `orelse`,
    `retry`, `match`, `if`, `par`, `local` (drawn mostly from parts that fit, so that about half are
    accepted; what is accepted must be sound)."""
    leaves = st.one_of(st.sampled_from(FITTING), st.sampled_from(FITTING), st.sampled_from(ENTRIES))

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        handler = st.one_of(st.sampled_from(HANDLERS), inner)
        return st.one_of(
            st.lists(inner, min_size=2, max_size=4).map(lambda parts: "(" + " >>= ".join(parts) + ")"),
            st.tuples(inner, st.lists(st.sampled_from(ERRORS), min_size=1, max_size=2, unique=True), handler).map(
                lambda t: f"({t[0]} catch {' | '.join(t[1])} => {t[2]})"
            ),
            st.tuples(inner, inner).map(lambda t: f"({t[0]} orelse {t[1]})"),
            st.tuples(st.sampled_from(ERRORS), inner).map(lambda t: f"(retry(2, on={t[0]}, backoff=0) {t[1]})"),
            st.tuples(st.sampled_from(PATTERNS), inner, inner).map(lambda t: f"match {{ {t[0]} => {t[1]}, _ => {t[2]} }}"),
            st.tuples(inner, inner, inner).map(lambda t: f"(if {t[0]} then {t[1]} else {t[2]})"),
            st.tuples(inner, inner).map(lambda t: f"(par <{t[0]}, {t[1]}> >>= pick)"),
            inner.map(lambda e: f"local {e}"),
        )

    return st.recursive(leaves, grow, max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=_plans(), value=st.integers(-2, 3))
def test_a_spawn_gives_only_its_toolboxs_type(plan: str, value: int) -> None:
    """Whatever the planner writes over entries whose relations the checker cannot all settle,
    the spawn's value is an int and its error an AgentError, or the plan is rejected."""
    verdict = toolbox().check(plan)
    outcome = go(plan, value)  # a Defect here fails the test: a proved plan runs as declared
    if isinstance(verdict, PlanRejected):
        assert isinstance(outcome, Err) and isinstance(outcome.error, PlanRejected)
        assert verdict.errors
        return
    if isinstance(outcome, Ok):
        assert isinstance(outcome.value, int), (plan, outcome)
    else:
        assert isinstance(outcome.error, impl.AgentError), (plan, outcome)


def test_the_guard_takes_what_flows_into_the_toolboxs_output() -> None:
    from mcec.check.types import Builtin, Generic, Lit, union
    from mcec.plans.engine import _instance_test

    is_float = _instance_test(Builtin("float"))
    assert is_float is not None and is_float(1.5) and is_float(3) and is_float(True) and not is_float("3")
    is_list = _instance_test(Generic("list", (Builtin("str"),)))
    assert is_list is not None and is_list(["a"]) and not is_list(("a",))  # a generic by its class
    either = _instance_test(union([Lit("yes"), Builtin("None"), Builtin("int")]))
    assert either is not None and either("yes") and either(None) and either(3) and not either("no")
    assert _instance_test(Builtin("Any")) is None
