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

import os
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


@pytest.mark.parametrize("spec", ["examples/meta/meta.mce", "tests/check/uses_cases/ok_adapter.mce"])
def test_spec_uses_are_read_without_class_knowledge(spec: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an index (``index=False``: no Python read, every class question left to mypy) an
    import from another spec's generated module still names that spec's pipelines: the spec is
    found by its path, not by reading Python. Before, each such name was a plain Python import,
    and ``local(state=f) p`` reported a definite MCE030 ("not a pipeline of another spec") from
    knowledge the check had merely not asked for (the check benchmark's "without" variant,
    on examples/meta/meta.mce)."""
    from mcec.compiler import check_source

    monkeypatch.chdir(ROOT if spec.startswith("examples") else CASES)
    path = ROOT / spec
    relative = os.path.relpath(path)
    result = check_source(SourceFile(relative, path.read_text(encoding="utf-8")), index=False)
    assert result.ok, [f"{d.code} {d.message}" for d in result.diagnostics if d.is_error]
    with_index = check_source(SourceFile(relative, path.read_text(encoding="utf-8")))
    assert with_index.ok


def test_a_sub_agent_on_another_state_needs_its_adapter_without_class_knowledge(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the checker knows of a used spec without an index is what it knows with one: a
    pipeline of another state used bare is still MCE028."""
    from mcec.compiler import check_source

    monkeypatch.chdir(ROOT)
    spec = CASES / "mce028_used_state.mce"
    relative = spec.relative_to(ROOT).as_posix()
    without = check_source(SourceFile(relative, spec.read_text(encoding="utf-8")), index=False)
    assert "MCE028" in {d.code for d in without.diagnostics if d.is_error}
