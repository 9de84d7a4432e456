"""A short tour of the agentmonad runtime (``python examples/runtime_tour.py``).

The research pipeline of docs/language.md §1, built by hand with ``lift_step`` and
``lift_fn`` the way the reference interpreter builds it from a checked spec.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from typing import Annotated

from agentmonad import AgentMonad, Append, Err, Ok, Outcome, Site, Sum, lift_fn, lift_step


@dataclass(frozen=True)
class AgentState:
    log: Annotated[tuple[str, ...], Append] = ()
    calls: Annotated[int, Sum] = 0


class LLMError(Exception):
    pass


class ToolError(Exception):
    pass


def plan_action(state: AgentState, question: str) -> Outcome[AgentState, LLMError, str]:
    if not question:
        raise LLMError("empty question")  # a declared error: same as returning Err
    return Ok(f"search:{question}", replace(state, log=state.log + (f"plan {question}",)))


async def execute_tool(state: AgentState, call: str) -> Outcome[AgentState, ToolError, str]:
    await asyncio.sleep(0.01)
    if "fail" in call:
        return Err(ToolError(call), state)
    return Ok(call.upper(), replace(state, calls=state.calls + 1))


plan = lift_step(plan_action, name="plan_action", errors=(LLMError,), site=Site("plan_action", "research.mce", 10, 1))
execute = lift_step(execute_tool, name="execute_tool", errors=(ToolError,), is_async=True,
                    site=Site("execute_tool", "research.mce", 11, 1))
def format_output(text: str) -> str:
    return text + "!"


shout = lift_fn(format_output, name="format_output")


def answer(question: str) -> AgentMonad[AgentState, LLMError | ToolError, str]:
    return plan(question).then(execute).then(shout)


def answer_all(questions: list[str]) -> AgentMonad[AgentState, LLMError | ToolError, list[str]]:
    # `each(limit=2) answer`: the branch states merge by field (Append, Sum)
    return AgentMonad.each(questions, answer, limit=2)


if __name__ == "__main__":
    print(answer("monads").run_sync(AgentState()))
    print(answer_all(["a", "b", "c"]).run_sync(AgentState()))
    print(answer("fail").catch(ToolError, lambda e: AgentMonad.pure(f"fallback ({e})")).run_sync(AgentState()))
    print(answer("").run_sync(AgentState()))
