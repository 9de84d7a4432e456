"""Version 2 reserves no word (docs/language.md §2): a version 1 spec whose steps, fns
and pipelines are named ``timeout``, ``match``, ``loop``, ``retry``, ``backoff``,
``on``, ``then``, ``model`` (and ``budget``, ``llm``, ``file``) — used as plain
references in binds, groups, handlers and fallbacks — parses, checks, compiles
and runs, and compiles to exactly the module version 1 produced.

The golden module ``v1/v1_words.py.txt`` is *not* rewritten by
``--update-golden``: it records what the last version 1 compiler (commit
``2216d4c``) wrote, and was produced once with it::

    git -C /work/main archive 2216d4c | tar -x -C /tmp/v1
    cd tests/codegen/v1
    MYPYPATH=/tmp/v1/tests:/tmp/v1/runtime PYTHONPATH=/tmp/v1:/tmp/v1/runtime:/tmp/v1/tests \\
        python -m mcec compile v1_words.mce -o OUT && cp OUT/v1_words_mce.py v1_words.py.txt

(that compiler's in-memory ``compile_source`` gives the same bytes). If this test
fails, the v2 compiler changed what a v1 spec means or compiles to.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from toolbox import TState

from agentmonad import Ok
from mcec import syntax
from mcec.compiler import CompileResult, compile_source
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile

HERE = Path(__file__).parent / "v1"
SPEC = HERE / "v1_words.mce"
GOLDEN = HERE / "v1_words.py.txt"
TESTS = Path(__file__).resolve().parent.parent

#: The v2 words the spec uses as names, and what it declares under each.
WORDS = {
    "timeout": "step",
    "match": "step",
    "retry": "step",
    "loop": "step",
    "model": "fn",
    "backoff": "fn",
    "budget": "fn",
    "file": "fn",
    "llm": "fn",
    "then": "pipeline",
    "on": "pipeline",
}

V2_NODES = (syntax.Match, syntax.IfElse, syntax.Loop, syntax.Retry, syntax.Timeout)


def _compiled() -> CompileResult:
    source = SourceFile(SPEC.name, SPEC.read_text(encoding="utf-8"))
    result = compile_source(source)
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False)
    assert result.program is not None and result.generated is not None
    return result


def _expressions(expr: syntax.Expr) -> list[syntax.Expr]:
    """``expr`` and every expression inside it."""
    found = [expr]
    for child in syntax.expr_children(expr):
        found += _expressions(child)
    return found


def test_the_words_are_declared_names_and_plain_references() -> None:
    parsed = syntax.parse(SourceFile(SPEC.name, SPEC.read_text(encoding="utf-8")))
    assert parsed.ok and parsed.module is not None, parsed.diagnostics
    declared: dict[str, str] = {}
    nodes: list[syntax.Expr] = []
    for decl in parsed.module.decls:
        if isinstance(decl, syntax.StepDecl):
            declared[decl.name.text] = "step"
        elif isinstance(decl, syntax.FnDecl):
            declared[decl.name.text] = "fn"
        elif isinstance(decl, syntax.PipelineDecl):
            declared[decl.name.text] = "pipeline"
            body = decl.body
            for expr in [s.expr for s in body.statements] if isinstance(body, syntax.Block) else [body]:
                nodes += _expressions(expr)
    assert {word: declared.get(word) for word in WORDS} == WORDS
    assert not [n for n in nodes if isinstance(n, V2_NODES)]  # no v2 construct anywhere
    assert set(WORDS) <= {n.name for n in nodes if isinstance(n, syntax.Ref)}  # each word is used


def test_the_spec_compiles_to_the_module_version_1_produced() -> None:
    generated = _compiled().generated
    assert generated is not None
    assert generated.code == GOLDEN.read_text(encoding="utf-8")


def test_mcec_compile_writes_that_module_and_mypy_accepts_it(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(TESTS), "MYPYPATH": str(TESTS)}
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "compile", SPEC.name, "-o", str(tmp_path)],
        cwd=HERE,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "v1_words_mce.py").read_bytes() == GOLDEN.read_bytes()


def test_the_words_run_as_the_steps_they_name() -> None:
    """``timeout``, ``match`` and ``loop`` are the toolbox's inc, note and slow_inc:
    ``then`` on 4 is 4+1, noted, then slow_inc'd — no combinator anywhere."""
    result = _compiled()
    assert result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    assert asyncio.run(module.then(TState(), 4)) == Ok(6, TState(log=("note 5", "slow 5"), count=1))


@pytest.mark.parametrize("value", [-3, 0, 1, 4, 7, 12])
def test_the_compiled_spec_runs_like_the_interpreter(value: int) -> None:
    result = _compiled()
    assert result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    for pipeline in ("then", "on", "main"):
        compiled = asyncio.run(getattr(module, pipeline)(TState(), value))
        interpreted = asyncio.run(Interpreter(result.program).run(pipeline, TState(), value))
        assert compiled == interpreted, (pipeline, value)
