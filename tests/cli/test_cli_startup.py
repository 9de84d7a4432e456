"""`mcec check` stays light: heavy libraries load only when a command needs them.

`mcec check --fast` loads neither libcst/black (code generation) nor mypy;
pydantic loads only when `mcec serve` builds schemas (Lark, the parser, and
griffe, which reads the spec's Python modules, always load). A plain `mcec
check` generates code and runs mypy, so it loads those. `mcec CMD` imports the
module of CMD only (mcec.cli.COMMAND_OF): `check` not the runtime (agentmonad, which
`serve` and `run` need), `runs` not the compiler. Checked in a fresh interpreter,
by which modules a run imported (not by timing it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("libcst", "black", "pydantic", "mypy", "pygls", "lsprotocol")

#: The compiler (its checker and parser) and the runtime: what one command needs and another not.
PARTS = ("mcec.check", "mcec.syntax", "agentmonad")

PROBE = """
import json, sys
from mcec.cli import main
status = main(sys.argv[1:])
print(json.dumps([status, sorted(m for m in {heavy!r} if m in sys.modules)]))
"""


def _loaded_by(*argv: str, watch: tuple[str, ...] = HEAVY, cwd: Path = ROOT) -> tuple[int, list[str]]:
    """``mcec ARGV`` in a fresh interpreter: its status, and which modules of ``watch`` it imported."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=watch), *argv], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return status, loaded


def test_a_fast_check_of_valid_specs_loads_no_heavy_library() -> None:
    status, loaded = _loaded_by("check", "--fast", "examples")
    assert status == 0 and loaded == []


def test_a_syntax_error_loads_no_heavy_library(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mce"
    bad.write_text("fn f : int -> int\n", encoding="utf-8")
    status, loaded = _loaded_by("check", "--fast", str(bad))
    assert status == 1 and loaded == []


def test_check_loads_the_runtime_only_for_a_spec_that_needs_it(tmp_path: Path) -> None:
    """A spec without models: nothing of agentmonad (checking an `llm` step asks the runtime
    which variables its template names, so `check examples` does load it)."""
    (tmp_path / "m.py").write_text("def f(value: str) -> str:\n    return value\n", encoding="utf-8")
    (tmp_path / "a.mce").write_text("import m\nfn f : str -> str = m.f\npipeline p : str -> str = f >>= f;\n", encoding="utf-8")
    status, loaded = _loaded_by("check", "--fast", "a.mce", watch=PARTS, cwd=tmp_path)
    assert status == 0 and loaded == ["mcec.check", "mcec.syntax"]


def test_runs_list_loads_neither_the_compiler_nor_a_heavy_library(tmp_path: Path) -> None:
    """The run database's records need the runtime's journal (and pydantic), not the compiler."""
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    status, loaded = _loaded_by("runs", "list", "--db", db, watch=(*PARTS, *HEAVY), cwd=tmp_path)
    assert status == 0 and "mcec.check" not in loaded and "mcec.syntax" not in loaded
    assert not set(loaded) & {"libcst", "black", "mypy", "pygls", "lsprotocol"}


def test_help_lists_every_command() -> None:
    """``mcec --help`` builds the parser of every module: all the commands, as before."""
    from mcec.cli import COMMAND_OF

    done = subprocess.run([sys.executable, "-m", "mcec", "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0
    commands = done.stdout.split("positional arguments:", 1)[1].split("options:", 1)[0]
    listed = [line.split()[0] for line in commands.splitlines() if line.startswith("    ") and line[4] != " "]
    assert sorted(listed) == sorted(COMMAND_OF)


def test_each_command_is_added_by_the_module_named_for_it() -> None:
    """:data:`mcec.cli.COMMAND_OF` agrees with the modules: ``mcec CMD`` alone builds a parser that
    knows ``CMD``, and every command of every module is named (a missing one would still run, but
    through the whole parser)."""
    import argparse
    import importlib

    from mcec.cli import COMMAND_MODULES, COMMAND_OF

    for module in COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        subparsers = parser.add_subparsers()
        for add in importlib.import_module(module).COMMANDS:
            add(subparsers)
        for name in subparsers.choices:
            assert COMMAND_OF.get(name) == module, f"`mcec {name}` (in {module}) is missing from COMMAND_OF"
    assert set(COMMAND_OF.values()) <= set(COMMAND_MODULES)
