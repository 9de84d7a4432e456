"""Golden tests of the durable check (MCE033, mcec/check/durable.py, docs/language.md §13).

Each ``tests/check/durable_cases/NAME.mce`` names the real classes of
``durable_cases/records/kinds.py``; every pipeline of it is checked for a durable run
and the diagnostics of all of them are compared with ``NAME.txt`` and ``NAME.json``
(``pytest --update-golden`` rewrites them). ``ok_*`` cases record everything;
the others report MCE033 only, and only for the pipelines that reach the type.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcec.check import check
from mcec.check.durable import check_durable, recorded_problem
from mcec.check.pyindex import PythonIndex
from mcec.diagnostics import Diagnostic
from mcec.render import render_json, render_text
from mcec.span import SourceFile
from mcec.syntax import parse

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "check" / "durable_cases"
SPECS = sorted(CASES.glob("*.mce"))


@pytest.fixture(autouse=True)
def _records_importable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(CASES))  # `records.kinds`, as a run would import it
    yield


def _checked(spec: Path) -> tuple[str, SourceFile, dict[str, list[Diagnostic]]]:
    relative = spec.relative_to(ROOT).as_posix()
    source = SourceFile(relative, spec.read_text(encoding="utf-8"))
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    result = check(parsed.module, source, PythonIndex([CASES, ROOT / "runtime"]))
    assert result.program is not None, render_text(result.diagnostics, {relative: source}, color=False)
    return relative, source, {p.name: check_durable(result.program, p.name) for p in result.program.pipelines}


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_durable_case(spec: Path, golden: Callable[[Path, str], None]) -> None:
    relative, source, by_pipeline = _checked(spec)
    diagnostics = sorted({d for found in by_pipeline.values() for d in found}, key=Diagnostic.sort_key)
    text = render_text(diagnostics, {relative: source}, color=False) if diagnostics else ""
    golden(spec.with_suffix(".txt"), text)
    golden(spec.with_suffix(".json"), "".join(render_json(d) + "\n" for d in diagnostics))
    if spec.stem.startswith("ok_"):
        assert not diagnostics, text
    else:
        assert diagnostics and {d.code for d in diagnostics} == {"MCE033"}, text


def test_each_pipeline_reports_what_it_reaches_only() -> None:
    _, _, by_pipeline = _checked(CASES / "mce033_not_recordable.mce")
    messages = {name: [d.message for d in found] for name, found in by_pipeline.items()}
    assert messages["fine"] == []
    assert len(messages["handle"]) == 1 and "arbitrary class without a schema" in messages["handle"][0]
    assert len(messages["hooked"]) == 1 and "`Hooked.on_done` is a `Callable`" in messages["hooked"][0]
    assert "`Bundle.items` → `Locked.guard` is `Event`, an arbitrary class" in messages["bundled"][0]
    assert "an `__init__` of its own" in messages["rejects"][0]
    # `callers` reaches `handle` and `hooked` through par: both are reported, at their steps
    assert sorted(messages["callers"]) == sorted(messages["handle"] + messages["hooked"])


def test_an_unknown_pipeline_is_a_key_error() -> None:
    relative = "tests/check/durable_cases/ok_recordable.mce"
    source = SourceFile(relative, (ROOT / relative).read_text(encoding="utf-8"))
    parsed = parse(source)
    assert parsed.module is not None
    result = check(parsed.module, source, PythonIndex([CASES, ROOT / "runtime"]))
    assert result.program is not None
    with pytest.raises(KeyError):
        check_durable(result.program, "nope")


def test_recorded_problem_names_the_part_that_fails() -> None:
    from records.kinds import Bundle, Doc, Facts, Handle  # type: ignore[import-not-found]

    assert recorded_problem(Doc) is None and recorded_problem(Facts) is None
    assert recorded_problem(list[Handle]) == (
        "`Handle`, an arbitrary class without a schema (not a dataclass, pydantic model, TypedDict or enum)"
    )
    assert recorded_problem(dict[str, Callable[[int], int]]) == "a `Callable`"
    assert recorded_problem(Bundle) == (
        "`Bundle.items` → `Locked.guard` is `Event`, an arbitrary class without a schema "
        "(not a dataclass, pydantic model, TypedDict or enum)"
    )
