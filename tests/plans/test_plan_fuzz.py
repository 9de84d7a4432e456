"""Plan text fuzzed (issue 23, docs/language.md §12): no plan crashes the checker or the runtime,
and no plan escapes its toolbox.

Against toolbox ``research`` of tests/plans/planbox/box.mce:

- arbitrary text, and text built from `.mce` tokens with names inside and outside the
  toolbox: checking never raises, and every verdict is well formed (``fuzz_support.verdict``:
  a rejection has errors with registered codes as §8 objects; an accepted plan's typed body
  references only the toolbox's entries and its text names nothing outside it);
- well-formed plans with a name outside the toolbox mixed in: always MCE031, at that name;
- generated well-typed plans: accepted; run, they give a value or a declared error (Bad,
  MergeConflict, Bad only where it can happen), never a Defect, and the same outcome and
  state as the same expression compiled as a pipeline of the spec;
- valid plans mutated (tests/spec_gen.py's token mutations, and names swapped for outside ones);
- through the runtime: whatever text the planner of ``solve`` writes, the spawn gives a declared
  outcome (PlanRejected with the planner's state, or the plan's own); ``repaired`` shows each
  attempt the rejection before it;
- the bounds (MCE032): 20,000 characters, 500 names, 32 levels; and very deep or long text
  is answered, not a RecursionError or a hang.

A timeout cannot cut short a ``loop(N)`` or ``retry(N, backoff=0)`` over synchronous steps,
which never suspend: plans are bounded instead (1,000 rounds, 10 attempts; tested at the end).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmonad import Defect, Err, MergeConflict, Ok
from agentmonad.plans import PlanRejected
from mcec.plans.check import MAX_PLAN_CHARS, MAX_PLAN_DEPTH, MAX_PLAN_NAMES
from mcec.plans.engine import AcceptedPlan
from planbox import impl
from plan_support import compiled_box
from spec_gen import mutate

from fuzz_support import (
    ENTRIES,
    FOREIGN_NAMES,
    INPUTS,
    KEYWORDS,
    LITERALS,
    NEVER_ACCEPTED,
    OUTSIDE_CALLABLES,
    PLAN_FILE,
    PUNCTUATION,
    TOKEN,
    TYPE_NAMES,
    Plan,
    codes,
    compiled_plans,
    outside_callables_of_spec,
    plans,
    same_outcome,
    verdict,
    words,
)

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
RUNS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_vocabularies_match_the_fixture() -> None:
    """The outside names really are the spec's callables the toolbox does not list (so the
    confinement tests test confinement), and every entry is a name a plan may use."""
    assert outside_callables_of_spec() == set(OUTSIDE_CALLABLES)
    for name in OUTSIDE_CALLABLES:
        assert "MCE031" in codes(verdict(name)), name
    for name in FOREIGN_NAMES:
        assert isinstance(verdict(name), PlanRejected), name
    for name in ENTRIES:  # alone, most have the wrong type (MCE012), but none is outside
        assert not codes(verdict(name)) & {"MCE031", "MCE002"}, name
    assert isinstance(verdict("shout"), AcceptedPlan)


# ---------------------------------------------------------------- 1. arbitrary text


@FUZZ
@given(st.text(max_size=300))
def test_any_text_gets_a_verdict(text: str) -> None:
    verdict(text)


TOKENS = st.sampled_from(
    (*ENTRIES, *OUTSIDE_CALLABLES, *FOREIGN_NAMES, *TYPE_NAMES, *KEYWORDS, *PUNCTUATION, *LITERALS)
)


@FUZZ
@given(st.lists(TOKENS, max_size=40), st.sampled_from((" ", "", "\n")))
def test_token_soup_gets_a_verdict(tokens: list[str], separator: str) -> None:
    result = verdict(separator.join(tokens))
    if isinstance(result, AcceptedPlan):
        outcome = run_bounded(result, "cats, bad")
        if outcome is not None:
            assert_declared(Plan(result.text, bad=True), outcome)


# ---------------------------------------------------------------- 2. confinement


@st.composite
def shapes(draw: st.DrawFn, names: st.SearchStrategy[str], depth: int = 3) -> str:
    """A well-formed (parseable) expression over ``names``, types aside."""
    if depth <= 0:
        return draw(names)
    a = draw(shapes(names, depth - 1))
    b = draw(shapes(names, depth - 1))
    forms = (
        f"({a}) >>= ({b})",
        f"par<({a}), ({b})>",
        f"each ({a})",
        f"each(limit=2) ({a})",
        f"({a}) catch Bad => ({b})",
        f"({a}) orelse ({b})",
        f'match {{ "x" => ({a}), _ => ({b}) }}',
        f"match {{ Bad => ({a}), Finding => ({b}), _ => shout }}",
        f"if ({a}) then ({b}) else shout",
        f"loop(3) ({a})",
        f"retry(2, backoff=0) ({a})",
        f"timeout(5) ({a})",
        f"budget(100) ({a})",
        f"local ({a})",
        f"({a})",
    )
    return draw(st.sampled_from(forms))


@FUZZ
@given(st.data())
def test_a_plan_naming_an_outside_callable_is_rejected_there(data: st.DataObject) -> None:
    outside = data.draw(st.sampled_from(OUTSIDE_CALLABLES), label="outside")
    text = data.draw(shapes(st.sampled_from((*ENTRIES, outside))), label="plan")
    if outside not in words(text):  # make sure it is there: replace one entry, or prefix it
        text = f"{outside} >>= ({text})"
    result = verdict(text)
    assert isinstance(result, PlanRejected)
    confined = [d for d in result.errors if d["code"] == "MCE031"]
    assert confined, result.diagnostics
    # one MCE031 per use, each pointing at the name it reports
    lines = text.split("\n")
    for diagnostic in confined:
        line = lines[diagnostic["line"] - 1]
        named = line[diagnostic["column"] - 1 : diagnostic["end_column"] - 1]
        assert named == outside, (diagnostic, text)
    uses = sum(1 for token in TOKEN.findall(text) if token == outside)
    assert len(confined) == uses, (text, result.diagnostics)


@FUZZ
@given(shapes(st.sampled_from(ENTRIES)))
def test_a_plan_over_the_toolbox_is_never_confined(text: str) -> None:
    """The same shapes over the entries only: whatever else is wrong, never MCE031."""
    result = verdict(text)
    assert "MCE031" not in codes(result), (text, result)


#: Errors and patterns named by a Python path (through the spec's `import planbox.impl as impl`).
DOTTED_TYPES = (
    "shout catch impl.Bad => apology",
    "shout catch planbox.impl.Bad => apology",
    "shout catch Bad | impl.Bad => apology",
    "retry(2, on=impl.Bad, backoff=0) shout",
    "retry(2, on=Bad | planbox.impl.Bad, backoff=0) look_up",
    "match { impl.Finding => shout, _ => shout }",
    "search >>= match { planbox.impl.Finding => summarize }",
)


@pytest.mark.parametrize("text", DOTTED_TYPES)
def test_a_type_named_by_a_python_path_is_outside_the_toolbox(text: str) -> None:
    """A plan names errors and classes as the spec does, never through a module path (MCE031 at the path)."""
    result = verdict(text)
    assert isinstance(result, PlanRejected), text
    confined = [d for d in result.errors if d["code"] == "MCE031"]
    assert len(confined) == 1, result.diagnostics
    where = text[confined[0]["column"] - 1 : confined[0]["end_column"] - 1]
    assert where in ("impl.Bad", "planbox.impl.Bad", "impl.Finding", "planbox.impl.Finding"), where


@FUZZ
@given(st.data())
def test_a_foreign_name_or_path_is_rejected(data: st.DataObject) -> None:
    foreign = data.draw(
        st.sampled_from(
            (*FOREIGN_NAMES, "impl.shout", "impl.secret", "os.system", "planbox.impl.secret", "shout.x",
             "__import__.os", "local(state=secret) shout", "local(state=impl) shout",
             "spawn(research) shout", "spawn(research) write_plan", *DOTTED_TYPES)  # fmt: skip
        ),
        label="foreign",
    )
    text = data.draw(shapes(st.sampled_from((*ENTRIES, f"({foreign})"))), label="plan")
    if foreign not in text:
        text = f"({text}) >>= ({foreign})"
    assert isinstance(verdict(text), PlanRejected), text


# ---------------------------------------------------------------- 3. well-typed plans, run


def run(result: AcceptedPlan, value: str) -> Ok[impl.Notes, str] | Err[impl.Notes, object]:
    """The plan's outcome on ``value`` from empty notes; every task it started has ended with it."""

    async def running() -> Ok[impl.Notes, str] | Err[impl.Notes, object]:
        outcome = await result.run(impl.Notes(), value)
        left = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        assert not left, (result.text, left)
        return outcome

    outcome = asyncio.run(running())
    assert isinstance(outcome, Ok | Err), outcome
    return outcome


