"""``mcec serve``: a spec's pipelines as MCP tools, tested with the SDK's own client.

The server is a real subprocess (``python -m mcec serve mcp_servers/served.mce``,
run from ``tests/``) and the client is ``mcp.ClientSession`` over
``stdio_client``; one server answers all the calls of the main test, which
also shows that it survives bad arguments and Defects.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent
from pydantic import TypeAdapter

from mcec.compiler import compile_source
from mcec.run.runner import load_module
from mcec.run.serve import ServeError, pipeline_tools
from mcec.span import SourceFile
from mcp_servers.pipelines import Query
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)

TESTS = Path(__file__).resolve().parents[1]
SPEC = "mcp_servers/served.mce"


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def test_serve_over_stdio() -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcec", "serve", SPEC], env=dict(os.environ), cwd=str(TESTS)
    )

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            seen["ok"] = await session.call_tool("ask", {"question": "hi", "times": 2})
            seen["err"] = await session.call_tool("ask", {"question": "refuse"})
            seen["invalid"] = await session.call_tool("ask", {"question": 3, "times": "many"})
            seen["defect"] = await session.call_tool("broken", {"question": "x"})
            seen["value"] = await session.call_tool("loud", {"value": "hey"})
            seen["no_value"] = await session.call_tool("loud", {"text": "hey"})
            seen["each"] = await session.call_tool("twice", {"value": [{"question": "a"}, {"question": "b"}]})
            seen["unknown"] = await session.call_tool("nope", {})
            seen["again"] = await session.call_tool("ask", {"question": "still alive"})
        return seen

    seen = asyncio.run(main())

    tools = seen["tools"]
    assert sorted(tools) == ["ask", "broken", "loud", "twice"]
    # A is a model: its fields are the arguments, the schema is the model's
    assert tools["ask"].input_schema == Query.model_json_schema()
    assert tools["ask"].output_schema is not None and tools["ask"].output_schema["title"] == "Answer"
    # otherwise: one argument `value`, with definitions hoisted to the root
    assert tools["loud"].input_schema == {
        "type": "object",
        "required": ["value"],
        "additionalProperties": False,
        "properties": {"value": {"type": "string"}},
    }
    twice = tools["twice"].input_schema
    assert twice["properties"]["value"]["items"] == {"$ref": "#/$defs/Query"}
    assert twice["$defs"]["Query"] == TypeAdapter(Query).json_schema()

    ok = seen["ok"]
    # each call starts from a fresh Counter(): calls is 1, every time
    assert not ok.is_error and ok.structured_content == {"text": "hi hi", "calls": 1}
    assert '"hi hi"' in text(ok)
    err = seen["err"]
    assert err.is_error and text(err).startswith("Refused: will not answer 'refuse'")
    assert "served.mce" in text(err)  # the failing step's site
    invalid = seen["invalid"]
    assert invalid.is_error and text(invalid).startswith("invalid arguments for ask:")
    assert "question" in text(invalid) and "times" in text(invalid)
    defect = seen["defect"]
    assert defect.is_error and "defect" in text(defect) and "ZeroDivisionError" in text(defect)
    assert seen["value"].structured_content == {"result": "HEY!"} and text(seen["value"]) == "HEY!"
    assert seen["no_value"].is_error and "unexpected argument(s) text" in text(seen["no_value"])
    assert seen["each"].structured_content == {"result": [{"text": "a", "calls": 1}, {"text": "b", "calls": 1}]}
    assert seen["unknown"].is_error and "unknown tool 'nope'" in text(seen["unknown"])
    assert seen["again"].structured_content == {"text": "still alive", "calls": 1}


def test_serve_rejects_a_bad_spec_before_serving(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mce"
    bad.write_text("pipeline p : int -> str = nowhere;\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "serve", str(bad)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert done.stdout == ""  # stdout is the protocol's: diagnostics go to stderr
    assert "MCE002" in done.stderr and "Traceback" not in done.stderr


def test_pipeline_selection() -> None:
    """``--pipeline`` chooses which pipelines become tools (checked in-process)."""
    source = SourceFile(SPEC, (TESTS / SPEC).read_text(encoding="utf-8"))
    result = compile_source(source)
    assert result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    assert [t.name for t in pipeline_tools(result.program, module, ["loud", "ask"])] == ["loud", "ask"]
    assert len(pipeline_tools(result.program, module)) == 4
    try:
        pipeline_tools(result.program, module, ["ask", "nope"])
    except ServeError as exc:
        assert "no pipeline named 'nope'" in str(exc) and "ask, broken, loud, twice" in str(exc)
    else:
        raise AssertionError("an unknown pipeline was accepted")


TOOLS_SPEC = """
from typing import Any
from mcp_servers.pipelines import EchoArgs

