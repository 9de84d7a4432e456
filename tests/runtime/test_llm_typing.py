"""The code the compiler is meant to generate for ``model``/``llm`` declarations and
``budget(N) e`` type-checks under ``mypy --strict`` and runs as intended.

The snippet is the shape documented in docs/DESIGN.md ("LLM steps"): a model
per ``model`` declaration, a typed module-level binding per ``llm``
declaration, ``llm_scope()`` around a pipeline's body and
``async with budget(N)`` for ``budget(N) e``, with ``BudgetExceeded`` caught
into an ``Err`` with the state after the last completed step.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = textwrap.dedent(
    '''
    from dataclasses import dataclass
    from typing import Literal

    from pydantic import BaseModel

    from agentmonad import BudgetExceeded, Err, LLMFailed, LLMUnavailable, Ok, Outcome, Site
    from agentmonad.compiled import AsyncStep, raised, stop
    from agentmonad.llm import Model, budget, llm_scope, llm_step


    @dataclass(frozen=True)
    class Chat:
        turns: int = 0


    class Turn(BaseModel):
        question: str


    class Answer(BaseModel):
        text: str


    class SearchArgs(BaseModel):
        query: str


    # model fast = openai "gpt-4o-mini"
    fast = Model("fast", "gpt-4o-mini")

    # llm decide : Turn -> Answer | SearchArgs = fast "Question: {{ question }} (turn {{ state.turns }})"
    decide: AsyncStep[Chat, Turn, Answer | SearchArgs, LLMFailed | LLMUnavailable] = llm_step(
        fast, "Question: {{ question }} (turn {{ state.turns }})", Answer | SearchArgs, name="decide"
    )
    # llm label : Turn -> Literal["easy", "hard"] = fast file "label.j2"
    label: AsyncStep[Chat, Turn, Literal["easy", "hard"], LLMFailed | LLMUnavailable] = llm_step(
        fast, "{{ question }}", Literal["easy", "hard"], name="label", template_name="label.j2"
    )
    narrow: AsyncStep[Chat, Turn, str, LLMFailed] = llm_step(fast, "x", str, name="narrow")  # E: LLMUnavailable escapes

    SITE_1 = Site("decide", "react.mce", 9, 5)
    SITE_2 = Site("budget", "react.mce", 9, 5)


    # pipeline react : Turn -> Answer | SearchArgs = budget(1000) decide;
    async def react(
        state: Chat, value: Turn
    ) -> Outcome[Chat, LLMFailed | LLMUnavailable | BudgetExceeded, Answer | SearchArgs]:
        async with llm_scope():
            try:
                async with budget(1000):
                    try:
                        r = await decide(state, value)
                    except Exception as exc:
                        return raised(exc, SITE_1, state, (LLMFailed, LLMUnavailable))
                    if not isinstance(r, Ok):
                        return stop(r, SITE_1, (LLMFailed, LLMUnavailable), state=state)
                    state, v = r.state, r.value
            except BudgetExceeded as exc:
                return Err(exc, state, SITE_2)
            return Ok(v, state)
    '''
)


def test_the_intended_generated_code_type_checks(tmp_path: Path, project_mypy_cache: Path) -> None:
    path = tmp_path / "react_mce.py"
    path.write_text(SNIPPET)
    out, err, status = api.run(
        ["--strict", "--cache-dir", str(project_mypy_cache),
         "--config-file", str(ROOT / "pyproject.toml"), str(path)]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    lines = SNIPPET.splitlines()
    flagged = {int(line.split(":")[1]) for line in errors}
    expected = {i + 1 for i, text in enumerate(lines) if "# E:" in text}
    assert flagged == expected, out


def test_the_intended_generated_code_runs(tmp_path: Path) -> None:
    path = tmp_path / "react_mce.py"
    path.write_text(SNIPPET)
    spec = importlib.util.spec_from_file_location("react_mce_snippet", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        from agentmonad import BudgetExceeded, Err, Ok
        from agentmonad.testing import ScriptedModel, text, tool_call, use_models

        model = ScriptedModel([tool_call("SearchArgs", {"query": "monads"}, usage=(10, 5)), text('{"text": "long"}', usage=(900, 200))])
        with use_models(fast=model):
            first = asyncio.run(module.react(module.Chat(2), module.Turn(question="what?")))
            second = asyncio.run(module.react(module.Chat(3), module.Turn(question="more?")))
        assert first == Ok(module.SearchArgs(query="monads"), module.Chat(2))
        assert model.requests[0].prompt == "Question: what? (turn 2)"
        assert isinstance(second, Err) and second.error == BudgetExceeded(1000, 1100) and second.state == module.Chat(3)
        assert second.site == module.SITE_2
    finally:
        sys.modules.pop(spec.name, None)
