"""``SPEC_INFO``, the descriptor every generated module ends with (docs/language.md §7,
:mod:`agentmonad.spec`): what it says agrees with what the compiler knows — its effect sites'
types are the table a durable run records with (:func:`mcec.durable.types.type_table`), its
pipelines, asks and ``each(limit=N)`` sites are the checked program's — and it prepares a run's
input as ``mcec run`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentmonad.spec import InputError, SpecInfo, spec_info
from mcec.cli.common import load_source
from mcec.compiler import compile_source
from mcec.durable.elements import each_sites
from mcec.durable.types import type_table
from mcec.run.runner import RunError, load_module, prepare

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted([*ROOT.glob("examples/*/*.mce"), *ROOT.glob("tests/durable/*/*.mce")])


def _compiled(path: Path) -> tuple[Any, SpecInfo]:
    source, problem = load_source(path)
    assert source is not None and problem is None, problem
    result = compile_source(source)
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, spec_info(load_module(result.program, result.generated))


def _entries(table: Any) -> dict[str, dict[str, tuple[Any, Any, frozenset[type]]]]:
    return {kind: {key: (types.value, types.state, frozenset(types.errors)) for key, types in found.items()}
            for kind, found in (("site", table._by_site), ("name", table._by_name))}


@pytest.mark.parametrize("path", SPECS, ids=lambda p: str(p.relative_to(ROOT)))
def test_spec_info_agrees_with_the_checked_program(path: Path) -> None:
    program, info = _compiled(path)
    assert _entries(info.type_table()) == _entries(type_table(program))
    assert [p.name for p in info.pipelines] == [p.name for p in program.pipelines]
    assert all(info.pipeline(p.name) is p for p in info.pipelines)
    assert [a.name for a in info.asks] == [a.name for a in program.asks]
    assert {str(e.site): e.limit for e in info.each} == {site: node.limit for site, node in each_sites(program).items()}
    assert info.models == tuple(m.name for m in program.models)
    assert info.source_sha256 == program.source_sha256


def test_spec_info_prepares_a_runs_input_as_mcec_run_does() -> None:
    program, info = _compiled(ROOT / "examples" / "support" / "support.mce")
    ticket = '{"id": "T-1", "customer": "ada", "amount": 250, "reason": "broken"}'
    for pipeline, given in (("handle", ticket), ("day", f"[{ticket}]"), ("handle", '{"id": 1}'), ("nope", "1"),
                            ("handle", "not json")):
        try:
            expected: object = prepare(program, pipeline, given, None)
        except RunError as exc:
            expected = str(exc)
        try:
            got: object = info.prepare(pipeline, given)
        except InputError as exc:
            got = str(exc)
        assert got == expected, (pipeline, given)


def test_a_descriptor_built_in_parts_is_laid_out_as_black_lays_it_out() -> None:
    """Past :data:`~mcec.codegen.descriptor.CHUNK` entries the descriptor is built over statements
    of its own (``effects=(*_EFFECTS_1, *_EFFECTS_2, …)``): mcec's printer writes the starred
    names as black does (tests/durable/syncbox/chain.mce, above, runs one: its effects are in two parts)."""
    from mcec.compiler import check_source
    from mcec.codegen import header_lines
    from mcec.codegen.descriptor import CHUNK
    from mcec.codegen.emitter import Emitter
    from mcec.codegen.layout import black_module, layout
    from mcec.span import SourceFile

    spec = "import m\nstate int\n" + "".join(f"fn f{i} : int -> int = m.f\npipeline p{i} : int -> int = f{i};\n"
                                            for i in range(CHUNK + 3))
    result = check_source(SourceFile("parts.mce", spec), index=False)
    assert result.program is not None, result.diagnostics[:3]
    module = Emitter(result.program).module(header_lines(result.program))
    text = layout(module)
    assert text == black_module(module.code)
    assert "    (*_PIPELINES_1, *_PIPELINES_2),\n" in text


@pytest.mark.parametrize("width", [1, 20, 40, 60, 70, 78, 79, 80, 81, 82, 84, 90])
@pytest.mark.parametrize("count", [2, 3, 50])
def test_a_long_tuple_of_entries_is_laid_out_as_black_lays_it_out(width: int, count: int) -> None:
    """The printer's own path for ``NAME = (entry, entry, …)`` too long for a line (the parts of a
    large ``SPEC_INFO``): black's text, whether the entries fit one to a line, on one line of their
    own, or not at all."""
    import libcst as cst

    from mcec.codegen import cst as c
    from mcec.codegen.layout import black_module, layout

    entries = [c.call(c.name("EffectSite"), c.string("x" * width), c.name(f"SITE_{i}")) for i in range(count)]
    module = cst.Module(body=[c.assign("_EFFECTS_1", c.tuple_(entries))])
    assert layout(module) == black_module(module.code)
