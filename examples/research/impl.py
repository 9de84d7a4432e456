"""Step implementations for examples/research/research.mce.

The planner of ``answer`` (v1) is a deterministic rule-based stand-in for an
LLM, so that pipeline runs offline and its tests are exact; ``react`` (v2)
decides with a real ``llm`` step (``decide.j2``), which a run answers offline
with ``planner.py``'s scripted model. The tools are real: they live on the MCP
server ``examples/research/search_server.py``, which the spec declares as
``server search``. The spec's ``tool`` declarations call it as typed steps;
``execute_tool`` calls whichever tool the planner chose, by name, through
``agentmonad.tools.call_tool`` on the same server (an equal ``StdioServer``
value), so both share the run's session.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from agentmonad import Err, Ok, Outcome, ToolFailed, ToolUnavailable
from agentmonad.tools import StdioServer, call_tool


class AgentState(BaseModel):
    """What the agent remembers: the question it is working on and what it did."""

    model_config = ConfigDict(frozen=True)

    question: str = ""
    history: tuple[str, ...] = ()
    tool_calls: int = 0
    #: What the ReAct loop (``react``) has observed so far, one entry per tool result;
    #: ``decide.j2`` shows them to the model.
    observations: tuple[str, ...] = ()


class ToolCall(BaseModel):
    """A planned MCP tool call: the tool's name and its JSON arguments."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, str]


class ToolResult(BaseModel):
    """What a tool returned, as text for the answer."""

    model_config = ConfigDict(frozen=True)

    tool: str
    text: str


class SearchArgs(BaseModel):
    """The arguments of the server's ``search`` tool."""

    query: str


class SearchHits(BaseModel):
    """The structured result of the server's ``search`` tool."""

    query: str
    hits: list[str]


class AddArgs(BaseModel):
    """The arguments of the server's ``add`` tool."""

    a: int
    b: int


class LLMError(Exception):
    """The (stand-in) language model could not do what was asked."""


class Turn(BaseModel):
    """One round of the ReAct loop: what ``decide.j2`` shows the model with the state's observations."""

    model_config = ConfigDict(frozen=True)

    question: str


class Answer(BaseModel):
    """The model's final answer: it ends the ReAct loop (``text``: the question and what answers it)."""

    model_config = ConfigDict(frozen=True)

    text: str


#: The server of ``server search = stdio "…"`` in research.mce. It must equal
#: the spec's declaration (tests check it), so that in one run the planner's
#: calls and the typed tools share one process and session.
SEARCH_SERVER = StdioServer("search", "python -m examples.research.search_server")


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


def _as_text(value: Any) -> str:
    """A tool's structured result as text: search hits joined, anything else as is."""
    if isinstance(value, dict) and "hits" in value:
        hits = [str(hit) for hit in value["hits"]]
        return " ".join(hits) if hits else f"No results for {str(value.get('query', '')).lower()!r}."
    return str(value)


async def execute_tool(
    state: AgentState, call: ToolCall
) -> Outcome[AgentState, ToolFailed | ToolUnavailable, ToolResult]:
    """Run the planned call on the search server.

    ``call_tool`` raises ``ToolFailed``/``ToolUnavailable`` (for ``guess``: the
    server does not list it); they are declared errors of this step, so raising
    them is ``Err(error, state)`` with the state this step received.
    """
    value = await call_tool(SEARCH_SERVER, call.tool, call.arguments)
    updated = state.model_copy(
        update={"history": (*state.history, f"tool: {call.tool}"), "tool_calls": state.tool_calls + 1}
    )
    return Ok(ToolResult(tool=call.tool, text=_as_text(value)), updated)


def synthesize_answer(state: AgentState, result: ToolResult) -> Outcome[AgentState, LLMError, str]:
    """Turn the tool's output into an answer to the question."""
    answer = f"{state.question} -> {result.text}"
    return Ok(answer, state.model_copy(update={"history": (*state.history, "synthesize")}))


def format_output(answer: str) -> str:
    """Final presentation."""
    return f"Answer: {answer}"


def hits_text(hits: SearchHits) -> str:
    """Search hits as one line."""
    return _as_text(hits.model_dump())


# ---------------------------------------------------------------- the ReAct loop (`react`)


def ask(state: AgentState, question: str) -> Outcome[AgentState, LLMError, Turn]:
    """The first turn of the loop: remember the question (``observe`` asks it again)."""
    text = question.strip()
    if not text:
        return Err(LLMError("the question is empty"), state)
    return Ok(Turn(question=text), state.model_copy(update={"question": text}))


def observe(state: AgentState, observation: str) -> Outcome[AgentState, LLMError, Turn]:
    """Add a tool's result to the transcript; the loop goes round with the same question."""
    updated = state.model_copy(
        update={
            "observations": (*state.observations, observation),
            "history": (*state.history, f"observe: {observation}"),
            "tool_calls": state.tool_calls + 1,
        }
    )
    return Ok(Turn(question=state.question), updated)


def sum_text(total: int) -> str:
    """The add tool's result as an observation."""
    return str(total)


def final(answer: Answer) -> str:
    """The loop's answer, presented."""
    return f"Answer: {answer.text}"
