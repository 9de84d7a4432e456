"""Syntax-level diagnostics: one golden case per message in ``tests/syntax/cases/errors``.

Each ``NAME.mce`` has the rendered diagnostics (``NAME.txt``, no colour) and the
JSON lines (``NAME.json``) next to it. ``missing_file`` has no ``.mce``: it is
the MCE005 of a file that does not exist.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcec.cli.common import load_source
from mcec import syntax as s
from mcec.diagnostics import Diagnostic
from mcec.syntax import parse
from mcec.render import render_json, render_summary, render_text
from mcec.span import SourceFile

CASES = Path(__file__).parent / "cases" / "errors"
NAMES = sorted(p.stem for p in CASES.glob("*.mce")) + ["missing_file"]


def diagnose(name: str) -> tuple[list[Diagnostic], dict[str, SourceFile]]:
    source, problem = load_source(Path(name + ".mce"))
    sources = {source.path: source} if source is not None else {}
    if problem is not None:
        return [problem], sources
    assert source is not None
    return list(parse(source).diagnostics), sources


@pytest.mark.parametrize("name", NAMES)
def test_syntax_case(name: str, golden, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(CASES)
    diagnostics, sources = diagnose(name)
    assert diagnostics, "every syntax case reports something"
    assert all(d.is_error for d in diagnostics)
    text = render_text(diagnostics, sources, color=False) + render_summary(diagnostics, color=False)
    golden(CASES / f"{name}.txt", text)
    golden(CASES / f"{name}.json", "".join(render_json(d) + "\n" for d in diagnostics))


EXPECTED_CODES = {
    "missing_file": {"MCE005"},
    "reserved_word_name": {"MCE016"},
    "python_keyword_name": {"MCE016"},
    "python_keyword_attribute": {"MCE016"},
    "python_keyword_module": {"MCE016"},
    "dunder_names": {"MCE016"},
}


@pytest.mark.parametrize("name", NAMES)
def test_syntax_case_codes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CASES)
    diagnostics, _ = diagnose(name)
    assert {d.code for d in diagnostics} == EXPECTED_CODES.get(name, {"MCE001"})


def test_messages_never_name_grammar_terminals() -> None:
    for path in CASES.glob("*.mce"):
        result = parse(SourceFile(path.name, path.read_bytes().decode("utf-8", errors="replace")))
        for diagnostic in result.diagnostics:
            for terminal in ("BINDOP", "SEMI", "ARROW", "NAME", "$END", "RPAR", "LSQB"):
                assert terminal not in diagnostic.message


def test_bind_inside_par_says_how_to_fix() -> None:
    result = parse(SourceFile("t.mce", "pipeline p : A -> B = par <a, b>>= c;"))
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "MCE001"
    assert diagnostic.help == "write `par <a, b> >>= c`"


def test_recovery_reports_several_errors_but_is_capped() -> None:
    text = "step x y\n" * 100
    result = parse(SourceFile("t.mce", text))
    assert result.module is None
    assert 2 <= len(result.diagnostics) <= 20


def test_python_keyword_keeps_the_tree() -> None:
    result = parse(SourceFile("t.mce", "fn class : A -> B = m.f"))
    assert result.module is not None
    assert [d.code for d in result.diagnostics] == ["MCE016"]


def test_reserved_words_are_attribute_names_after_a_dot() -> None:
    text = "state S merge impl.merge\nstep s : A -> A = impl.state\nfn f : A -> A = m.error.step\n"
    result = parse(SourceFile("t.mce", text))
    assert result.diagnostics == () and result.module is not None
    dotted = [d.merge.dotted if isinstance(d, s.StateDecl) and d.merge else d.impl.dotted for d in result.module.decls]  # type: ignore[union-attr]
    assert dotted == ["impl.merge", "impl.state", "m.error.step"]


def test_reserved_words_stay_reserved_as_declared_names() -> None:
    for text in ("step merge : A -> A = impl.merge", "fn error : A -> A = m.f", "import m as state"):
        result = parse(SourceFile("t.mce", text))
        assert result.module is None
        assert [d.code for d in result.diagnostics] == ["MCE016"], text


def test_python_keyword_after_a_dot_is_mce016_and_keeps_the_tree() -> None:
    result = parse(SourceFile("t.mce", "step s : A -> A = impl.class"))
    assert result.module is not None
    assert [(d.code, d.span.column) for d in result.diagnostics] == [("MCE016", 24)]
    assert "attribute name" in result.diagnostics[0].message


def test_soft_keywords_after_a_dot_are_fine() -> None:
    assert parse(SourceFile("t.mce", "fn f : A -> A = m.match\nfn g : A -> A = m.type")).diagnostics == ()
