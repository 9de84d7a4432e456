"""``reparse`` after an edit builds exactly the tree a cold parse builds.

Random edits (insertions, deletions, replacements of random text, and edits
that add, drop or change whole declarations) of every valid golden spec and
example: the result of :func:`mcec.syntax.incremental.reparse` from the
previous tree must equal :func:`mcec.syntax.parse` of the new text — the same
declarations, comments, spans and diagnostics.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcec.span import SourceFile
from mcec.syntax import parse
from mcec.syntax.incremental import reparse

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted(
    p
    for p in [*(ROOT / "tests" / "syntax" / "cases" / "parse").glob("*.mce"), *(ROOT / "examples").rglob("*.mce")]
    if parse(SourceFile(p.name, p.read_text(encoding="utf-8"))).module is not None
)
SNIPPETS = [
    "x", " ", "\n", ";", "# note\n", "fn g : A -> A = m.g\n", ">>= a ", "par <a, b>", "}", "{", '"',
    "pipeline z : A -> A = a;\n", "step ", "m.", "\n\n", "local ",
]


def _same(text: str, edited: str) -> None:
    before = parse(SourceFile("e.mce", text)).module
    assert before is not None
    after = SourceFile("e.mce", edited)
    assert reparse(before, after) == parse(after)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(SPECS),
    st.floats(0, 1),
    st.integers(0, 12),
    st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=6)),
)
def test_an_edit_reparses_to_the_cold_tree(path: Path, where: float, removed: int, inserted: str) -> None:
    text = path.read_text(encoding="utf-8")
    at = int(where * len(text))
    _same(text, text[:at] + inserted + text[at + removed :])


def test_a_step_added_in_the_middle_moves_what_follows() -> None:
    text = "fn a : A -> A = m.a\n# one\npipeline p : A -> A = a;\n\n# two\npipeline q : A -> A = a >>= a;\n"
    _same(text, text.replace("= a;", "= a >>= a;"))
    _same(text, text.replace("# two\n", ""))
    _same(text, text + "fn b : A -> A = m.b\n")
    _same(text, "import m\n" + text)
    _same(text, text)


def test_an_edit_that_breaks_the_file_gives_the_cold_diagnostics() -> None:
    text = "fn a : A -> A = m.a\npipeline p : A -> A = a;\npipeline q : A -> A = a;\n"
    _same(text, text.replace("p : A -> A = a;", "p : A -> A = a"))
    _same(text, text.replace("= m.a", "= m."))


def test_a_kept_declaration_is_the_same_object_moved() -> None:
    text = "fn a : A -> A = m.a\npipeline p : A -> A = a;\nfn b : A -> A = m.b\npipeline q : A -> A = b;\n"
    before = parse(SourceFile("e.mce", text)).module
    assert before is not None
    after = SourceFile("e.mce", text.replace("= a;", "= a >>= a;"))
    module = reparse(before, after).module
    assert module is not None and module == parse(after).module
    assert module.decls[0] is before.decls[0]  # before the edit: kept, where it was
    assert module.decls[1] is not before.decls[1]  # the edited pipeline: parsed again
    assert module.decls[2] is before.decls[2] and module.decls[3] is before.decls[3]  # after it: kept, moved
    assert module.decls[3].span.source is after and after.text[module.decls[3].start :].startswith("pipeline q")


def test_the_same_tree_reparsed_twice_and_read_again() -> None:
    # The server and the benchmark re-parse from one tree more than once; each re-parse (and
    # `place`) puts the shared declarations where that version has them.
    text = "fn a : A -> A = m.a\npipeline p : A -> A = a;\n\npipeline q : A -> A = a;\n"
    before = parse(SourceFile("e.mce", text)).module
    assert before is not None
    one = SourceFile("e.mce", text.replace("= a;", "= a >>= a;", 1))
    two = SourceFile("e.mce", text.replace("\n\n", "\n# a comment\n\n"))
    first = reparse(before, one).module
    second = reparse(before, two).module
    assert second == parse(two).module
    assert first is not None and first.decls[-1] is second.decls[-1]
    first.place()
    assert first == parse(one).module
    before.place()
    assert before == parse(SourceFile("e.mce", text)).module
