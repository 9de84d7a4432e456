"""Issue 36, item 1: a literal ``par`` of any width compiles, and the code runs as the
interpreter does.

``group(b1).also(b2)…`` nests one level per branch, and a 500-branch ``par`` made every
tool reading that expression recurse past Python's limit (``RecursionError`` in the
layout printer, then black, CPython's compiler and mypy). A group wider than
``GROUP_LINK`` branches is now built over several statements.
"""

from __future__ import annotations

import ast
import asyncio
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import black
from toolbox import TState

from agentmonad import Err, Ok
from mcec.codegen.emitter import GROUP_LINK
from mcec.compiler import compile_source
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile

_counter = itertools.count()


def wide_spec(branches: int) -> str:
    """``par <inc, even_only, inc, …>``: stateful branches (merged by field: ``count`` sums)
    and failing ones (``even_only`` on an odd value), ``branches`` of them."""
    names = ["inc" if i % 2 == 0 else "even_only" for i in range(branches)]
    return (
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        "step inc : int -> int = tb.inc\nstep even_only : int -> int ! Odd = tb.even_only\n"
        f"pipeline wide : int -> tuple[{', '.join(['int'] * branches)}] ! Odd | MergeConflict"
        f" = par <{', '.join(names)}>;\n"
    )


def compile_wide(branches: int) -> tuple[Any, Any, str]:
    """The program, the loaded module and the code of :func:`wide_spec` (no mypy)."""
    source = SourceFile(f"wide_{branches}_{next(_counter)}.mce", wide_spec(branches))
    result = compile_source(source)
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False)
    assert result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated), result.generated.code


def outcomes(program: Any, module: Any, value: int) -> tuple[Any, Any]:
    """The compiled and the interpreted outcome of ``wide`` on ``value``."""
    compiled = asyncio.run(module.wide(TState(), value))
    interpreted = asyncio.run(Interpreter(program).run("wide", TState(), value))
    return compiled, interpreted


def test_a_10000_branch_par_compiles_and_runs_as_interpreted() -> None:
    branches = 10_000
    program, module, code = compile_wide(branches)
    ok, interpreted = outcomes(program, module, 4)
    assert ok == interpreted
    assert ok == Ok(tuple(5 if i % 2 == 0 else 2 for i in range(branches)), TState(count=branches // 2))
    failed, interpreted = outcomes(program, module, 3)
    assert isinstance(failed, Err) and failed == interpreted
    # no expression nests with the width: each statement strings together at most one link
    chains = [_chain_length(node.value) for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Assign | ast.Return)]
    assert max(chains) <= GROUP_LINK + 1  # `group(b1)` or `group_k`, then the link's `.also`s (or `.run`)


def _chain_length(call: ast.expr | None) -> int:
    """How many calls ``f(a).also(b).also(c)`` strings together (3 here)."""
    length = 0
    if isinstance(call, ast.Await):
        call = call.value
    while isinstance(call, ast.Call):
        length += 1
        func = call.func
        call = func.value if isinstance(func, ast.Attribute) else func
    return length


def test_a_group_just_wider_than_one_link_is_black_formatted_and_mypy_strict_clean(tmp_path: Path) -> None:
    """The statement-by-statement shape at its smallest (two links and a bit): the layout is
    black's own, and mypy --strict still types it branch by branch."""
    program, module, code = compile_wide(2 * GROUP_LINK + 3)
    assert black.format_str(code, mode=black.Mode()) == code
    compiled, interpreted = outcomes(program, module, 6)
    assert compiled == interpreted and isinstance(compiled, Ok)
    path = tmp_path / "wide_mce.py"
    path.write_text(code, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(Path(__file__).parents[1])}
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental", str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
