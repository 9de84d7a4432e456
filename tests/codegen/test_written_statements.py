"""Generation holds little more than the text it has written (issue 48 item 4).

``mcec compile --no-mypy`` of 10,000 pipelines peaked at 986 MB: black's syntax tree of each
long statement it lays out is cyclic and was never freed while the cycle collector is paused
(480 MB), and the libcst tree of the whole module was built before any of it was laid out
(250 MB). Now black's garbage is collected as it is made, and each top-level statement is laid
out, compiled and mapped in batches as the emitter finishes it, its tree then dropped
(``mcec.codegen.writer``) — with the same text and the same source map as the whole module's
tree laid out and mapped at once.
"""

from __future__ import annotations

import gc
from pathlib import Path

import libcst as cst
import pytest

from mcec.check.typed import Program, TPipeline
from mcec.codegen import generate, header_lines
from mcec.codegen.emitter import WRITE_BATCH, Emitter
from mcec.codegen.layout import black_module, layout, layout_lines
from mcec.codegen.sourcemap import build_source_map
from mcec.compiler import check_source
from mcec.gcpause import without_cycle_collection
from mcec.span import SourceFile

CASES = Path(__file__).parent / "cases"
SPECS = sorted(CASES.glob("*.mce"))


def _declarations(n: int) -> str:
    """``n`` pipelines, each with its fn, a step and a long name (its entry's long line goes to black)."""
    lines = ["from m import E\nimport m\nstate int\nerror E\nstep a : int -> str ! E = m.a\nfn b : str -> int = m.b\n"]
    for i in range(n):
        lines.append(f"fn f{i} : int -> int = m.f{i}\n")
        lines.append(f"pipeline a_pipeline_with_a_long_name_{i} : int -> int ! E = a >>= b >>= f{i};\n")
    return "".join(lines)


def _program(source: SourceFile) -> Program:
    result = check_source(source, index=False)
    assert result.program is not None, result.diagnostics[:3]
    return result.program


def _whole_module(program: Program) -> tuple[str, list[tuple[int, int, str, str | None]]]:
    """The module as its whole tree laid out and mapped at once (how generate worked before)."""
    emitter = Emitter(program)
    module = emitter.module(header_lines(program))
    code = "\n".join(layout_lines(module).lines) + "\n"
    source_map = build_source_map(module, emitter.spans, code, emitter.hints)
    return code, [(r.first, r.last, str(r.span), r.hint) for r in source_map.ranges]


def _written(program: Program) -> tuple[str, list[tuple[int, int, str, str | None]]]:
    generated = generate(program)
    return generated.code, [(r.first, r.last, str(r.span), r.hint) for r in generated.source_map.ranges]


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_written_a_statement_at_a_time_the_module_and_its_map_are_the_whole_trees(spec: Path) -> None:
    program = _program(SourceFile(spec.name, spec.read_text(encoding="utf-8")))
    assert _written(program) == _whole_module(program)


def test_written_in_several_batches_the_module_and_its_map_are_the_whole_trees() -> None:
    n = WRITE_BATCH // 2  # a function and four sites per pipeline: ten batches and more
    program = _program(SourceFile("many.mce", _declarations(n)))
    code, ranges = _written(program)
    assert code.count("async def a_pipeline_with_a_long_name_") == n
    assert (code, ranges) == _whole_module(program)


def test_the_trees_of_the_functions_written_are_freed_as_generation_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    n = WRITE_BATCH - 70  # 430 pipelines, some 2,000 top-level statements: four batches written, part of one not
    program = _program(SourceFile("many.mce", _declarations(n)))
    alive: list[int] = []
    emit = Emitter.pipeline

    def counting(self: Emitter, pipeline: TPipeline) -> None:
        emit(self, pipeline)
        if pipeline is program.pipelines[-1]:  # every function emitted: how many of their trees are left
            gc.collect()  # what is unreachable (earlier tests' garbage too) is not counted
            alive.append(sum(1 for o in gc.get_objects() if type(o) is cst.FunctionDef))

    monkeypatch.setattr(Emitter, "pipeline", counting)
    generate(program)
    # all 430 were (the module's tree was built whole); now those of the batch not written yet
    assert alive and 0 < alive[0] < n // 4, alive


def test_black_leaves_no_garbage_behind_while_the_cycle_collector_is_paused() -> None:
    arguments = ", ".join(f"argument_{i}" for i in range(12))
    module = cst.parse_module("".join(f"value_{n} = function_{n}({arguments})\n" for n in range(40)))
    gc.collect()
    with without_cycle_collection():  # as generate lays out
        text = layout(module)
        left = gc.collect()
    assert text.count("\n") == 40 * 14  # each statement too long: black wrapped every one
    # black's tree of each statement is cyclic: ~420 objects a statement stayed until the end
    assert left < 40, left


@pytest.mark.parametrize("depth", [1, 3])
@pytest.mark.parametrize("awaited", [True, False])
def test_a_long_return_of_a_call_is_laid_out_as_black_lays_it_out(depth: int, awaited: bool) -> None:
    """Every pipeline's entry ends in ``return await observed_pipeline(…)``, laid out without black
    (``layout._return_call``): the same lines as black's, whether the arguments fit on a line of
    their own or not, for every length around the limits."""
    indent = "    " * depth
    statements = []
    for width in range(40, 120, 3):
        arguments = ['"' + "s" * (width // 4) + '"', "n" * (width // 4), "12345", "state", "value"]
        statements.append(f"{indent}return {'await ' if awaited else ''}observed_pipeline({', '.join(arguments)})\n")
    opening = "".join("    " * level + f"if x{level}:\n" for level in range(1, depth))
    source = "".join(f"async def f{i}(x1, x2):\n{opening}{statement}\n\n" for i, statement in enumerate(statements))
    module = cst.parse_module(source)
    assert layout(module) == black_module(source)
