"""``mcec run --trace`` (the run as a tree after the result, on stderr; ``--trace json``) and the
progress display on a terminal (docs/language.md §14), as real subprocesses: the terminal is
a pseudo-terminal the test opens; quiet when stderr is not a terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from terminal import on_a_terminal

ROOT = Path(__file__).resolve().parents[2]
RESEARCH = ROOT / "examples" / "research" / "research.mce"

IMPL = '''
import asyncio
from dataclasses import dataclass
from agentmonad import Ok


@dataclass
class S:
    seen: int = 0


class Odd(Exception):
    pass


async def work(state: S, value: int):
    await asyncio.sleep(0.04)
    return Ok(value * 2, state)


def check(state: S, value: int):
    if value % 2:
        raise Odd(value)
    return Ok(value, state)
'''

SPEC = """from app.impl import S, Odd
import app.impl as impl
state S
error Odd
async step work : int -> int = impl.work
step check : int -> int ! Odd = impl.check

pipeline batch : list[int] -> list[int] = each(limit=2) work;
pipeline checked : int -> int ! Odd = check;
"""


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "app" / "impl.py").write_text(IMPL, encoding="utf-8")
    (tmp_path / "b.mce").write_text(SPEC, encoding="utf-8")
    return tmp_path / "b.mce"


def _run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcec", "run", *argv], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_trace_prints_the_run_as_a_tree_after_the_result(tmp_path: Path) -> None:
    _spec(tmp_path)
    done = _run(tmp_path, "b.mce", "batch", "--input", "[1, 2, 3, 4, 5]", "--trace")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == [2, 4, 6, 8, 10]
    lines = done.stderr.splitlines()
    assert lines[0].startswith("batch  run b.mce:8  ok  ")
    assert lines[1].startswith("└─ each  group b.mce:8  ok  ") and lines[1].endswith("5/5 done")
    # each element's step under the group, with its index and its line (compiled code, through the seam)
    assert [line.strip().split("  ")[:3] for line in lines[2:]] == [
        [f"{'└' if i == 4 else '├'}─ [{i}] work", "step b.mce:8", "ok"] for i in range(5)
    ]


def test_trace_json_gives_the_tree_as_data(tmp_path: Path) -> None:
    _spec(tmp_path)
    done = _run(tmp_path, "b.mce", "checked", "--input", "3", "--trace", "json")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["error"]["type"] == "Odd"
    [run] = json.loads(done.stderr)["trace"]
    assert (run["kind"], run["name"], run["outcome"]) == ("run", "checked", "err")
    assert run["site"] == {"file": "b.mce", "line": 9, "column": 1}
    assert run["duration"] >= 0 and run["tokens"] == {"prompt": 0, "completion": 0}
    [step] = run["children"]
    assert (step["kind"], step["name"], step["outcome"], step["error"]) == ("step", "check", "err", "Odd")
    assert step["site"] == {"file": "b.mce", "line": 9, "column": 39} and step["children"] == []


def test_without_trace_and_off_a_terminal_mcec_run_prints_nothing_on_stderr(tmp_path: Path) -> None:
    _spec(tmp_path)
    done = _run(tmp_path, "b.mce", "batch", "--input", "[1, 2, 3]")
    assert done.returncode == 0 and json.loads(done.stdout)["value"] == [2, 4, 6]
    assert done.stderr == ""


def test_on_a_terminal_mcec_run_shows_the_each_progress(tmp_path: Path) -> None:
    """stderr is a pseudo-terminal (100 columns): rich draws the bar, done/total climbing,
    then erases it; stdout (a pipe) gets the result alone."""
    _spec(tmp_path)
    status, out, screen = on_a_terminal(["run", "b.mce", "batch", "--input", json.dumps(list(range(12)))], tmp_path)
    assert status == 0 and json.loads(out)["value"] == [2 * i for i in range(12)]
    assert "each (b.mce:8)" in screen and "step work (b.mce:8)" in screen  # the bar, the running step
    counts = {n for n in range(13) if f"{n}/12" in screen}
    assert 12 in counts and len(counts) >= 3, screen  # it climbed, and was drawn complete


def test_the_react_example_traced_on_the_command_line(llm_server: LLMServer) -> None:
    """``mcec run … react --trace`` with the model over HTTP and the tools on the MCP server:
    every step, model call and tool call of the compiled run shows in the tree with its
    ``.mce`` line, the model's requests and the server's tools under the calls that made them."""
    from examples.research.planner import plan

    llm_server.respond_with(plan)
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", str(RESEARCH), "react", "--input", json.dumps("what is a monad and 2 plus 40"),
         "--model", f"planner=served-model@{llm_server.url}", "--trace"],
        cwd=ROOT, capture_output=True, text=True, timeout=180, check=False,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-trace"},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"].endswith("| 42")
    lines = done.stderr.splitlines()
    assert lines[0].startswith("react  run research.mce:52  ok  ")
    under = ("│", "   ")  # what each call made: under it (the last call's, after spaces)
    assert [line.split("  ")[:3] for line in lines if not line.startswith(under)] == [
        ["react", "run research.mce:52", "ok"],
        ["├─ ask", "step research.mce:55", "ok"],
        ["├─ decide", "model research.mce:56", "ok"],
        ["├─ search_facts", "tool research.mce:58", "ok"],
        ["├─ observe", "step research.mce:58", "ok"],
        ["├─ decide", "model research.mce:56", "ok"],
        ["├─ add_numbers", "tool research.mce:59", "ok"],
        ["├─ observe", "step research.mce:59", "ok"],
        ["└─ decide", "model research.mce:56", "ok"],
    ]  # hits_text, sum_text and final are fns: no effects, no lines (docs/language.md §14)
    inside = [line for line in lines if line.startswith(under)]
    assert [line[len("│  └─ "):].split(":")[0].split("  ")[0] for line in inside] == [
        "model planner (served-model)", "tool search.search",
        "model planner (served-model)", "tool search.add",
        "model planner (served-model)",
    ]


def test_mcec_run_off_a_terminal_loads_neither_rich_nor_opentelemetry(tmp_path: Path) -> None:
    """The progress display (rich) loads only on a terminal; OpenTelemetry only when asked for."""
    _spec(tmp_path)
    probe = (
        "import sys\nfrom mcec.cli import main\nstatus = main(sys.argv[1:])\n"
        "print(status, sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'opentelemetry'}))"
    )
    for extra in ([], ["--trace"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, "run", "b.mce", "batch", "--input", "[1]", *extra],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )
        assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout + done.stderr


def test_the_timeline_keeps_the_last_partial_of_each_streamed_call() -> None:
    """Issue 47: every partial holds the whole answer so far; keeping them all made ``--trace``
    of a long streamed answer take memory quadratic in it."""
    from agentmonad.events import Effect, PartialOutput, TextDelta
    from agentmonad.outcome import Site
    from mcec.run.timeline import Timeline

    one, two = (Effect("model", Site(name, "s.mce", 3, 1), ()) for name in ("a", "b"))
    timeline = Timeline()
    events = [PartialOutput(one, {"t": "P"}, 7), TextDelta(two, "x", 8), PartialOutput(one, {"t": "Pa"}, 7),
              PartialOutput(two, {"t": "Q"}, 8), PartialOutput(one, {"t": "Par"}, 7)]
    for event in events:
        timeline.emit(event)
    assert timeline.events == [events[4], events[1], events[3]]
