"""Golden tests of specs that use each other's pipelines (tests/check/uses_cases, docs/language.md §11).

Each ``<code>_<name>.mce`` there imports pipelines from the specs of
``uses_cases/specs/`` through their generated modules (which do not exist: the
checker reads the specs). The goldens hold every diagnostic, in whichever file
it is (another spec's errors are reported in that spec), rendered with the
excerpts of all the files. Same rules as tests/check/test_check_golden.py: an
``ok_`` case has no error, any other exactly the errors of its code (and, for
a spec that uses a broken one, the broken spec's own).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcec.check import check
from mcec.check.pyindex import PythonIndex
from mcec.render import render_json, render_text
from mcec.span import SourceFile
from mcec.syntax import parse

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "check" / "uses_cases"
SPECS = sorted(CASES.glob("*.mce"))


def _checked(spec: Path) -> tuple[SourceFile, tuple[object, ...], str]:
    relative = spec.relative_to(ROOT).as_posix()
    source = SourceFile(relative, spec.read_text(encoding="utf-8"))
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    result = check(parsed.module, source, PythonIndex([CASES]))
    files = {d.span.path for d in result.diagnostics} | {l.span.path for d in result.diagnostics for l in d.labels}
    sources = {path: SourceFile(path, (ROOT / path).read_text(encoding="utf-8")) for path in files}
    text = render_text(result.diagnostics, sources, color=False) if result.diagnostics else ""
    return source, result.diagnostics, text


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_uses_case(spec: Path, golden: Callable[[Path, str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # diagnostics name the other specs relative to the working directory
    source, diagnostics, text = _checked(spec)
    golden(spec.with_suffix(".txt"), text)
    golden(spec.with_suffix(".json"), "".join(render_json(d) + "\n" for d in diagnostics))  # type: ignore[arg-type]
    errors = [d for d in diagnostics if d.is_error]  # type: ignore[attr-defined]
    if spec.stem.startswith("ok_"):
        assert not errors, text
        return
    expected = spec.stem.split("_")[0].upper()
    here = {d.code for d in errors if d.span.path == source.path}  # type: ignore[attr-defined]
    assert here == {expected}, text


def test_a_sub_agent_compiles_straight_line(golden) -> None:  # type: ignore[no-untyped-def]
    """The generated module of ok_adapter.mce (golden ``ok_adapter.py.txt``): each
    ``local(state=f) p`` is one call of the fn ``f`` (guarded as any fn call), one call of the
    other spec's pipeline function, and the caller's state put back on both outcomes."""
    from mcec.compiler import compile_source

    spec = CASES / "ok_adapter.mce"
    source = SourceFile(spec.relative_to(ROOT).as_posix(), spec.read_text(encoding="utf-8"))
    result = compile_source(source, index=PythonIndex([CASES]))
    assert result.generated is not None, result.diagnostics
    code = result.generated.code
    golden(CASES / "ok_adapter.py.txt", code)
    assert "from specs.notes_mce import take_notes" in code
    assert ".local()" not in code and "AgentMonad" not in code  # no monadic program is built