def assert_declared(plan: Plan, outcome: object) -> None:
    if isinstance(outcome, Err):
        assert not isinstance(outcome.error, Defect), (plan, outcome)
        assert isinstance(outcome.error, impl.Bad | MergeConflict), (plan, outcome)
        if isinstance(outcome.error, impl.Bad):
            assert plan.bad, (plan, outcome)
    else:
        assert isinstance(outcome, Ok) and isinstance(outcome.value, str), (plan, outcome)
    assert isinstance(outcome.state, impl.Notes)  # type: ignore[attr-defined]


@RUNS
@given(plans(), st.sampled_from(INPUTS))
def test_a_generated_plan_is_accepted_and_runs_to_a_declared_outcome(plan: Plan, value: str) -> None:
    result = verdict(plan.text)
    assert isinstance(result, AcceptedPlan), (plan, result)
    assert_declared(plan, run(result, value))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(plans(), min_size=1, max_size=4, unique_by=lambda plan: plan.text), st.sampled_from(INPUTS))
def test_a_plan_runs_as_the_same_expression_compiled(generated: list[Plan], value: str) -> None:
    """compiled ≡ plan: value or error (type and text) and the final state agree."""
    module = compiled_plans(tuple(plan.text for plan in generated))
    for index, plan in enumerate(generated):
        result = verdict(plan.text)
        assert isinstance(result, AcceptedPlan), (plan, result)
        planned = run(result, value)
        compiled = asyncio.run(getattr(module, f"fz_{index}")(impl.Notes(), value))
        assert same_outcome(planned, compiled), (plan.text, value, planned, compiled)
        assert_declared(plan, planned)


