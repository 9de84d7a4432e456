"""Code generation: golden modules, determinism, black-stability, the shape of
the output (no injected statements), name collisions, and mypy --strict."""

from __future__ import annotations

import ast
import asyncio
import os
import subprocess
import sys
from pathlib import Path

import black
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from generated_shape import is_descriptor, is_handle_class
from spec_gen import specs
from toolbox import TState

from agentmonad import Ok
from mcec.codegen import HEADER_PREFIX
from mcec.compiler import compile_source
from mcec.run.interpret import Interpreter
from mcec.render import render_text
from mcec.run.runner import load_module
from mcec.span import SourceFile

CASES = Path(__file__).parent / "cases"
SPECS = sorted(CASES.glob("*.mce"))


def generate(path: Path) -> str:
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    result = compile_source(source)
    assert result.generated is not None, render_text(result.diagnostics, {path.name: source}, color=False)
    return result.generated.code


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_golden_module(spec: Path, golden) -> None:  # type: ignore[no-untyped-def]
    golden(spec.with_suffix(".py.txt"), generate(spec))


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_output_is_deterministic_and_black_stable(spec: Path) -> None:
    first, second = generate(spec), generate(spec)
    assert first == second
    assert black.format_str(first, mode=black.Mode()) == first
    assert first.startswith(HEADER_PREFIX)
    compile(first, str(spec), "exec")


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_top_level_statements_are_only_imports_constants_and_functions(spec: Path) -> None:
    tree = ast.parse(generate(spec))
    for statement in tree.body:
        assert isinstance(
            statement, ast.Import | ast.ImportFrom | ast.Assign | ast.AnnAssign | ast.AsyncFunctionDef | ast.ClassDef
        ), ast.dump(statement)
        if is_handle_class(statement):  # typed handles' Asks and Runs (§13), over parts of 50 past 50
            continue
        if isinstance(statement, ast.ClassDef):  # a streaming step's partial type (§14): fields only
            assert statement.name.endswith("Partial") and [ast.unparse(b) for b in statement.bases] == ["Partial"]
            doc, *fields = statement.body
            assert isinstance(doc, ast.Expr) and all(
                isinstance(f, ast.AnnAssign) and isinstance(f.value, ast.Constant) and f.value.value is None for f in fields
            )
            continue
        if is_descriptor(statement):  # SPEC_INFO = SpecInfo(…) (§7)
            continue
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):  # SPEC = "…" (§12)
            assert isinstance(statement.value.value, str)
            continue
        if isinstance(statement, ast.Assign):  # SITE_n = Site("step", "file", line, col)
            value = statement.value
            assert isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            assert all(isinstance(arg, ast.Constant) for arg in value.args)  # Model("fast", "id") too
            assert all(isinstance(kw.value, ast.Constant | ast.Dict) for kw in value.keywords)
        if isinstance(statement, ast.AnnAssign):  # step: Step[...] = module.impl
            value = statement.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "Toolbox":
                # TOOLBOX_t: Toolbox[...] = Toolbox("t", "spec.mce", SPEC, __name__, {"p": p, …}) (§12)
                assert [type(arg) for arg in value.args] == [ast.Constant, ast.Constant, ast.Name, ast.Name, ast.Dict]
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "ask_step":
                # approve: AsyncStep[...] = ask_step("approve", B, "TEMPLATE", site=SITE_n, within=S) (§15)
                assert isinstance(value.args[0], ast.Constant) and all(isinstance(a, ast.Constant) for a in value.args[2:])
                assert all(isinstance(kw.value, ast.Constant | ast.Name) for kw in value.keywords)
            elif isinstance(value, ast.Call):  # decide: AsyncStep[...] = llm_step(model, "TEMPLATE", B, name=...)
                assert isinstance(value.func, ast.Name) and value.func.id == "llm_step", ast.dump(value)
                assert isinstance(value.args[0], ast.Name) and isinstance(value.args[1], ast.Constant)
            else:
                assert isinstance(value, ast.Attribute | ast.Name)


def _load(spec: Path):  # type: ignore[no-untyped-def]
    source = SourceFile(spec.name, spec.read_text(encoding="utf-8"))
    result = compile_source(source)
    assert result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated)


