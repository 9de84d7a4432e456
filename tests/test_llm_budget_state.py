"""``budget(N) e``: the state of its ``BudgetExceeded`` is the same compiled and interpreted.

docs/language.md §6/§10: a failed step keeps the state it failed with, so a budget
spent inside e fails with the state after e's last completed step (as a fired
``timeout`` does), not the state e started from. The interpreter used to
report e's start state (its ``budget`` ran e as one opaque step); these tests
compare the whole outcome — error, state, site — of the compiled pipeline and
the reference interpreter over a scripted model, for a budget spent at every
turn of the ReAct loop and for one spent by the body's last step, when the
body ends before the budget's cancellation can arrive.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentmonad import BudgetExceeded, Err, Ok
from agentmonad.testing import tool_call, use_models
from llm_react_impl import Chat
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile
from test_llm_react import SPEC, react_replies

#: Turns of the scripted ReAct run cost 25, 35, 45 tokens (react_replies' usage).
CUTS = [1, 10, 24, 25, 26, 59, 60, 61, 104, 105]

SPENT_SPEC = '''\
from llm_react_impl import Chat, Turn
import llm_react_impl as impl

state Chat

step ask   : str -> Turn = impl.ask
step spend : Turn -> Turn = impl.spend

pipeline spent : str -> Turn ! BudgetExceeded = ask >>= budget(BUDGET) (spend >>= spend);
'''


def build(tmp_path: Path, source: str, name: str) -> tuple[Any, Any]:
    spec = tmp_path / f"{name}.mce"
    spec.write_text(source, encoding="utf-8")
    result = compile_source(SourceFile(str(spec), source))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def both(program: Any, module: Any, pipeline: str, value: str, replies: list[Any] | None = None) -> list[Any]:
    """The compiled and the interpreted outcome of ``pipeline`` on ``value``, each over a fresh script."""
    outcomes = []
    for run in (
        lambda: getattr(module, pipeline)(Chat(), value),
        lambda: interpret(program, pipeline, Chat(), value),
    ):
        with use_models({"*": list(replies or [])}):
            outcomes.append(asyncio.run(run()))
    return outcomes


@pytest.mark.parametrize("tokens", CUTS)
def test_a_spent_budget_keeps_the_state_of_the_last_completed_step(tmp_path: Path, tokens: int) -> None:
    program, module = build(tmp_path, SPEC.replace("BUDGET", str(tokens)), f"react_{tokens}")
    compiled, interpreted = both(program, module, "react", "what is a monad", react_replies())
    assert interpreted == compiled
    if tokens >= 105:
        assert compiled == Ok("Answer: monads, and 42", Chat("what is a monad", (FACT, "42")))
        return
    assert isinstance(compiled, Err) and isinstance(compiled.error, BudgetExceeded), compiled
    assert compiled.site is not None and compiled.site.step == "budget"
    # the observations made before the turn that passed the budget are kept
    kept = (FACT, "42")[: 0 if tokens < 25 else 1 if tokens < 60 else 2]
    assert compiled.state == Chat("what is a monad", kept)


FACT = "A monad sequences computations that carry context."


@pytest.mark.parametrize("tokens", [10, 30, 40])
def test_a_budget_spent_by_the_last_step_keeps_the_state_it_ended_with(tmp_path: Path, tokens: int) -> None:
    """``spend`` is a sync step: the body ends before the budget's cancellation can land, and the
    budget fails as it closes — with the body's final state."""
    program, module = build(tmp_path, SPENT_SPEC.replace("BUDGET", str(tokens)), f"spent_{tokens}")
    compiled, interpreted = both(program, module, "spent", "q")
    assert interpreted == compiled
    if tokens >= 40:
        assert isinstance(compiled, Ok) and compiled.state == Chat("q", ("spent 20", "spent 20"))
        return
    assert isinstance(compiled, Err) and compiled.error == BudgetExceeded(tokens, 40), compiled
    assert compiled.state == Chat("q", ("spent 20", "spent 20"))