def test_a_failing_step_of_a_plan_is_sited_in_the_plan() -> None:
    result = verdict("split >>= each shout >>= join")
    assert isinstance(result, AcceptedPlan)
    outcome = run(result, "cats, bad")
    assert isinstance(outcome, Err) and isinstance(outcome.error, impl.Bad)
    assert outcome.site is not None and outcome.site.file == PLAN_FILE and outcome.site.step == "shout"


# ---------------------------------------------------------------- 4. mutations

SEEDS = (
    "shout",
    "split >>= each(limit=2) look_up >>= join",
    "(shout catch Bad => apology) orelse look_up",
    'match { "cats" => shout, _ => search >>= summarize }',
    "retry(3, on=Bad, backoff=0) (split >>= each (local shout) >>= join)",
    "(timeout(0.01) slow) orelse (split >>= join)",
    "(budget(1000) look_up) orelse shout",
)


@FUZZ
@given(st.one_of(st.sampled_from(SEEDS), plans().map(lambda plan: plan.text)), st.randoms(use_true_random=False))
def test_a_mutated_plan_gets_a_verdict(text: str, rng: random.Random) -> None:
    """tests/spec_gen.py's mutations (delete, duplicate, swap, insert, replace a token); a
    mutant that is accepted runs to a value or a declared error (or is still running after 2 s)."""
    result = verdict(mutate(text, rng, 6))
    if isinstance(result, AcceptedPlan):
        outcome = run_bounded(result, rng.choice(INPUTS))
        if outcome is not None:
            assert_declared(Plan(result.text, bad=True), outcome)