@pytest.mark.parametrize("value", [-7, -2, 0, 1, 2, 5, 8, 13])
def test_groups_and_collisions_run_like_the_interpreter(value: int) -> None:
    for name, pipeline in (("groups.mce", "main"), ("collisions.mce", "stop"), ("chain.mce", "main")):
        program, module = _load(CASES / name)
        compiled = asyncio.run(getattr(module, pipeline)(TState(), value))
        interpreted = asyncio.run(Interpreter(program).run(pipeline, TState(), value))
        assert compiled == interpreted
        assert type(compiled) is type(interpreted)


def test_spec_without_state_passes_none() -> None:
    _, module = _load(CASES / "nostate.mce")
    assert asyncio.run(module.twice(None, 3)) == Ok(-12, None)
    assert asyncio.run(module.nothing(None, 3)) == Ok(3, None)


def test_empty_spec_compiles_to_a_module_without_pipelines() -> None:
    code = generate(CASES / "empty.mce")
    tree = ast.parse(code)
    assert not [s for s in tree.body if isinstance(s, ast.AsyncFunctionDef)]


def test_a_step_can_be_substituted_without_editing_generated_code(monkeypatch: pytest.MonkeyPatch) -> None:
    _, module = _load(CASES / "chain.mce")

    def fake_inc(state: TState, value: int) -> Ok[TState, int]:
        return Ok(value + 101, state)

    monkeypatch.setattr(module, "inc", fake_inc)
    # 0 -> fake inc 101 -> even_only fails on odd
    outcome = asyncio.run(module.main(TState(), 1))
    assert outcome.value == 2 * (51 + 1)  # type: ignore[union-attr]


def test_long_chains_are_split_into_helpers_and_still_run() -> None:
    steps = " >>= ".join(["inc"] * 450)
    spec = (
        "import toolbox as tb\nfrom toolbox import TState\nstate TState\n"
        f"step inc : int -> int = tb.inc\npipeline long : int -> int = {steps};\n"
    )
    source = SourceFile("long.mce", spec)
    result = compile_source(source)
    assert result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    outcome = asyncio.run(module.long(TState(), 0))
    assert outcome == Ok(450, TState(count=450))
    functions = [s for s in ast.parse(result.generated.code).body if isinstance(s, ast.AsyncFunctionDef)]
    assert len(functions) > 1  # 450 steps do not sit in one function


def test_generated_modules_pass_mypy_strict(tmp_path: Path, shared_mypy_cache: Path) -> None:
    for spec in SPECS:
        (tmp_path / f"{spec.stem}_mce.py").write_text(generate(spec), encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(Path(__file__).parents[1])}
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(shared_mypy_cache), *files],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


# ---------------------------------------------------------------- layout: black's output without running black


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs())
def test_layout_matches_black_on_random_specs(spec: str) -> None:
    from mcec.codegen import header_lines
    from mcec.codegen.emitter import Emitter
    from mcec.codegen.layout import black_module, layout

    result = compile_source(SourceFile("random.mce", spec))
    assert result.program is not None
    module = Emitter(result.program).module(header_lines(result.program))
    assert layout(module) == black_module(module.code)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=40))
def test_string_literals_are_quoted_as_black_quotes_them(text: str) -> None:
    from mcec.codegen.layout import black_module, black_string

    literal = black_string(text)
    assert eval(literal) == text
    assert black_module(f"x = {literal}\n") == f"x = {literal}\n"



def _emitter_vocabulary() -> list[str]:
    """The identifiers in the golden cases' generated modules (locals, runtime imports,
    builtins, constants, spec names), but for those the test spec below imports itself."""
    found: set[str] = set()
    for spec in SPECS:
        for node in ast.walk(ast.parse(generate(spec))):
            if isinstance(node, ast.Name):
                found.add(node.id)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                found.add(node.name)
            elif isinstance(node, ast.alias):
                found.add(node.asname or node.name)
    from mcec.syntax.grammar import tables

    builtin_errors = {"MergeConflict", "ToolFailed", "ToolUnavailable"}  # predeclared in every spec
    unusable = {"TState", "Odd", "toolbox", "tb"} | builtin_errors | tables().reserved_words
    return sorted(n for n in found - unusable if not n.startswith("__"))


VOCABULARY = _emitter_vocabulary()


