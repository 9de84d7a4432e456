"""The README runs as shown: its runtime tour, its first command (a real subprocess), its spec."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_runtime_tour_in_readme_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    tour = [b for b in blocks if b.startswith("from agentmonad import AgentMonad")]
    assert tour, "the README lost its runtime tour"
    exec(compile(tour[0], "README.md", "exec"), {})


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    commands = re.search(r"```sh\n(.*?)```", text, re.S)
    assert commands is not None
    lines = [line for line in commands.group(1).splitlines() if line and not line.startswith("#")]
    assert len(lines) == 2
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert lines[1] in ci  # .ci/run runs exactly the README's test command


def test_ci_runs_the_test_command_in_a_fresh_venv() -> None:
    """.ci/run must not trust the machine's packages: it makes a venv and activates it first."""
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    venv = ci.find("python3 -m venv --clear")
    activate = ci.find('. "$venv/bin/activate"')
    command = ci.find("python3 -m pip install -e ./runtime -e '.[test]'")
    assert 0 <= venv < activate < command, ".ci/run must create and activate a fresh venv before the test command"


def _first_command() -> list[str]:
    """The README's first command, split at its ``&&``s."""
    commands = re.search(r"```sh\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert commands is not None
    first = [line for line in commands.group(1).splitlines() if line and not line.startswith("#")][0]
    return first.split(" && ")


def test_readme_first_command_installs_what_its_run_needs() -> None:
    """The install brings the MCP SDK (the tool server) and the llm extra (Jinja2 for the
    template, the OpenAI SDK for a real model): a fresh machine needs nothing else."""
    install, *rest = _first_command()
    extras = re.fullmatch(r"python3 -m pip install -e \./runtime -e '\.\[([a-z,]+)\]'", install)
    assert extras is not None, install
    assert {"mcp", "llm"} <= set(extras.group(1).split(","))
    assert [shlex.split(c)[:4] for c in rest] == [
        ["python3", "-m", "mcec", "compile"],
        ["python3", "-m", "mcec", "run"],
    ]


def test_readme_first_command_compiles_and_runs_the_react_agent(tmp_path: Path) -> None:
    """The README's compile and run, exactly as written, in a copy of the examples (so the
    generated module lands there): the llm step answered offline by the example's scripted
    model, the tools on the real MCP server. Two tool calls, then the answer."""
    shutil.copytree(README.parent / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*_mce.py", "__pycache__"))
    _, compile_command, run_command = _first_command()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}  # no endpoint, no key
    done = []
    for command in (compile_command, run_command):
        argv = [sys.executable, *shlex.split(command)[1:]]
        done.append(subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=environment, check=False))
        assert done[-1].returncode == 0, done[-1].stderr
    assert (tmp_path / "examples" / "research" / "research_mce.py").is_file()
    report = json.loads(done[1].stdout)
    monad = "A monad sequences computations that carry context: state, errors, effects."
    assert report["value"] == f"Answer: what is a monad and 2 plus 40 -> {monad} | 42"
    assert report["state"]["observations"] == [monad, "42"]
    assert report["state"]["tool_calls"] == 2
    assert report["usage"]["requests"] == 3 and report["usage"]["total_tokens"] > 0
    assert "Traceback" not in done[0].stderr + done[1].stderr


def test_readme_shows_the_research_spec_as_it_is() -> None:
    """Every line of the README's spec (abridged) is a line of examples/research/research.mce
    (spaces aside), and the template it names exists."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)
    shown = [body for lang, body in blocks if not lang and "pipeline react" in body and "model planner" in body]
    assert len(shown) == 1
    spec = README.parent / "examples" / "research" / "research.mce"
    lines = {" ".join(line.split()) for line in spec.read_text(encoding="utf-8").splitlines()}
    missing = [line for line in shown[0].splitlines() if line.strip() and " ".join(line.split()) not in lines]
    assert missing == []
    assert (spec.parent / "decide.j2").is_file()