server box = stdio COMMAND
tool echo  : EchoArgs -> str       = box.echo
tool crash : dict[str, Any] -> str = box.crash

pipeline say  : EchoArgs -> str = echo;
pipeline dies : dict[str, Any] -> str = crash;
"""


def test_served_pipelines_share_their_tool_servers_and_restart_a_failed_one(tmp_path: Path) -> None:
    import json
    import shlex
    import time

    folder = tmp_path / "box"
    folder.mkdir()
    command = shlex.join([sys.executable, str(TESTS / "mcp_servers" / "toolbox_server.py"), str(folder)])
    spec = tmp_path / "tools_served.mce"
    spec.write_text(TOOLS_SPEC.replace("COMMAND", json.dumps(command)), encoding="utf-8")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcec", "serve", str(spec)], env=dict(os.environ), cwd=str(TESTS)
    )

    def pids() -> list[int]:
        return sorted(int(p.name.removeprefix("pid-")) for p in folder.glob("pid-*"))

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["calls"] = [await session.call_tool("say", {"text": f"hi {n}"}) for n in range(3)]
            seen["pids_after_calls"] = pids()
            seen["crash"] = await session.call_tool("dies", {"value": {}})
            seen["after_crash"] = await session.call_tool("say", {"text": "back"})
            seen["pids_after_restart"] = pids()
        return seen

    seen = asyncio.run(main())
    assert [text(c) for c in seen["calls"]] == ["hi 0", "hi 1", "hi 2"]
    assert len(seen["pids_after_calls"]) == 1  # one server process for every call, not one per call
    assert seen["crash"].is_error and "ToolUnavailable" in text(seen["crash"]), text(seen["crash"])
    assert not seen["after_crash"].is_error, (text(seen["crash"]), text(seen["after_crash"]))
    assert not seen["after_crash"].is_error and text(seen["after_crash"]) == "back"
    assert len(seen["pids_after_restart"]) == 2  # the crashed server was started again

    def alive(pid: int) -> bool:  # a zombie (exited, not yet reaped) counts as gone
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except (OSError, IndexError):
            return False

    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids() if alive(pid)], "a tool server outlived mcec serve"


# ------------------------------------------------ which pipelines, descriptions, --state, rendering (issue 18)

SERVED_IMPL = '''\
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agentmonad import Err, Ok, Outcome


class Need(BaseModel):
    user: str  # required: S() cannot be built


class Nasty(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() of this error raises")


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("repr() raises too")


def shout(text: str) -> str:
    return text.upper()


def greet(state: Need, text: str) -> Outcome[Need, None, str]:
    return Ok(f"Hello {text}, from {state.user}", state)


def deep(state: Need, depth: int) -> Outcome[Need, None, Any]:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return Ok(value, state)


def nasty(state: Need, text: str) -> Outcome[Need, Nasty, str]:
    return Err(Nasty(), state)


def weird(state: Need, text: str) -> Outcome[Need, None, Any]:
    return Ok(Unprintable(), state)
'''

SERVED_SPEC = """\
from typing import Any
from app.impl import Need, Nasty
import app.impl as impl

state Need
error Nasty

fn shout    : str -> str         = impl.shout
step greet  : str -> str         = impl.greet
step deep   : int -> Any         = impl.deep
step nasty  : str -> str ! Nasty = impl.nasty
step weird  : str -> Any         = impl.weird

# A helper: used by hello, so not served by default.
pipeline helper : str -> str = shout;

# Greets someone on behalf of the state's user.
#   (Shouts their name.)
pipeline hello : str -> str = helper >>= greet;

pipeline nest : int -> Any = deep;
pipeline nasty_error : str -> str ! Nasty = nasty;

# unrelated comment

