"""Golden tests of what the checker knows of the spec's Python side (tests/check/python_cases).

The specs there name the real modules of ``python_cases/agents/`` (classes with
known relations, implementations that fit or do not fit their declarations);
the checker reads them statically, so relations between user classes get
definite answers (MCE010–MCE014, MCE020 between user classes), missing names
are MCE002 and mismatched implementations MCE026. An ``mce100_`` case is one
the checker leaves to mypy (annotations it does not read): it reports nothing
here, and ``mcec check`` reports the MCE100 (its golden is ``<case>.check.txt``,
written by tests/check/test_check_agreement.py). Same file layout and rules as
tests/check/test_check_golden.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mcec.check import check
from mcec.check.pyindex import PythonIndex
from mcec.render import render_json, render_text
from mcec.span import SourceFile
from mcec import syntax
from mcec.syntax import parse

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "check" / "python_cases"
SPECS = sorted(CASES.glob("*.mce"))


@pytest.mark.parametrize("spec", SPECS, ids=[p.stem for p in SPECS])
def test_python_case(spec: Path, golden: Callable[[Path, str], None]) -> None:
    relative = spec.relative_to(ROOT).as_posix()
    source = SourceFile(relative, spec.read_text(encoding="utf-8"))
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    result = check(parsed.module, source, PythonIndex([CASES, ROOT / "runtime"]))  # agentmonad: PlanRequest (§12)
    text = render_text(result.diagnostics, {relative: source}, color=False) if result.diagnostics else ""
    golden(spec.with_suffix(".txt"), text)
    golden(spec.with_suffix(".json"), "".join(render_json(d) + "\n" for d in result.diagnostics))
    errors = [d for d in result.diagnostics if d.is_error]
    if spec.stem.startswith("ok_"):
        assert not errors, text
        if spec.stem == "ok_classes":
            assert result.unknown_relations == 0  # every relation between the user's classes is definite
    elif spec.stem.startswith("mce100_"):
        assert not errors, text  # what only mypy can tell: tests/check/test_check_agreement.py sees it reported
        assert result.unknown_relations > 0  # and it is counted as left to mypy (the JSON summary says so)
    else:
        expected = spec.stem.split("_")[0].upper()
        assert errors and {d.code for d in errors} == {expected}, text


def test_templates_without_jinja2_are_a_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    """jinja2 comes with the `llm` extra: without it, MCE023 says how to get it (no traceback)."""
    import sys

    monkeypatch.setitem(sys.modules, "jinja2", None)  # `import jinja2` raises ImportError
    spec = CASES / "ok_llm_steps.mce"
    relative = spec.relative_to(ROOT).as_posix()
    source = SourceFile(relative, spec.read_text(encoding="utf-8"))
    parsed = parse(source)
    assert parsed.module is not None
    result = check(parsed.module, source, PythonIndex([CASES, ROOT / "runtime"]))  # agentmonad: PlanRequest (§12)
    codes = {d.code for d in result.diagnostics if d.is_error}
    assert codes == {"MCE023"}
    assert all("pip install 'mcec[llm]'" in (d.help or "") for d in result.diagnostics if d.is_error)


def _llm_templates(spec: Path) -> dict[str, str]:
    parsed = parse(SourceFile(spec.name, spec.read_text(encoding="utf-8")))
    assert parsed.module is not None
    return {d.name.text: d.template.text for d in parsed.module.decls if isinstance(d, syntax.LlmDecl)}


def test_templates_over_inherited_fields_agree_with_the_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker's answers for classes whose fields come from their bases (issue 29, item 9) are
    the runtime's: each template of ok_inherited_fields renders with real instances, and each
    one mce023_inherited_fields reports fails to render (PromptError, a Defect in a run)."""
    monkeypatch.syspath_prepend(str(CASES))
    from agentmonad.llm import PromptError
    from agentmonad.llm.prompt import Prompt
    from agents.desk import Case, Desk, Ticket, TicketPage

    state = Desk(customer="ada", opened=2)
    inputs = {
        "ticket": Ticket(customer="ada", subject="printer"),
        "desk": Ticket(customer="ada", subject="printer"),
        "case": Case(customer="ada", priority=1),
        "page": TicketPage(items=[Ticket(customer="ada", subject="printer")], customer="ada"),
        "row": {"customer": "ada"},  # a TypedDict is a dict at run time
        "self": state,
        "shout": Ticket(customer="ada", subject="printer"),
    }
    for name, text in _llm_templates(CASES / "ok_inherited_fields.mce").items():
        assert "ada" in Prompt(text, name).render(inputs[name], state), name
    for name, text in _llm_templates(CASES / "mce023_inherited_fields.mce").items():
        with pytest.raises(PromptError):
            Prompt(text, name).render(inputs[name], state)


def test_the_pydantic_attributes_the_checker_knows_are_the_installed_pydantics() -> None:
    """The checker lists pydantic's model attributes itself (so `check --fast` never imports
    pydantic): every name it lets a template read exists on the installed BaseModel (a name a
    later pydantic adds is only missing from the list: a template using it gets MCE023, never a
    pass for a name that is not there)."""
    import pydantic

    from mcec.check.pyindex import PYDANTIC_MODEL_ATTRIBUTES

    public = {name for name in dir(pydantic.BaseModel) if not name.startswith("_")}
    assert PYDANTIC_MODEL_ATTRIBUTES <= public
