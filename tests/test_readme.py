"""The README's runtime tour runs as shown."""

from __future__ import annotations

import re
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
    command = ci.find("python3 -m pip install -e '.[test]'")
    assert 0 <= venv < activate < command, ".ci/run must create and activate a fresh venv before the test command"