def test_the_vocabulary_holds_the_emitters_names() -> None:
    assert {"value", "exc", "r", "v", "result", "Ok", "Err", "stop", "raised", "SITE_1", "cast"} <= set(VOCABULARY)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(VOCABULARY), min_size=7, max_size=7, unique=True), st.integers(-5, 5))
def test_spec_names_from_the_emitters_own_vocabulary_compile_and_run(names: list[str], value: int) -> None:
    """Steps, fns and pipelines named like the generated code's own names (``exc``, ``state``,
    ``r``, ``Ok``, ``stop``, ``SITE_1`` …) must not collide with them (issue 18, item 4)."""
    step, failing, fn, add, recover, helper, main = names
    text = (
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        f"step {step} : int -> int = tb.inc\n"
        f"step {failing} : int -> int ! Odd = tb.even_only\n"
        f"fn {fn} : int -> int = tb.double\n"
        f"fn {add} : tuple[int, int] -> int = tb.add_pair\n"
        f"fn {recover} : Odd -> int = tb.recover\n"
        f"pipeline {helper} : int -> int ! Odd = {step} >>= {failing};\n"
        f"pipeline {main} : int -> int = ({helper} catch Odd => {recover}) >>= local {step} >>= {fn}"
        f" >>= par <{fn}, {step}> >>= {add};\n"
    )
    source = SourceFile("vocabulary.mce", text)
    result = compile_source(source)
    assert result.ok and result.program is not None and result.generated is not None, render_text(
        result.diagnostics, {source.path: source}, color=False
    ) + text
    module = load_module(result.program, result.generated)
    compiled = asyncio.run(getattr(module, main)(TState(), value))
    interpreted = asyncio.run(Interpreter(result.program).run(main, TState(), value))
    assert compiled == interpreted, text


def test_a_spec_importing_future_annotations_compiles_to_one_valid_future_import() -> None:
    """Issue 18, item 6: the spec's line used to be copied after the generated imports (a SyntaxError)."""
    text = (
        "from __future__ import annotations\nfrom toolbox import TState\nimport toolbox as tb\n"
        "state TState\nstep inc : int -> int = tb.inc\npipeline main : int -> int = inc;\n"
    )
    result = compile_source(SourceFile("future.mce", text))
    assert result.ok and result.program is not None and result.generated is not None
    code = result.generated.code
    assert code.count("from __future__ import annotations") == 1
    module = load_module(result.program, result.generated)
    assert asyncio.run(module.main(TState(), 1)) == Ok(2, TState(count=1))


def test_output_that_does_not_compile_is_an_internal_error_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every generated module is compiled before it is returned: an emitter bug can never give users
    a module that raises SyntaxError on import."""
    from mcec.codegen import InvalidOutput, layout

    monkeypatch.setattr(layout, "layout_statement", lambda statement: ["def broken(:"])
    with pytest.raises(InvalidOutput, match="does not compile"):
        compile_source(
            SourceFile("broken.mce", "fn f : int -> int = m.f\npipeline p : int -> int = f;\nimport m\n"), index=False
        )


def _nested(depth: int, make: str) -> str:
    expr = "inc"
    for _ in range(depth - 1):
        expr = make.format(expr)
    return expr


@pytest.mark.parametrize(
    "form", ["local ({})", "({}) orelse inc", "par <{}, inc> >>= add_pair", "(even_only >>= ({})) catch Odd => recover"]
)
def test_nesting_at_the_parsers_limit_compiles_and_runs_like_the_interpreter(form: str) -> None:
    """Issue 18, item 7: everything the parser accepts compiles and runs, compiled and interpreted,
    within Python's default recursion limit — here with 200 frames already in use by the caller."""
    from mcec.syntax import MAX_DEPTH

    # levels of nodes: `par` and `catch` add two a level (the group and its chain), the others one
    depth = MAX_DEPTH // 2 if ">>=" in form else MAX_DEPTH - 1
    body = _nested(depth, form)
    text = (
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        "step inc : int -> int = tb.inc\nstep even_only : int -> int ! Odd = tb.even_only\n"
        "fn add_pair : tuple[int, int] -> int = tb.add_pair\nfn recover : Odd -> int = tb.recover\n"
        f"pipeline main : int -> int = {body};\n"
    )
    source = SourceFile("deep.mce", text)

    def at_depth(frames: int) -> tuple[object, object]:
        if frames:
            return at_depth(frames - 1)
        result = compile_source(source)
        assert result.ok and result.program is not None and result.generated is not None, render_text(
            result.diagnostics, {source.path: source}, color=False
        )
        module = load_module(result.program, result.generated)
        compiled = asyncio.run(module.main(TState(), 1))
        interpreted = asyncio.run(Interpreter(result.program).run("main", TState(), 1))
        return compiled, interpreted

    compiled, interpreted = at_depth(200)
    assert isinstance(compiled, Ok) and compiled == interpreted


