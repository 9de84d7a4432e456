"""Plans checked against a toolbox (docs/language.md §12), as a planner receives the verdict.

Each ``cases/<code>_<name>.plan`` is plan text checked against toolbox
``research`` of planbox/box.mce by the run-time engine. The goldens hold what
the planner is shown when the plan is rejected: ``.txt`` is
``PlanRejected.text`` (the diagnostics as ``mcec check`` prints them) and
``.json`` the diagnostics as data (``PlanRejected.diagnostics``, the JSON
objects of §8). An ``ok_`` case, and a ``w…`` case (warnings only), is
accepted; any other is rejected, with an error of its code first among its
errors' codes (a plan with one mistake may have two views of it, as MCE014 and
MCE020 for a handler of an error that cannot happen).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agentmonad import PlanRejected
from mcec.diagnostics import CODES
from mcec.render import DEFAULT_LIMIT
from mcec.plans.engine import AcceptedPlan, CheckedToolbox

from plan_support import compiled_box

CASES = Path(__file__).resolve().parent / "cases"
PLANS = sorted(CASES.glob("*.plan"))


def research() -> CheckedToolbox:
    checked = compiled_box().TOOLBOX_research.checked()
    assert isinstance(checked, CheckedToolbox)
    return checked


@pytest.mark.parametrize("plan", PLANS, ids=[p.stem for p in PLANS])
def test_plan_case(plan: Path, golden: Callable[[Path, str], None]) -> None:
    text = plan.read_text(encoding="utf-8")
    verdict = research().check(text)
    expected = plan.stem.split("_")[0].upper()
    if plan.stem.startswith("ok_") or expected.startswith("W"):
        assert isinstance(verdict, AcceptedPlan), verdict
        shown = "".join(json.dumps(json.loads(_json(d)), ensure_ascii=False) + "\n" for d in verdict.diagnostics)
        golden(plan.with_suffix(".json"), shown)
        assert {d.code for d in verdict.diagnostics} <= ({expected} if expected.startswith("W") else set())
        return
    assert isinstance(verdict, PlanRejected), f"accepted: {text!r}"
    golden(plan.with_suffix(".txt"), verdict.text + "\n")
    golden(plan.with_suffix(".json"), "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in verdict.diagnostics))
    errors = verdict.errors
    assert expected in {d["code"] for d in errors}, verdict.text
    for record in verdict.diagnostics:
        assert record["code"] in CODES
        assert list(record)[:5] == ["severity", "code", "message", "file", "line"]
    assert errors[0]["file"] == "<plan research>"
    assert verdict.plan == text and verdict.toolbox == "research"


def _json(diagnostic: object) -> str:
    from mcec.render import render_json

    return render_json(diagnostic)  # type: ignore[arg-type]


def test_the_same_text_is_checked_once() -> None:
    checked = research()
    first = checked.check("shout >>= shout")
    assert checked.check("shout >>= shout") is first
    assert checked.check("secret") is checked.check("secret")


def test_the_planner_is_told_the_toolbox_and_the_type() -> None:
    checked = research()
    assert checked.signature == "str -> str ! MergeConflict | Bad"
    assert checked.listing.splitlines() == [
        "shout : str -> str ! Bad",
        "search : str -> Finding ! Bad",
        "summarize : Finding -> str",
        "split : str -> list[str]",
        "join : list[str] -> str",
        "apology : Bad -> str",
        "look_up : str -> str ! Bad",
        "slow : str -> str",
    ]


@pytest.mark.parametrize(
    "text, what",
    [
        ("shout >>= " * 500 + "shout", "names"),
        ("local " * 40 + "shout", "nests"),
        ("shout" + " " * 20_000, "characters"),
    ],
    ids=["501 names", "40 locals", "20,005 characters"],
)
def test_a_plan_beyond_the_bounds_is_mce032(text: str, what: str) -> None:
    verdict = research().check(text)
    assert isinstance(verdict, PlanRejected)
    assert [d["code"] for d in verdict.errors] == ["MCE032"], verdict.text
    assert what in verdict.errors[0]["message"]


def test_a_plan_at_the_bounds_is_accepted() -> None:
    assert isinstance(research().check("shout >>= " * 499 + "shout"), AcceptedPlan)
    assert isinstance(research().check("local " * 31 + "shout"), AcceptedPlan)
    assert isinstance(research().check("(" * 200 + "shout" + ")" * 200), AcceptedPlan)  # a group is no level


def test_a_rejection_shows_at_most_mcec_checks_number_of_diagnostics() -> None:
    # issue 29 item 8: an 8 KB plan naming a step outside the toolbox 700 times is 701
    # diagnostics; the planner reads the first 50 (as `mcec check` prints them) and a count
    text = "secret >>= " * 699 + "secret"
    verdict = research().check(text)
    assert isinstance(verdict, PlanRejected)
    assert len(verdict.diagnostics) == DEFAULT_LIMIT and verdict.more == 701 - DEFAULT_LIMIT
    assert verdict.text.endswith(f"… and {701 - DEFAULT_LIMIT} more")
    assert verdict.text.count("error[MCE031]") == DEFAULT_LIMIT - 1  # the 50 shown: MCE032 (the whole plan) first
    assert len(verdict.text) < 40_000, len(verdict.text)  # ~380,000 when every one was shown
    assert str(verdict).startswith(f"plan rejected ({DEFAULT_LIMIT} errors, and {701 - DEFAULT_LIMIT} more diagnostics)")


def test_a_bounded_rejection_shows_errors_before_warnings() -> None:
    from mcec.diagnostics import Diagnostic, Severity
    from mcec.plans.engine import shown
    from mcec.span import SourceFile

    plan = SourceFile("<plan research>", "x" * 200)
    warnings = [Diagnostic("W002", Severity.WARNING, "w", plan.span(i, i + 1)) for i in range(100)]
    errors = [Diagnostic("MCE010", Severity.ERROR, "e", plan.span(150 + i, 151 + i)) for i in range(3)]
    kept, more = shown(tuple(sorted(warnings + errors, key=Diagnostic.sort_key)))
    assert more == 103 - DEFAULT_LIMIT and len(kept) == DEFAULT_LIMIT
    assert [d.code for d in kept].count("MCE010") == 3
    assert list(kept) == sorted(kept, key=Diagnostic.sort_key)


def test_a_retry_over_its_bound_still_may_not_name_a_python_path() -> None:
    """The confinement walk matched a too-big ``retry`` first and stopped there, so the Python path
    in its ``on=`` went unreported (each node kind now has one case that says all of it)."""
    verdict = research().check("retry(1000, on=impl.Bad) shout")
    assert isinstance(verdict, PlanRejected)
    found = {(d["code"], d["message"].split(":")[0]) for d in verdict.errors}
    assert ("MCE032", "`retry(1000)` in a plan") in found, verdict.text
    assert ("MCE031", "a plan cannot name a Python path") in found, verdict.text