def run_bounded(result: AcceptedPlan, value: str) -> object | None:
    """The plan's outcome, or None when it has not ended in 2 s (a mutant may run `slow` bare)."""

    async def bounded() -> object | None:
        try:
            return await asyncio.wait_for(result.run(impl.Notes(), value), 2)
        except TimeoutError:
            return None

    return asyncio.run(bounded())


@FUZZ
@given(
    st.one_of(st.sampled_from(SEEDS), plans().map(lambda plan: plan.text)),
    st.randoms(use_true_random=False),
    st.sampled_from(tuple(NEVER_ACCEPTED)),
)
def test_a_plan_with_a_name_swapped_for_an_outside_one_is_rejected(
    text: str, rng: random.Random, outside: str
) -> None:
    tokens = TOKEN.findall(text)
    named = [i for i, token in enumerate(tokens) if token in ENTRIES]
    assert named
    for index in rng.sample(named, rng.randint(1, len(named))):
        tokens[index] = outside
    mutated = "".join(tokens)
    result = verdict(mutated)
    assert isinstance(result, PlanRejected), mutated
    if outside in OUTSIDE_CALLABLES:
        assert "MCE031" in codes(result), (mutated, result.diagnostics)


# ---------------------------------------------------------------- through the runtime: spawn


@pytest.fixture(autouse=True, scope="module")
def _script_restored() -> Iterator[None]:
    """The scripted planner as this module found it, once it is done."""
    script, requests = list(impl.SCRIPT), list(impl.REQUESTS)
    yield
    impl.SCRIPT[:], impl.REQUESTS[:] = script, requests


def spawned(pipeline: str, script: list[str], value: str) -> object | None:
    """``box.<pipeline>`` run with the scripted planner writing ``script`` (None: still running after 2 s)."""
    box = compiled_box()
    impl.SCRIPT[:] = script
    impl.REQUESTS.clear()

    async def bounded() -> object | None:
        try:
            return await asyncio.wait_for(getattr(box, pipeline)(impl.Notes(), value), 2)
        except TimeoutError:
            return None

    return asyncio.run(bounded())


SPAWN_SEEDS = ("shout", "split >>= each look_up >>= join", "look_up catch Bad => apology")
#: What a planner might write: any text, token soup, mutated plans, good plans.
PLAN_TEXTS = st.one_of(
    st.text(max_size=80),
    st.lists(TOKENS, max_size=20).map(" ".join),
    st.tuples(st.sampled_from(SPAWN_SEEDS), st.randoms(use_true_random=False)).map(
        lambda seed: mutate(seed[0], seed[1], 3)
    ),
    plans().map(lambda plan: plan.text),
)