pipeline unprintable : str -> Any = weird;
"""


def _served_project(tmp_path: Path, spec: str = SERVED_SPEC, impl: str = SERVED_IMPL) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "impl.py").write_text(impl)
    (tmp_path / "app" / "served.mce").write_text(spec)
    return tmp_path


def _params(project: Path, *args: str) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(project)}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcec", "serve", "app/served.mce", *args], env=env, cwd=str(project)
    )


def test_serve_defaults_to_entry_pipelines_described_by_their_comments(tmp_path: Path) -> None:
    params = _params(_served_project(tmp_path), "--state", '{"user": "ada"}')

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            seen["hello"] = await session.call_tool("hello", {"value": "bob"})
            seen["again"] = await session.call_tool("hello", {"value": "eve"})
        return seen

    seen = asyncio.run(main())
    tools = seen["tools"]
    assert sorted(tools) == ["hello", "nasty_error", "nest", "unprintable"]  # helper is used by hello
    assert tools["hello"].description == "Greets someone on behalf of the state's user.\n  (Shouts their name.)"
    assert tools["nest"].description == "Pipeline nest of app/served.mce: int -> Any."  # no comment right above
    assert tools["unprintable"].description.startswith("Pipeline unprintable")  # a blank line separates the comment
    assert text(seen["hello"]) == "Hello BOB, from ada" and text(seen["again"]) == "Hello EVE, from ada"


def test_serve_pipeline_flag_chooses_exactly_the_pipelines_named(tmp_path: Path) -> None:
    params = _params(_served_project(tmp_path), "--pipeline", "helper", "--pipeline", "hello", "--state", '{"user": "x"}')

    async def main() -> list[str]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [t.name for t in (await session.list_tools()).tools]

    assert asyncio.run(main()) == ["helper", "hello"]


def _serve(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mcec", "serve", "app/served.mce", *args],
        cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
    )


def test_serve_a_state_with_required_fields_needs_state_and_validates_it(tmp_path: Path) -> None:
    project = _served_project(tmp_path)
    done = _serve(project)
    assert done.returncode == 1 and done.stdout == ""
    assert "cannot be built without arguments" in done.stderr and "--state JSON" in done.stderr
    done = _serve(project, "--state", '{"name": 3}')
    assert done.returncode == 2 and done.stdout == ""
    assert "invalid --state: user: Field required" in done.stderr and "Traceback" not in done.stderr


def test_serve_reports_a_missing_implementation_at_its_declaration(tmp_path: Path) -> None:
    project = _served_project(tmp_path, SERVED_SPEC.replace("impl.greet", "impl.greeet"))
    done = _serve(project, "--state", '{"user": "x"}')
    assert done.returncode == 1 and done.stdout == ""
    # the checker reads app/impl.py before anything is served (or imported)
    assert "error[MCE002]: module `app.impl` has no `greeet`" in done.stderr and "did you mean `greet`?" in done.stderr
    assert "--> app/served.mce:9:" in done.stderr
    assert "internal compiler error" not in done.stderr and "Traceback" not in done.stderr


def test_serve_results_and_errors_that_cannot_be_rendered_are_error_results(tmp_path: Path) -> None:
    impl = SERVED_IMPL.replace("user: str  # required: S() cannot be built", 'user: str = "anyone"')
    params = _params(_served_project(tmp_path, impl=impl), "--pipeline", "nasty_error", "--pipeline", "nest", "--pipeline", "unprintable")

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            # each call_tool would raise McpError if the server answered with a JSON-RPC error
            seen["nasty"] = await session.call_tool("nasty_error", {"value": "x"})
            seen["deep"] = await session.call_tool("nest", {"value": 5000})
            seen["deeper"] = await session.call_tool("nest", {"value": 150})
            seen["unprintable"] = await session.call_tool("unprintable", {"value": "x"})
            seen["shallow"] = await session.call_tool("nest", {"value": 3})
        return seen

    seen = asyncio.run(main())
    assert seen["nasty"].is_error and text(seen["nasty"]).startswith("Nasty: <Nasty whose str() failed>")
    assert seen["deep"].is_error and text(seen["deep"]).startswith("the result of nest could not be rendered")
    assert seen["deeper"].is_error and "nested more than 100 levels deep" in text(seen["deeper"])
    assert seen["unprintable"].is_error and "could not be rendered" in text(seen["unprintable"])
    assert not seen["shallow"].is_error and seen["shallow"].structured_content == {"result": [[["bottom"]]]}


def test_entry_pipelines_see_uses_inside_v2_control_flow() -> None:
    """A pipeline used only inside a match arm, an if, a loop, a retry or a timeout is a helper,
    not served by default (the typed program is built by hand until the checker knows v2)."""
    from mcec.check import typed as t
    from mcec.check.types import Builtin
    from mcec.run.serve import entry_pipelines
    from mcec.span import Span

    source = SourceFile("v2.mce", "x" * 100)
    nowhere = Span(source, 0, 0)
    text_type = Builtin("str")
    sig = t.Sig(text_type, text_type, frozenset(), False)

    def use(name: str) -> t.TRef:
        return t.TRef(name, t.RefKind.PIPELINE, sig, nowhere)

    arms = (t.TArm(t.PLiteral("a"), use("in_arm"), text_type, nowhere), t.TArm(t.PWildcard(), use("in_wildcard"), text_type, nowhere))
    body = t.TLoop(
        t.TRetry(
            t.TTimeout(t.TIf(use("in_condition"), t.TMatch(arms, sig, nowhere), use("in_else"), sig, nowhere), 1.0, sig, nowhere),
            3,
            None,
            t.DEFAULT_BACKOFF,
            sig,
            nowhere,
        ),
        2,
        text_type,
        sig,
        nowhere,
    )
    helpers = ["in_arm", "in_wildcard", "in_condition", "in_else"]
    pipelines = [t.TPipeline("main", sig, body, Span(source, 0, 1))]
    pipelines += [t.TPipeline(name, sig, t.TIdentity(sig, nowhere), Span(source, i + 1, i + 2)) for i, name in enumerate(helpers)]
    program = t.Program("v2.mce", "", None, None, tuple(pipelines))
    assert entry_pipelines(program) == ["main"]


# ---------------------------------------------------------------- a pipeline with an llm step

ROOT = TESTS.parent
MONAD = "A monad sequences computations that carry context: state, errors, effects."


def _serve_react(*models: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """``mcec serve examples/research/research.mce --pipeline react --model …`` from the repo root:
    the tools listed, then two calls (an answer, and an empty question, which is an Err)."""
    args = ["-m", "mcec", "serve", "examples/research/research.mce", "--pipeline", "react"]
    for model in models:
        args += ["--model", model]
    params = StdioServerParameters(command=sys.executable, args=args, env={**os.environ, **(env or {})}, cwd=str(ROOT))

    async def main() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = {t.name: t for t in (await session.list_tools()).tools}
            seen["ok"] = await session.call_tool("react", {"value": "what is a monad and 2 plus 40"})
            seen["err"] = await session.call_tool("react", {"value": "  "})
        return seen

    return asyncio.run(main())


def test_serve_a_pipeline_with_an_llm_step_and_a_scripted_model() -> None:
    """``--model planner=py:…``: the ReAct agent served as an MCP tool, its ``decide`` answered
    offline by the example's scripted model, its own tools on the research MCP server."""
    seen = _serve_react("planner=py:examples.research.planner:plan")
    assert list(seen["tools"]) == ["react"]
    assert seen["tools"]["react"].input_schema["properties"]["value"]["type"] == "string"
    ok = seen["ok"]
    assert not ok.is_error, text(ok)
    assert ok.structured_content == {"result": f"Answer: what is a monad and 2 plus 40 -> {MONAD} | 42"}
    err = seen["err"]
    assert err.is_error and text(err).startswith("LLMError: the question is empty (at ")


def test_serve_a_pipeline_with_an_llm_step_over_http(llm_server: LLMServer) -> None:
    """``--model planner=MODEL_ID@URL``: each call's model requests go over real HTTP to the
    test server (answering with the example's planner), the key from the environment."""
    from examples.research.planner import plan

    llm_server.respond_with(plan)
    seen = _serve_react(f"planner=served-model@{llm_server.url}", env={"OPENAI_API_KEY": "sk-serve-test"})
    ok = seen["ok"]
    assert not ok.is_error, text(ok)
    assert ok.structured_content == {"result": f"Answer: what is a monad and 2 plus 40 -> {MONAD} | 42"}
    assert [r.body["model"] for r in llm_server.requests] == ["served-model"] * 3
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-serve-test"
    assert "Question: what is a monad and 2 plus 40" in llm_server.requests[0].body["messages"][-1]["content"]


def test_serve_rejects_a_model_the_spec_does_not_declare() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "serve", "examples/research/research.mce", "--model", "plannr=test"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, check=False,
    )
    assert done.returncode == 2
    assert "declares no model `plannr`; did you mean `planner`?" in done.stderr
    assert "Traceback" not in done.stderr