# ---------------------------------------------------------------- issue 18, item 1: nothing hidden from mypy


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs())
def test_generated_code_has_no_cast(spec: str) -> None:
    """A ``cast`` in generated code hid from mypy that a ``par`` could fail with MergeConflict in a
    pipeline declared ``! Never``; groups are typed branch by branch now, and nothing is cast."""
    result = compile_source(SourceFile("random.mce", spec))
    assert result.generated is not None
    tree = ast.parse(result.generated.code)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "cast" not in called and "cast" not in imported


def test_no_golden_module_imports_cast() -> None:
    for spec in SPECS:
        assert "cast" not in {
            a.name for n in ast.walk(ast.parse(generate(spec))) if isinstance(n, ast.ImportFrom) for a in n.names
        }, spec.name


UNDECLARED_THROUGH_PAR = """\
from toolbox import TState, Odd
import toolbox as tb
state TState
error Odd
step inc : int -> int = tb.inc
step even_only : int -> int ! Odd = tb.even_only
fn add_pair : tuple[int, int] -> int = tb.add_pair
pipeline p : int -> int ! Never = par <inc, even_only> >>= add_pair;
"""


def test_mypy_sees_the_errors_of_each_par_branch(tmp_path: Path, shared_mypy_cache: Path) -> None:
    """With the checker's verdict taken away (the pipeline's `! Never` forced past it), mypy on the
    generated module must still see that a branch can fail with Odd: the group's error type is
    the union of its branches', not Any."""
    from dataclasses import replace

    from mcec.check import check
    from mcec.codegen import generate as generate_program
    from mcec.syntax import parse

    source = SourceFile("undeclared.mce", UNDECLARED_THROUGH_PAR)
    parsed = parse(source)
    assert parsed.module is not None
    checked = check(parsed.module, source)
    assert {d.code for d in checked.diagnostics} == {"MCE013"}  # the checker says so first
    # the same program as if the checker had let it through: `p` declared to fail with nothing
    from mcec.check.names import DeclarationChecker
    from mcec.check.pipelines import PipelineChecker
    from mcec.diagnostics import DiagnosticSink

    sink = DiagnosticSink()
    declarations = DeclarationChecker(parsed.module, sink)
    declared = declarations.run()
    (pipeline,) = PipelineChecker(declared, declarations, sink).run()
    forced = replace(pipeline, sig=replace(pipeline.sig, errors=frozenset()))
    from mcec.check.typed import Program

    program = Program(
        path="undeclared.mce",
        source_sha256="0" * 64,
        state=declared.state,
        merge=None,
        decls=(*declared.imports, *declared.steps.values(), *declared.fns.values(), forced),
    )
    module = tmp_path / "undeclared_mce.py"
    module.write_text(generate_program(program).code, encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(Path(__file__).parents[1])}
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", str(shared_mypy_cache), str(module)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert completed.returncode == 1 and "Odd" in completed.stdout, completed.stdout


def test_a_retry_remembers_its_failure_only_when_a_planner_can_see_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``remember_failure``/``forget_failure`` (a run-context write per failed attempt and a
    ``try``/``finally`` per retry) are written only for a retry whose body can reach a
    ``spawn``: no other code reads the failure (§12)."""
    cases = Path(__file__).parent / "cases"
    plans = Path(__file__).parent.parent / "plans" / "planbox"
    plain = generate(cases / "control.mce")
    monkeypatch.syspath_prepend(str(plans.parent))
    planned = generate(plans / "box.mce")
    assert "retry_pause" in plain and "remember_failure" not in plain and "forget_failure" not in plain
    assert "remember_failure" in planned and "forget_failure" in planned