@FUZZ
@given(PLAN_TEXTS, st.sampled_from(INPUTS))
def test_any_plan_a_planner_writes_gives_a_spawn_a_declared_outcome(text: str, value: str) -> None:
    """``spawn(research) write_plan`` with the planner writing ``text``: a rejection is
    Err(PlanRejected) with the state after the planner; otherwise the plan's own outcome."""
    outcome = spawned("solve", [text], value)
    if outcome is None:
        return
    assert isinstance(outcome, Ok | Err), outcome
    assert len(impl.REQUESTS) == 1 and impl.REQUESTS[0].attempt == 1 and impl.REQUESTS[0].rejection is None
    result = verdict(text)
    if isinstance(result, PlanRejected):
        assert isinstance(outcome, Err) and isinstance(outcome.error, PlanRejected), outcome
        assert outcome.error.plan == text and outcome.error.diagnostics == result.diagnostics
        assert outcome.state == impl.Notes(seen=("plan 1",), steps=1)
        return
    if isinstance(outcome, Err):
        assert isinstance(outcome.error, impl.Bad | MergeConflict), outcome
        assert not isinstance(outcome.error, PlanRejected | Defect), outcome
    assert outcome.state.seen[:1] == ("plan 1",), outcome.state  # type: ignore[attr-defined]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PLAN_TEXTS, min_size=1, max_size=3), plans(), st.sampled_from(INPUTS))
def test_a_repair_loop_shows_each_attempt_the_rejection_before_it(
    rejected: list[str], good: Plan, value: str
) -> None:
    """``retry(3, on=PlanRejected) spawn(research) write_plan``: up to two rejected plans then
    a good one run as the good one alone would (after the planner's notes); attempt k sees
    attempt k−1's rejection."""
    rejected = [text for text in rejected if isinstance(verdict(text), PlanRejected)][:2]
    outcome = spawned("repaired", [*rejected, good.text], value)
    assert outcome is not None
    attempts = len(rejected) + 1
    assert [request.attempt for request in impl.REQUESTS] == list(range(1, attempts + 1))
    assert impl.REQUESTS[0].rejection is None
    for request, before in zip(impl.REQUESTS[1:], rejected, strict=True):
        assert request.rejection is not None and request.rejection.plan == before
    alone = verdict(good.text)
    assert isinstance(alone, AcceptedPlan)
    notes = impl.Notes(seen=tuple(f"plan {k}" for k in range(1, attempts + 1)), steps=attempts)
    expected = asyncio.run(alone.run(notes, value))
    assert same_outcome(outcome, expected), (outcome, expected)


# ---------------------------------------------------------------- 5. bounds


def test_a_plan_of_the_most_characters_is_checked_and_one_more_is_too_big() -> None:
    assert isinstance(verdict("shout" + " " * (MAX_PLAN_CHARS - 5)), AcceptedPlan)
    too_long = verdict("shout" + " " * (MAX_PLAN_CHARS - 4))
    assert codes(too_long) == {"MCE032"}
    assert codes(verdict(" >>= ".join(["shout"] * 2_001))) == {"MCE032"}  # 20,004 characters


def test_a_plan_of_the_most_names_is_checked_and_one_more_is_too_big() -> None:
    assert isinstance(verdict(" >>= ".join(["shout"] * MAX_PLAN_NAMES)), AcceptedPlan)
    result = verdict(" >>= ".join(["shout"] * (MAX_PLAN_NAMES + 1)))
    assert codes(result) == {"MCE032"}
    assert isinstance(result, PlanRejected) and "501 names" in result.errors[0]["message"]


@pytest.mark.parametrize(
    ("opening", "closing"),
    [("local ", ""), ("retry(1) ", ""), ("local (", ")"), ("split >>= each (", ") >>= join")],
)
def test_a_plan_nested_the_most_levels_is_checked_and_one_more_is_too_big(opening: str, closing: str) -> None:
    """``n`` wrappers around ``shout`` nest ``n + 1`` levels (parentheses alone do not nest;
    ``retry(1)``: 31 nested ``retry(2)`` would be 2**31 step runs, past the work bound)."""
    fits = MAX_PLAN_DEPTH - 1
    if "each" in opening:  # split >>= each (…) >>= join: a chain and an each per level
        fits = (MAX_PLAN_DEPTH - 1) // 2
    inside = verdict(opening * fits + "shout" + closing * fits)
    assert isinstance(inside, AcceptedPlan), inside
    too_deep = verdict(opening * (fits + 1) + "shout" + closing * (fits + 1))
    assert codes(too_deep) == {"MCE032"}, too_deep


