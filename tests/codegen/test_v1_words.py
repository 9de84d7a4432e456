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

Since the effect seam (issue 30) every generated function reads ``run`` once and each
call has a hooked twin (``if run is not None: … effect(…) else: <the v1 call>``); the
tests compare the module with those additions taken out (:func:`_without_seam`), so
the v1 code itself must still be there byte for byte.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import black
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


#: The names the effect seam adds to a generated module's import of agentmonad.compiled.
SEAM_NAMES = (
    "async_step_effect", "fn_effect", "hooked_run", "hooks_alive", "observed_pipeline", "run_sink", "run_sinks",
    "step_effect",
)

#: A call's hooked twin: ``if run is not None:`` / the seam's call / ``else:`` / the plain call.
HOOKED_TWIN = re.compile(
    r"^(?P<indent> *)if run is not None:\n(?P=indent)    [^\n]*\n(?P=indent)else:\n(?P=indent)    (?P<plain>[^\n]*\n)",
    re.MULTILINE,
)


#: A pipeline's entry telling its run (issue 48): the test, ``run_sink()``, the observed call
#: (on one line or laid out on three), and the run context read in the same test, if any.
RUN_ENTRY = re.compile(
    r"^(?P<i> *)if hooks_alive or run_sinks:\n(?P=i)    sink = run_sink\(\)\n(?P=i)    if sink is not None:\n"
    r"(?P=i)        return await observed_pipeline\([^)]*\)\n"
    r"(?:(?P=i)    run = hooked_run\(\)\n(?P=i)else:\n(?P=i)    run = None\n)?",
    re.MULTILINE,
)


def _without_seam(code: str) -> str:
    """``code`` with what the effect seam adds taken out: the ``run = …`` line at each
    function's entry, each call's hooked twin (the plain call kept, dedented), a pipeline's
    entry telling its run and its ``RUN_SITE_n``, and the seam's names in the import; black
    then lays the import out as before. And the ``SPEC_INFO`` descriptor the module ends with
    (docs/language.md §7), with its import: what running the module needs, not v1's code; and
    the typed handles' ``Asks`` and ``Runs`` classes before it (§13), with their import."""
    code = RUN_ENTRY.sub("", code)
    code = re.sub(r"^from agentmonad\.handles import [^\n]*\n", "", code, flags=re.MULTILINE)
    code = re.sub(r"\n*^class (?:Asks|Runs):\n(?:    [^\n]*\n|\n)*(?=\S)", "\n\n\n", code, flags=re.MULTILINE)
    code = re.sub(r"^from agentmonad\.spec import [^\n]*\n", "", code, flags=re.MULTILINE)
    code = re.sub(r"\n*^SPEC_INFO = SpecInfo\(\n(?:    [^\n]*\n|\n)*\)\n", "\n", code, flags=re.MULTILINE)
    code = re.sub(r"^RUN_SITE_\d+ = Site\([^\n]*\)\n", "", code, flags=re.MULTILINE)
    code = re.sub(r"^ *run = hooked_run\(\) if hooks_alive else None\n", "", code, flags=re.MULTILINE)
    code = HOOKED_TWIN.sub(lambda m: m["indent"] + m["plain"], code)
    for name in SEAM_NAMES:
        code = re.sub(rf"^ *{name},\n", "", code, flags=re.MULTILINE)
    return black.format_str(code, mode=black.Mode(target_versions={black.TargetVersion.PY311}, line_length=88, magic_trailing_comma=False))


def test_without_seam_takes_out_only_the_seams_additions() -> None:
    """The normaliser is not the identity on seam-free code's neighbours: a hooked twin
    collapses to its plain call, and a module without the seam comes back unchanged."""
    twin = "    if run is not None:\n        r = step_effect(run, \"step\", SITE_1, f, s, v)\n    else:\n        r = f(s, v)\n"
    assert HOOKED_TWIN.sub(lambda m: m["indent"] + m["plain"], twin) == "    r = f(s, v)\n"
    golden = GOLDEN.read_text(encoding="utf-8")
    assert _without_seam(golden) == golden


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
    assert "hooked_run()" in generated.code  # the seam is there, and taken out below
    assert _without_seam(generated.code) == GOLDEN.read_text(encoding="utf-8")


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
    written = (tmp_path / "v1_words_mce.py").read_text(encoding="utf-8")
    assert written == _compiled().generated.code  # type: ignore[union-attr]
    assert _without_seam(written) == GOLDEN.read_text(encoding="utf-8")


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
