"""Step implementations for examples/research/research.mce.

The "LLM" is a deterministic rule-based stand-in so that the example runs
offline and its tests are exact; the tools are MCP-shaped (a name, JSON
arguments, a result with text content) and live in an in-process registry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict

from agentmonad import Err, Ok, Outcome


class AgentState(BaseModel):
    """What the agent remembers: the question it is working on and what it did."""

    model_config = ConfigDict(frozen=True)

    question: str = ""
    history: tuple[str, ...] = ()
    tool_calls: int = 0


class ToolCall(BaseModel):
    """An MCP-shaped tool call: the tool's name and its JSON arguments."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, str]


class ToolResult(BaseModel):
    """What a tool returned."""

    model_config = ConfigDict(frozen=True)

    tool: str
    text: str


class LLMError(Exception):
    """The (stand-in) language model could not do what was asked."""


class ToolError(Exception):
    """A tool call failed: unknown tool, or the tool reported an error."""


_FACTS = {
    "monad": "A monad sequences computations that carry context: state, errors, effects.",
    "mcp": "The Model Context Protocol connects agents to tools over JSON-RPC.",
    "python": "Python is a programming language that lets you work quickly.",
}


async def _search(arguments: dict[str, str]) -> str:
    await asyncio.sleep(0)  # a real tool would do I/O here
    query = arguments.get("query", "").lower()
    hits = [fact for key, fact in sorted(_FACTS.items()) if key in query]
    return " ".join(hits) if hits else f"No results for {query!r}."


async def _calculate(arguments: dict[str, str]) -> str:
    await asyncio.sleep(0)
    left, right = int(arguments["a"]), int(arguments["b"])
    return str(left + right)


#: The tool server: tool name -> async implementation.
TOOLS: dict[str, Callable[[dict[str, str]], Awaitable[str]]] = {
    "search": _search,
    "add": _calculate,
}


def plan_action(state: AgentState, question: str) -> Outcome[AgentState, LLMError, ToolCall]:
    """Decide which tool to call for ``question`` (an LLM's job, done by rules here)."""
    text = question.strip()
    if not text:
        return Err(LLMError("the question is empty"), state)
    words = text.lower().split()
    if "guess" in words:
        call = ToolCall(tool="guess", arguments={"question": text})
    elif len(words) == 3 and words[1] == "plus" and words[0].isdigit() and words[2].isdigit():
        call = ToolCall(tool="add", arguments={"a": words[0], "b": words[2]})
    else:
        call = ToolCall(tool="search", arguments={"query": text})
    history = (*state.history, f"plan: {call.tool}")
    return Ok(call, state.model_copy(update={"question": text, "history": history}))


async def execute_tool(state: AgentState, call: ToolCall) -> Outcome[AgentState, ToolError, ToolResult]:
    """Run the planned tool call against the tool server."""
    tool = TOOLS.get(call.tool)
    if tool is None:
        raise ToolError(f"unknown tool {call.tool!r} (the server has: {', '.join(sorted(TOOLS))})")
    text = await tool(call.arguments)
    updated = state.model_copy(
        update={"history": (*state.history, f"tool: {call.tool}"), "tool_calls": state.tool_calls + 1}
    )
    return Ok(ToolResult(tool=call.tool, text=text), updated)


def synthesize_answer(state: AgentState, result: ToolResult) -> Outcome[AgentState, LLMError, str]:
    """Turn the tool's output into an answer to the question."""
    answer = f"{state.question} -> {result.text}"
    return Ok(answer, state.model_copy(update={"history": (*state.history, "synthesize")}))


def format_output(answer: str) -> str:
    """Final presentation."""
    return f"Answer: {answer}"
