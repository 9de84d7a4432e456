"""The language server's incremental re-check (mcec/lsp/incremental.py) says what a cold check
says: on random edits inside pipelines of real specs (the examples, a generated spec full of
errors), the diagnostics of :func:`analyse` given the previous analysis equal those of a cold
:func:`analyse`, and of ``mcec check --fast`` (:func:`mcec.compiler.check_source`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcec.check.names import DeclarationChecker
from mcec.check.pipelines import PipelineChecker
from mcec.check.pyindex import PythonIndex
from mcec.compiler import check_source
from mcec.lsp.analysis import Analysis, analyse
from mcec.span import SourceFile
from mcec.syntax import tree as s

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.frontend_bench import generate  # noqa: E402  (the benchmark's spec, errors and all)

SPECS = {
    "research": (ROOT / "examples" / "research" / "research.mce").read_text(encoding="utf-8"),
    "briefing": (ROOT / "examples" / "briefing" / "briefing.mce").read_text(encoding="utf-8"),
    "generated": generate(300),
}
PATHS = {
    "research": str(ROOT / "examples" / "research" / "research.mce"),
    "briefing": str(ROOT / "examples" / "briefing" / "briefing.mce"),
    "generated": str(ROOT / "bench.mce"),
}
INDEX = PythonIndex.for_directory(ROOT)
PIECES = ["", " ", ">>= ", "step ", "hits_text", "final", "x", ";", "catch LLMError => ", "par<", ">", "(", ")", "orelse ", "local "]
_COLD: dict[str, Analysis] = {}


def _cold(name: str) -> Analysis:
    if name not in _COLD:
        _COLD[name] = analyse(SourceFile(PATHS[name], SPECS[name]), None, INDEX)
    cold = _COLD[name]
    assert cold.module is not None
    cold.module.place()  # each test re-parses from it, which moves its declarations into the edited text
    return cold


def _pipeline_spans(analysis: Analysis) -> list[tuple[int, int]]:
    assert analysis.module is not None
    return [(d.body.start, d.body.end) for d in analysis.module.decls if isinstance(d, s.PipelineDecl)]


def _edited(name: str, which: float, where: float, removed: int, inserted: str) -> str:
    text = SPECS[name]
    spans = _pipeline_spans(_cold(name))
    start, end = spans[int(which * len(spans)) % len(spans)]
    at = start + int(where * (end - start))
    return text[:at] + inserted + text[min(end, at + removed) :]


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(SPECS)),
    which=st.floats(0, 1, exclude_max=True),
    where=st.floats(0, 1),
    removed=st.integers(0, 8),
    inserted=st.lists(st.sampled_from(PIECES), max_size=3).map("".join),
)
def test_a_recheck_says_what_a_cold_check_says(name: str, which: float, where: float, removed: int, inserted: str) -> None:
    before = _cold(name)
    text = _edited(name, which, where, removed, inserted)
    source = SourceFile(PATHS[name], text)
    again = analyse(source, before.module, INDEX, last=before)
    cold = analyse(source, None, INDEX)
    assert again.diagnostics == cold.diagnostics
    assert cold.diagnostics == check_source(source, index=INDEX).diagnostics


@pytest.mark.parametrize("name", ["research", "generated"])
def test_an_edit_inside_one_pipeline_rechecks_only_what_it_affects(name: str) -> None:
    before = _cold(name)
    start, _ = _pipeline_spans(before)[-1]
    text = SPECS[name][:start] + " " + SPECS[name][start:]
    again = analyse(SourceFile(PATHS[name], text), before.module, INDEX, last=before)
    assert again.partial
    assert again.diagnostics == analyse(SourceFile(PATHS[name], text), None, INDEX).diagnostics


def test_an_edit_inside_a_pipeline_does_not_sign_the_declarations_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The steps, fns, tools and llms (an llm's template file read and parsed) are signed once: a
    re-check after an edit inside a pipeline replays that, and says what a cold check says."""
    before = _cold("research")
    signed: list[str] = []
    for method in ("_step", "_fn", "_tool", "_llm"):
        real = getattr(DeclarationChecker, method)

        def counting(self: DeclarationChecker, decl: s.Decl, real: Any = real) -> None:
            signed.append(type(decl).__name__)
            real(self, decl)

        monkeypatch.setattr(DeclarationChecker, method, counting)
    analysis, text = before, SPECS["research"]
    for _ in range(3):  # a few keystrokes, each from the re-check before
        start, _ = _pipeline_spans(analysis)[-1]
        text = text[:start] + " " + text[start:]
        analysis = analyse(SourceFile(PATHS["research"], text), analysis.module, INDEX, last=analysis)
        assert analysis.partial
    assert signed == []
    assert analysis.diagnostics == check_source(SourceFile(PATHS["research"], text), index=INDEX).diagnostics


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(SPECS)),
    edits=st.lists(
        st.tuples(st.floats(0, 1, exclude_max=True), st.floats(0, 1), st.integers(0, 8), st.lists(st.sampled_from(PIECES), max_size=3).map("".join)),
        min_size=2,
        max_size=4,
    ),
)
def test_successive_rechecks_say_what_a_cold_check_says(name: str, edits: list[tuple[float, float, int, str]]) -> None:
    """Each re-check replays the signing the one before recorded (or replayed): still a cold check's diagnostics."""
    analysis, text = _cold(name), SPECS[name]
    for which, where, removed, inserted in edits:
        spans = _pipeline_spans(analysis) if analysis.module is not None else []
        if not spans:
            break
        start, end = spans[int(which * len(spans)) % len(spans)]
        at = start + int(where * (end - start))
        text = text[:at] + inserted + text[min(end, at + removed) :]
        source = SourceFile(PATHS[name], text)
        analysis = analyse(source, analysis.module, INDEX, last=analysis)
        assert analysis.diagnostics == analyse(source, None, INDEX).diagnostics


