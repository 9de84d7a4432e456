"""Golden tests of the checker: one `.mce` file per rule in ``tests/check/cases``.

For each ``NAME.mce`` the rendered diagnostics are compared with ``NAME.txt``
(``render_text``, no colour) and ``NAME.json`` (one ``render_json`` line per
diagnostic). Files named ``ok_*`` must check without errors; their pipelines'
inferred signatures are compared with ``NAME.sigs``. ``pytest --update-golden``
rewrites the goldens.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcec.check import CheckResult, check
from mcec.syntax import parse
from mcec.render import render_json, render_text
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "check" / "cases"
SPECS = sorted(CASES.glob("*.mce"))


def check_text(path: str, text: str) -> tuple[CheckResult, SourceFile]:
    """Parse and check ``text``; the spec must parse cleanly."""
    source = SourceFile(path, text)
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    return check(parsed.module, source), source


def sigs(result: CheckResult) -> str:
    """One line per pipeline, in the program's (dependency) order."""
    assert result.program is not None
    lines = [
        f"{p.name} : {p.sig}{'  [stateful]' if p.sig.stateful else ''}" for p in result.program.pipelines
    ]
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_check_case(spec: Path, golden: Callable[[Path, str], None]) -> None:
    relative = spec.relative_to(ROOT).as_posix()
    result, source = check_text(relative, spec.read_text(encoding="utf-8"))
    text = render_text(result.diagnostics, {relative: source}, color=False) if result.diagnostics else ""
    golden(spec.with_suffix(".txt"), text)
    golden(spec.with_suffix(".json"), "".join(render_json(d) + "\n" for d in result.diagnostics))
    has_errors = any(d.is_error for d in result.diagnostics)
    assert (result.program is None) == has_errors
    if spec.stem.startswith("ok_"):
        assert not has_errors
        golden(spec.with_suffix(".sigs"), sigs(result))
    else:
        assert result.diagnostics, "a failing case must report something"