@pytest.mark.parametrize("levels", [100, 1_000, 3_000])
@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("(", ")"),
        ("local ", ""),
        ("each (", ")"),
        ("par<shout, ", ">"),
        ('match { "x" => ', ", _ => shout }"),
        ("(shout catch Bad => ", ")"),
        ("if shout then ", " else shout"),
        ("timeout(1) ", ""),
        ("loop(2) (", ")"),
        ("((", ") orelse shout)"),
    ],
)
def test_deep_text_is_answered(levels: int, opening: str, closing: str) -> None:
    """Thousands of levels: a verdict (MCE032, MCE001 or, for parentheses, the plan itself), no RecursionError."""
    text = opening * levels + "shout" + closing * levels
    result = verdict(text)
    if isinstance(result, PlanRejected):
        assert codes(result) <= {"MCE032", "MCE001"}, codes(result)
    if len(text) <= MAX_PLAN_CHARS and opening != "(":
        assert "MCE032" in codes(result) or "MCE001" in codes(result)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 50_000,
        ")" * 50_000,
        "shout >>= " * 5_000,
        "<" * 30_000,
        '"' + "a" * 19_990 + '"',
        'match { "' + "a" * 19_900 + '" => shout, _ => shout }',
        "shout" + " " * 1_000_000,
        "\x00" * 25_000,
        "é" * 20_001,
        "# " + "secret " * 3_000 + "\nshout",
    ],
    ids=lambda text: f"{text[:12]!r}…{len(text)}",
)
def test_long_text_is_answered(text: str) -> None:
    result = verdict(text)
    if len(text) > MAX_PLAN_CHARS:
        assert codes(result) == {"MCE032"}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, min_size=1, max_size=8), st.integers(200, 3_000))
def test_repeated_token_soup_is_answered(tokens: list[str], times: int) -> None:
    verdict(" ".join(tokens) * times)


# ---------------------------------------------------------------- found, left open

#: A loop or a retry without pause over synchronous steps never suspends (docs/DESIGN.md:
#: "backoff=0 neither sleeps nor suspends"), so a `timeout` around it cannot fire until it
#: ends: a plan `loop(N) …` or `retry(N, backoff=0) …` with N up to 18 digits holds the
#: event loop for as long as N runs take (compiled code does the same). These tests pin the
#: expected behaviour with small N; they pass once such a plan can be cut short.
@pytest.mark.parametrize(
    "text, message",
    [
        ('loop(5000) (match { "zzz" => search, _ => shout }) >>= summarize', "at most 1,000 rounds"),
        ("(timeout(0.01) (retry(5000, backoff=0) shout)) orelse (split >>= join)", "at most 10 attempts"),
        ("loop(99999999999999999) shout >>= summarize", "at most 1,000 rounds"),
    ],
    ids=["loop(5000)", "retry(5000)", "loop(10**17)"],
)
def test_a_plan_cannot_spin_past_any_timeout(text: str, message: str) -> None:
    """A run of sync steps never suspends, so no ``timeout`` could cut a plan's ``loop(10**17)`` (or
    ``retry(5000, backoff=0)``) short: plans are bounded to 1,000 rounds and 10 attempts (MCE032)."""
    result = verdict(text)
    assert isinstance(result, PlanRejected)
    assert [d["code"] for d in result.errors] == ["MCE032"] and message in result.errors[0]["message"]


def test_a_plan_at_the_round_and_attempt_bounds_runs() -> None:
    result = verdict('(loop(1000) (match { "zzz" => search, _ => shout }) >>= summarize) orelse (split >>= join)')
    assert isinstance(result, AcceptedPlan)
    assert isinstance(verdict("retry(10, backoff=0) shout"), AcceptedPlan)