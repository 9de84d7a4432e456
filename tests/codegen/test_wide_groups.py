"""Issue 36, item 1: a literal ``par`` of any width compiles, and the code runs as the
interpreter does.

``group(b1).also(b2)…`` nests one level per branch, and a 500-branch ``par`` made every
tool reading that expression recurse past Python's limit (``RecursionError`` in the
layout printer, then black, CPython's compiler and mypy). A group wider than
``GROUP_LINK`` branches is now built over several statements.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import black
from toolbox import Odd, TState

from agentmonad import Err, Ok
from mcec.codegen.emitter import GROUP_LINK
from mcec.compiler import compile_source
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile

_counter = itertools.count()


def wide_spec(branches: int, every: int) -> str:
    """``par <inc, even_only, inc, …>`` of ``branches`` branches, ``even_only`` every ``every``th
    (from the second): stateful branches (merged by field: ``count`` sums) and ones that fail
    on an odd value."""
    names = ["even_only" if i % every == 1 else "inc" for i in range(branches)]
    return (
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        "step inc : int -> int = tb.inc\nstep even_only : int -> int ! Odd = tb.even_only\n"
        f"pipeline wide : int -> tuple[{', '.join(['int'] * branches)}] ! Odd | MergeConflict"
        f" = par <{', '.join(names)}>;\n"
    )


def compile_wide(branches: int, every: int) -> tuple[Any, Any, str]:
    """The program, the loaded module and the code of :func:`wide_spec` (no mypy)."""
    source = SourceFile(f"wide_{branches}_{next(_counter)}.mce", wide_spec(branches, every))
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
    branches, every = 10_000, 1_000
    program, module, code = compile_wide(branches, every)
    ok, interpreted = outcomes(program, module, 4)
    assert ok == interpreted
    values = tuple(2 if i % every == 1 else 5 for i in range(branches))
    assert ok == Ok(values, TState(count=branches - branches // every))
    failed, interpreted = outcomes(program, module, 3)
    assert isinstance(failed, Err) and failed == interpreted
    # nothing nests with the width: one statement adds at most GROUP_LINK branches
    assert _longest_chain(code) <= GROUP_LINK
    assert code.count("branches_") > branches // GROUP_LINK - 2


def _longest_chain(code: str) -> int:
    """The most ``.also(…)`` calls in one statement: black puts each of a long chain on a
    line of its own (an ``ast`` walk of the 230,000-line module takes ten seconds)."""
    longest = run = 0
    for line in code.splitlines():
        run = run + 1 if line.lstrip().startswith(".also(") else 0
        longest = max(longest, run)
    return longest + 1  # the first `.also` shares a line with the group it grows


def test_a_group_just_wider_than_one_link_is_black_formatted_and_mypy_strict_clean(
    tmp_path: Path, shared_mypy_cache: Path
) -> None:
    """The statement-by-statement shape at its smallest (two links and a bit): the layout is
    black's own, and mypy --strict still types it branch by branch."""
    program, module, code = compile_wide(2 * GROUP_LINK + 3, 2)
    assert black.format_str(code, mode=black.Mode()) == code
    assert _longest_chain(code) == GROUP_LINK
    for value in (6, 7):  # half the branches fail on an odd value
        compiled, interpreted = outcomes(program, module, value)
        assert compiled == interpreted and isinstance(compiled, Ok if value % 2 == 0 else Err)
    path = tmp_path / "wide_mce.py"
    path.write_text(code, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(Path(__file__).parents[1])}
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(shared_mypy_cache), str(path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_groups_grown_from_one_group_keep_their_own_branches() -> None:
    """``Group.also`` shares one list between a group and the group grown from it (so building
    n branches is O(n)); growing the same group twice must still give two separate groups."""
    from agentmonad import Site
    from agentmonad.compiled import group

    def branch(tag: str) -> Any:
        async def run(state: int, value: int) -> Ok[int, str]:
            return Ok(f"{tag}{value}", state)

        return run

    site = Site("par", "t.mce", 1, 1)
    base = group(branch("a")).also(branch("b"))
    left = base.also(branch("c"))
    right = base.also(branch("d"))  # grown from `base` again: `left` already appended to the list
    longer = left.also(branch("e"))

    async def all_runs() -> list[Any]:
        return [await g.run(0, 1, site) for g in (base, left, right, longer)]

    assert asyncio.run(all_runs()) == [
        Ok(("a1", "b1"), 0),
        Ok(("a1", "b1", "c1"), 0),
        Ok(("a1", "b1", "d1"), 0),
        Ok(("a1", "b1", "c1", "e1"), 0),
    ]


def test_each_over_10000_values_runs_as_interpreted() -> None:
    """``each``'s width is its list's length, known only at run time: 10,000 values."""
    source = SourceFile(
        f"each_{next(_counter)}.mce",
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        "step inc : int -> int = tb.inc\nstep even_only : int -> int ! Odd = tb.even_only\n"
        "pipeline many : list[int] -> list[int] ! Odd | MergeConflict = each (inc >>= even_only);\n",
    )
    result = compile_source(source)
    assert result.program is not None and result.generated is not None, result.diagnostics
    module = load_module(result.program, result.generated)
    def both(values: list[int]) -> Any:
        compiled = asyncio.run(module.many(TState(), values))
        assert compiled == asyncio.run(Interpreter(result.program).run("many", TState(), values))
        return compiled

    assert both([2 * i + 1 for i in range(10_000)]) == Ok(list(range(1, 10_001)), TState(count=10_000))
    failed = both([*range(1, 20_000, 2), 2])  # the last of 10,001 values fails: inc(2) is odd
    assert isinstance(failed, Err) and isinstance(failed.error, Odd)