def test_declarations_that_moved_are_neither_parsed_nor_signed_nor_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit inside one pipeline moves every declaration after it: they are re-used as the same
    objects (their spans relative to their declaration), so their signing is replayed and the
    pipelines the edit does not affect are not checked, however far they moved."""
    text = "\n".join(
        [
            "from examples.research.impl import Query, Answer",
            "state Query",
            *[f"fn f{i} : Query -> Query = examples.research.impl.f{i}" for i in range(3)],
            "pipeline p : Query -> Query = f0 >>= f1;",
            *[f"fn g{i} : Query -> Query = examples.research.impl.g{i}" for i in range(3)],
            *[f"pipeline q{i} : Query -> Query = g{i} >>= f2;" for i in range(3)],
            "",
        ]
    )
    path = str(ROOT / "moved.mce")
    before = analyse(SourceFile(path, text), None, INDEX)
    assert before.module is not None and before.diagnostics  # (the fns have no implementations)
    signed: list[str] = []
    for method in ("_fn", "_pipeline"):
        real = getattr(DeclarationChecker, method)

        def counting(self: DeclarationChecker, decl: s.Decl, real: Any = real) -> None:
            signed.append(decl.name.text)  # type: ignore[attr-defined]
            real(self, decl)

        monkeypatch.setattr(DeclarationChecker, method, counting)
    checked: list[str] = []
    real_check = PipelineChecker._pipeline

    def counting_check(self: PipelineChecker, pipeline: Any) -> Any:
        checked.append(pipeline.decl.name.text)
        return real_check(self, pipeline)

    monkeypatch.setattr(PipelineChecker, "_pipeline", counting_check)
    at = text.index("f0 >>= f1")
    edited = SourceFile(path, text[:at] + "  " + text[at:])  # a keystroke inside p: all after it move
    again = analyse(edited, before.module, INDEX, last=before)
    assert again.partial and again.module is not None
    assert all(new is old for old, new in zip(before.module.decls, again.module.decls) if not isinstance(new, s.PipelineDecl) or new.name.text != "p")
    assert signed == ["p"] and checked == ["p"]
    monkeypatch.undo()
    assert again.diagnostics == check_source(edited, index=INDEX).diagnostics
