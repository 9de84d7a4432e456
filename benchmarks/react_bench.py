"""The ReAct agent end to end against LangGraph and pydantic-ai (issue 22).

One agent, written four ways, run against the same two servers with the same
scripted replies:

- **mcec**: ``benchmarks/react/react.mce`` compiled: an ``llm decide`` step whose
  output is a union of tool-argument models (one function per member), ``loop``
  and ``match``, and MCP ``tool`` steps;
- **langgraph**: a ``StateGraph`` (decide → search | add | final, the tools back
  to decide), whose nodes call plain ``AsyncOpenAI`` (the same request mcec
  sends: one user message with the rendered prompt, the three functions,
  ``tool_choice="required"``; the reply parsed with pydantic) and the MCP
  server through the MCP SDK's ``ClientSession`` (langchain-openai and
  langchain-mcp-adapters are not used: the graph is what is measured);
- **pydantic_ai**: an ``Agent`` over ``OpenAIChatModel`` with an
  ``OpenAIProvider`` on the same ``AsyncOpenAI`` settings, ``output_type=
  ToolOutput(Answer, name="Answer")`` and two function tools named
  ``SearchArgs`` / ``AddArgs`` whose bodies call the MCP server through the
  same ``ClientSession`` (pydantic-ai's own ``MCPToolset`` needs fastmcp, which
  the ``bench`` extra does not install). Unlike the other two it sends the
  whole conversation each turn (that is how its agent loop works);
- **floor**: the same eight turns hand-written in one ``async def``: the
  LangGraph nodes' model and tool calls in a ``for`` loop, no framework.

The model is ``tests/llm_server.py`` in a subprocess (so that it does not share
this process's interpreter lock), scripted before every run over
``POST /v1/_script`` with the same eight replies — seven tool calls
(``SearchArgs`` and ``AddArgs`` in turn) and then ``Answer`` — each answered
after a fixed delay (``--model-delay``, default 20 ms). The tools are
``benchmarks/react/tool_server.py``, a real MCP server over stdio, whose every
call waits ``--tool-delay`` (default 5 ms). Each system starts its own tool
server process and HTTP client once, before the rounds.

Per run: wall time (``perf_counter``), this process's CPU time
(``process_time``: the servers' processes are not counted), and the time
beyond the scripted latency, ``wall − (8 × model delay + 7 × tool delay)``
(what the framework, the HTTP and MCP clients, and the servers' own handling
add). The systems run in turn, the order rotating every round, after
warm-up rounds; figures are medians over the rounds. Every run is checked
(the answer, and that the server used up exactly the eight replies).

    python -m benchmarks.react_bench [--rounds 21] [--model-delay 0.02] [--tool-delay 0.005] [--smoke] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import statistics
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "benchmarks" / "react" / "react.mce"
KEY = "sk-bench"
MODEL_ID = "bench-model"
TURNS = 8
QUESTION = "what is a monad, and what is mcp"
ANSWER = "Answer: monads sequence context; mcp connects tools"

PEERS = ("langgraph", "pydantic_ai")
SYSTEMS = ("mcec", "floor", *PEERS)
PEERS_AVAILABLE = {
    "langgraph": importlib.util.find_spec("langgraph") is not None,
    "pydantic_ai": importlib.util.find_spec("pydantic_ai") is not None,
}


def script() -> list[dict[str, Any]]:
    """The eight replies of one run: seven tool calls, then the answer (the same for every system)."""
    replies: list[dict[str, Any]] = []
    for turn in range(1, TURNS):
        if turn % 2:
            replies.append({"tool": "SearchArgs", "arguments": {"query": "monad" if turn % 4 == 1 else "mcp"}})
        else:
            replies.append({"tool": "AddArgs", "arguments": {"a": turn, "b": 40}})
    replies.append({"tool": "Answer", "arguments": {"text": ANSWER.removeprefix("Answer: ")}})
    for reply in replies:
        reply["usage"] = [50, 10]
    return replies


def expected_notes() -> list[str]:
    """The notes a run ends with (the tools' answers to the script)."""
    from benchmarks.react.tool_server import FACTS

    notes = []
    for turn in range(1, TURNS):
        if turn % 2:
            notes.append(FACTS["monad"] if turn % 4 == 1 else FACTS["mcp"])
        else:
            notes.append(f"the sum is {turn + 40}")
    return notes


# ---------------------------------------------------------------- the model server


class ModelServer:
    """``tests/llm_server.py`` in a subprocess, scripted over HTTP."""

    def __init__(self, delay: float) -> None:
        from benchmarks.llm_bench import start_server

        self.delay = delay
        self.proc, self.url = start_server()

    def _post(self, body: dict[str, Any]) -> int:
        request = urllib.request.Request(
            f"{self.url}/_script", data=json.dumps(body).encode(), headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return int(json.loads(answer.read())["pending"])

    def load(self) -> None:
        """Queue one run's replies (dropping anything left over)."""
        replies = [{**reply, "delay": self.delay} for reply in script()]
        self._post({"clear": True, "replies": replies})

    def pending(self) -> int:
        return self._post({"replies": []})

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# ---------------------------------------------------------------- the systems

Run = Callable[[], Awaitable[tuple[str, list[str]]]]


@contextlib.asynccontextmanager
async def mcec_agent(url: str) -> AsyncIterator[Run]:
    """The compiled spec, with its MCP server and model client kept up across runs (one scope each)."""
    from agentmonad import Ok
    from agentmonad.llm import LLMConfig, ModelSettings, llm_config, llm_scope
    from agentmonad.mcp import tool_scope
    from benchmarks.react.impl import Notes
    from mcec.compiler import compile_source
    from mcec.run.runner import load_module
    from mcec.span import SourceFile

    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    module = load_module(result.program, result.generated)
    config = LLMConfig(models={"*": ModelSettings(base_url=url, api_key=KEY, max_retries=0, timeout=60)})

    async def run() -> tuple[str, list[str]]:
        out = await module.react(Notes(), QUESTION)
        assert type(out) is Ok, out
        return out.value, list(out.state.notes)

    with llm_config(config):
        async with tool_scope(), llm_scope():
            yield run


@contextlib.asynccontextmanager
async def mcp_session() -> AsyncIterator[Any]:
    """An MCP SDK ``ClientSession`` on the tool server (what the peers and the floor call)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "benchmarks.react.tool_server"], cwd=str(ROOT), env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _openai(url: str) -> Any:
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)


def _tools() -> list[dict[str, Any]]:
    """The three functions offered each turn, from the models' JSON schemas."""
    from benchmarks.react.impl import AddArgs, Answer, SearchArgs

    return [
        {"type": "function", "function": {"name": cls.__name__, "parameters": cls.model_json_schema()}}
        for cls in (Answer, SearchArgs, AddArgs)
    ]


class Calls:
    """The model and tool calls of the LangGraph nodes and of the floor (plain SDK calls)."""

    def __init__(self, client: Any, session: Any) -> None:
        from benchmarks.react.impl import AddArgs, Answer, SearchArgs

        self.client, self.session = client, session
        self.tools = _tools()
        self.choices: dict[str, type[Answer | SearchArgs | AddArgs]] = {
            "Answer": Answer, "SearchArgs": SearchArgs, "AddArgs": AddArgs
        }

    async def decide(self, question: str, notes: list[str]) -> Any:
        from benchmarks.react.impl import prompt

        completion = await self.client.chat.completions.create(
            model=MODEL_ID,
            messages=[{"role": "user", "content": prompt(question, notes)}],
            tools=self.tools,
            tool_choice="required",
        )
        call = completion.choices[0].message.tool_calls[0]
        return self.choices[call.function.name].model_validate_json(call.function.arguments)

    async def search(self, query: str) -> str:
        from benchmarks.react.impl import Hits, hits_note

        result = await self.session.call_tool("search", {"query": query})
        assert not result.is_error, result
        return hits_note(Hits.model_validate(result.structured_content))

    async def add(self, a: int, b: int) -> str:
        from benchmarks.react.impl import sum_note

        result = await self.session.call_tool("add", {"a": a, "b": b})
        assert not result.is_error, result
        return sum_note(int(result.structured_content["result"]))


@contextlib.asynccontextmanager
async def floor_agent(url: str) -> AsyncIterator[Run]:
    """The eight turns by hand: the same calls as the LangGraph nodes, in a ``for`` loop."""
    from benchmarks.react.impl import AddArgs, Answer, SearchArgs

    client = _openai(url)
    async with mcp_session() as session:
        calls = Calls(client, session)

        async def run() -> tuple[str, list[str]]:
            notes: list[str] = []
            for _ in range(TURNS):
                choice = await calls.decide(QUESTION, notes)
                if isinstance(choice, Answer):
                    return f"Answer: {choice.text}", notes
                if isinstance(choice, SearchArgs):
                    notes = [*notes, await calls.search(choice.query)]
                elif isinstance(choice, AddArgs):
                    notes = [*notes, await calls.add(choice.a, choice.b)]
            raise AssertionError("no answer in eight turns")

        try:
            yield run
        finally:
            await client.close()


class GraphState(TypedDict, total=False):
    """The LangGraph agent's state."""

    question: str
    notes: list[str]
    choice: Any
    answer: str


@contextlib.asynccontextmanager
async def langgraph_agent(url: str) -> AsyncIterator[Run]:
    """A ``StateGraph``: decide → search | add | final; search and add go back to decide."""
    from langgraph.graph import END, START, StateGraph

    client = _openai(url)
    async with mcp_session() as session:
        calls = Calls(client, session)

        async def decide(state: GraphState) -> GraphState:
            return {"choice": await calls.decide(state["question"], state["notes"])}

        async def search(state: GraphState) -> GraphState:
            return {"notes": [*state["notes"], await calls.search(state["choice"].query)]}

        async def add(state: GraphState) -> GraphState:
            choice = state["choice"]
            return {"notes": [*state["notes"], await calls.add(choice.a, choice.b)]}

        def final(state: GraphState) -> GraphState:
            return {"answer": f"Answer: {state['choice'].text}"}

        def route(state: GraphState) -> str:
            return {"Answer": "final", "SearchArgs": "search", "AddArgs": "add"}[type(state["choice"]).__name__]

        graph: Any = StateGraph(GraphState)
        graph.add_node("decide", decide)
        graph.add_node("search", search)
        graph.add_node("add", add)
        graph.add_node("final", final)
        graph.add_edge(START, "decide")
        graph.add_conditional_edges("decide", route, ["final", "search", "add"])
        graph.add_edge("search", "decide")
        graph.add_edge("add", "decide")
        graph.add_edge("final", END)
        app = graph.compile()

        async def run() -> tuple[str, list[str]]:
            out = await app.ainvoke({"question": QUESTION, "notes": []}, {"recursion_limit": 4 * TURNS})
            return out["answer"], out["notes"]

        try:
            yield run
        finally:
            await client.close()


@contextlib.asynccontextmanager
async def pydantic_ai_agent(url: str) -> AsyncIterator[Run]:
    """An ``Agent`` with the answer as its output tool and the two MCP tools as function tools."""
    from pydantic_ai import Agent, Tool, ToolOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from benchmarks.react.impl import Answer, prompt

    client = _openai(url)
    async with mcp_session() as session:
        calls = Calls(client, session)
        notes: list[str] = []

        async def search(query: str) -> str:
            """Search the facts."""
            note = await calls.search(query)
            notes.append(note)
            return note

        async def add(a: int, b: int) -> str:
            """Add two integers."""
            note = await calls.add(a, b)
            notes.append(note)
            return note

        model = OpenAIChatModel(MODEL_ID, provider=OpenAIProvider(openai_client=client))
        agent: Any = Agent(
            model,
            output_type=ToolOutput(Answer, name="Answer"),
            tools=[Tool(search, name="SearchArgs"), Tool(add, name="AddArgs")],
        )

        async def run() -> tuple[str, list[str]]:
            notes.clear()
            result = await agent.run(prompt(QUESTION, []))
            return f"Answer: {result.output.text}", list(notes)

        try:
            yield run
        finally:
            await client.close()


AGENTS: dict[str, Callable[[str], contextlib.AbstractAsyncContextManager[Run]]] = {
    "mcec": mcec_agent,
    "floor": floor_agent,
    "langgraph": langgraph_agent,
    "pydantic_ai": pydantic_ai_agent,
}


# ---------------------------------------------------------------- measuring


async def measure(
    server: ModelServer, systems: list[str], *, rounds: int, warmup: int, tool_delay: float
) -> dict[str, list[tuple[float, float]]]:
    """(wall s, CPU s) per run, per system: ``warmup`` + ``rounds`` rounds, the order rotating."""
    expected = (ANSWER, expected_notes())
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in systems}
    async with contextlib.AsyncExitStack() as stack:
        runs = {name: await stack.enter_async_context(AGENTS[name](server.url)) for name in systems}
        for n in range(warmup + rounds):
            order = systems[n % len(systems) :] + systems[: n % len(systems)]
            for name in order:
                server.load()
                t0, c0 = time.perf_counter(), time.process_time()
                got = await runs[name]()
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                assert got == expected, (name, got)
                left = server.pending()
                assert left == 0, f"{name} left {left} scripted replies unused"
                if n >= warmup:
                    times[name].append((wall, cpu))
    return times


def summarise(times: dict[str, list[tuple[float, float]]], model_delay: float, tool_delay: float) -> dict[str, Any]:
    latency = TURNS * model_delay + (TURNS - 1) * tool_delay
    out: dict[str, Any] = {}
    for name, runs in times.items():
        walls = [w for w, _ in runs]
        wall = statistics.median(walls)
        out[name] = {
            "wall_ms": round(wall * 1e3, 2),
            "beyond_ms": round((wall - latency) * 1e3, 2),
            "beyond_ms_per_turn": round((wall - latency) / TURNS * 1e3, 3),
            "cpu_ms_per_turn": round(statistics.median(c for _, c in runs) / TURNS * 1e3, 3),
            "wall_ms_min_max": [round(min(walls) * 1e3, 2), round(max(walls) * 1e3, 2)],
            "runs": len(runs),
        }
    if "mcec" in out:
        base = out["mcec"]["beyond_ms"]
        for name, row in out.items():
            row["beyond_over_mcec"] = round(row["beyond_ms"] / base, 2) if base > 0 else None
            # the same ratio within each round (the runs of a round are adjacent), then the median
            pairs = [(w - latency) / (m - latency) for (w, _), (m, _) in zip(times[name], times["mcec"]) if m > latency]
            row["beyond_over_mcec_paired"] = round(statistics.median(pairs), 2) if pairs else None
        others = [row["beyond_ms"] for name, row in out.items() if name in PEERS]
        out["mcec_smallest_beyond"] = bool(others) and all(base < other for other in others)
    return out


def run_all(
    *, rounds: int, warmup: int, model_delay: float, tool_delay: float, systems: list[str] | None = None
) -> dict[str, Any]:
    """The benchmark as ``benchmarks/run.py`` calls it: the figures and the conditions."""
    for name in ("httpx", "httpx2", "mcp"):  # a peer may set up INFO logging of every request
        logging.getLogger(name).setLevel(logging.WARNING)
    chosen = [s for s in (systems or list(SYSTEMS)) if PEERS_AVAILABLE.get(s, True)]
    skipped = [s for s in (systems or list(SYSTEMS)) if s not in chosen]
    os.environ["MCEC_BENCH_TOOL_DELAY"] = repr(tool_delay)
    server = ModelServer(model_delay)
    try:
        with contextlib.chdir(ROOT):  # the spec's server command is `python -m benchmarks.react.tool_server`
            times = asyncio.run(measure(server, chosen, rounds=rounds, warmup=warmup, tool_delay=tool_delay))
    finally:
        server.close()
    results = summarise(times, model_delay, tool_delay)
    results["conditions"] = {
        "turns": TURNS,
        "model_delay_s": model_delay,
        "tool_delay_s": tool_delay,
        "scripted_latency_ms": round((TURNS * model_delay + (TURNS - 1) * tool_delay) * 1e3, 2),
        "rounds": rounds,
        "warmup": warmup,
        "not_installed": skipped,
        "load_average": list(os.getloadavg()),
    }
    return results


def print_detail(results: dict[str, Any]) -> None:
    """The conditions and one line per system."""
    conditions = results["conditions"]
    print(f"{TURNS} turns, model delay {conditions['model_delay_s'] * 1e3:g} ms, tool delay "
          f"{conditions['tool_delay_s'] * 1e3:g} ms (scripted latency {conditions['scripted_latency_ms']} ms), "
          f"{conditions['rounds']} rounds; load {conditions['load_average']}")
    print(f"{'system':<12} {'wall ms':>9} {'beyond ms':>10} {'beyond/turn':>12} {'CPU ms/turn':>12} {'beyond ÷ mcec':>14} {'(per round)':>12}")
    for name in SYSTEMS:
        row = results.get(name)
        if row is None:
            print(f"{name:<12} not installed")
            continue
        print(f"{name:<12} {row['wall_ms']:>9} {row['beyond_ms']:>10} {row['beyond_ms_per_turn']:>12} "
              f"{row['cpu_ms_per_turn']:>12} {row.get('beyond_over_mcec')!s:>14} {row.get('beyond_over_mcec_paired')!s:>12}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The ReAct agent end to end: mcec, LangGraph, pydantic-ai, a floor")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--model-delay", type=float, default=0.02)
    parser.add_argument("--tool-delay", type=float, default=0.005)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--smoke", action="store_true", help="one round after one warm-up, 1 ms delays: to check that it runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.warmup, args.model_delay, args.tool_delay = 1, 1, 0.001, 0.001
    results = run_all(
        rounds=args.rounds, warmup=args.warmup, model_delay=args.model_delay, tool_delay=args.tool_delay,
        systems=args.systems.split(","),
    )
    print_detail(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