def test_a_tool_call_budget_state_is_not_the_start_state(tmp_path: Path) -> None:
    """The case the interpreter got wrong, written out: spent in the second turn, after one observation."""
    program, module = build(tmp_path, SPEC.replace("BUDGET", "40"), "react_40")
    replies = [tool_call("SearchArgs", {"query": "monads"}, usage=(20, 5)), tool_call("Answer", {"text": "x"}, usage=(30, 5))]
    compiled, interpreted = both(program, module, "react", "q", replies)
    assert isinstance(interpreted, Err) and isinstance(interpreted.error, BudgetExceeded)
    assert interpreted.state == compiled.state == Chat("q", (FACT,))


NESTED_SPEC = '''\
from llm_react_impl import Chat, Turn
import llm_react_impl as impl

state Chat

step ask   : str -> Turn = impl.ask
step spend : Turn -> Turn = impl.spend
async step wait : Turn -> Turn = impl.wait

pipeline sub : Turn -> Turn = spend >>= wait;
pipeline outer : Turn -> Turn = sub >>= spend;

pipeline main : str -> Turn ! BudgetExceeded = ask >>= budget(10) BODY;
'''

#: A budget spent inside a helper in mid-chain (the first ``spend``, 20 tokens > 10), its
#: cancellation landing in ``wait`` there: the failure keeps the state after that ``spend``.
NESTED_BODIES = {
    "pipeline": "(sub >>= spend)",
    "pipeline-in-pipeline": "(outer >>= spend)",
    "match": "(match { _ => (spend >>= wait) } >>= spend)",
    "retry": "(retry(2) (spend >>= wait) >>= spend)",
    "local-then-pipeline": "(local spend >>= sub >>= spend)",
}


@pytest.mark.parametrize("nesting", sorted(NESTED_BODIES))
def test_a_budget_spent_inside_a_helper_keeps_the_state_that_helper_reached(tmp_path: Path, nesting: str) -> None:
    source = NESTED_SPEC.replace("BODY", NESTED_BODIES[nesting])
    program, module = build(tmp_path, source, f"nested_{nesting.replace('-', '_')}")
    compiled, interpreted = both(program, module, "main", "q")
    assert interpreted == compiled
    assert isinstance(compiled, Err) and isinstance(compiled.error, BudgetExceeded), compiled
    assert compiled.state == Chat("q", ("spent 20",))


FAILING_SPEC = '''\
from llm_react_impl import Chat, Refusal, Turn
import llm_react_impl as impl

state Chat
error Refusal

step ask   : str -> Turn = impl.ask
step spend : Turn -> Turn = impl.spend
step spend_and_fail : Turn -> Turn ! Refusal = impl.spend_and_fail

pipeline main : str -> Turn ! BudgetExceeded | Refusal = ask >>= budget(10) BODY;
'''


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("(match { Turn => spend_and_fail, _ => spend } >>= spend)", id="match-first"),
        pytest.param("(spend >>= match { Turn => spend_and_fail, _ => spend } >>= spend)", id="match-mid"),
        pytest.param("(spend_and_fail >>= spend)", id="step"),
    ],
)
def test_a_budget_spent_by_a_step_that_then_fails_keeps_the_state_it_failed_with(tmp_path: Path, body: str) -> None:
    """The last step spends the budget and returns its own ``Err`` (with a state of its own)
    before the cancellation arrives: the ``BudgetExceeded`` keeps that ``Err``'s state, whether
    the step is in the budget's body or in an arm of a ``match`` written inline there."""
    program, module = build(tmp_path, FAILING_SPEC.replace("BODY", body), "failing")
    compiled, interpreted = both(program, module, "main", "q")
    assert interpreted == compiled
    assert isinstance(compiled, Err) and isinstance(compiled.error, BudgetExceeded), compiled
