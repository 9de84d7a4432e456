"""The spec fingerprint a durable run records (mcec/fingerprint.py, docs/language.md §13).

Each test writes a real package (a spec, the spec it uses, and the Python module of their
types and steps) into a temporary folder, checks it as `mcec` does and fingerprints the
program: formatting-only edits keep the digest, each kind of real change changes it, and
:func:`describe_change` names what changed in the spec's terms.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcec.compiler import check_source
from mcec.fingerprint import SpecFingerprint, describe_change, fingerprint
from mcec.span import SourceFile
from mcec.tools.fmt import format_source

IMPL = '''
from dataclasses import dataclass, field
from typing import Never

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Page:
    number: int
    text: str


@dataclass(frozen=True)
class Doc:
    """A document to extract from."""

    title: str
    pages: tuple[Page, ...] = ()


@dataclass(frozen=True)
class Facts:
    title: str
    count: int


@dataclass(frozen=True)
class Seen:
    done: tuple[str, ...] = ()


class ExtractError(Exception):
    """The extraction failed."""


def extract(state: Seen, doc: Doc) -> Outcome[Seen, ExtractError, Facts]:
    return Ok(Facts(doc.title, len(doc.pages)), state)


def other_extract(state: Seen, doc: Doc) -> Outcome[Seen, ExtractError, Facts]:
    return Ok(Facts(doc.title, 0), state)


def total(facts: list[Facts]) -> int:
    return sum(f.count for f in facts)


def label(state: Seen, doc: Doc) -> Outcome[Seen, Never, str]:
    return Ok(doc.title, state)
'''

SPEC = '''# A batch of documents, each extracted once.
from PKG.impl import Doc, Facts, Seen, ExtractError
from PKG.labels_mce import labelled
import PKG.impl as impl

state Seen
error ExtractError

step extract : Doc -> Facts ! ExtractError = impl.extract
fn total : list[Facts] -> int = impl.total

pipeline batch : list[Doc] -> int ! ExtractError = each(limit=8) local extract >>= total;
pipeline named : Doc -> str = labelled;
'''

LABELS = '''from PKG.impl import Doc, Seen
import PKG.impl as impl

state Seen

step label : Doc -> str = impl.label

pipeline labelled : Doc -> str = label;
'''


class Package:
    """A package in a temporary folder on ``sys.path``: its spec, used spec and module can be
    edited, and :meth:`fingerprint` checks the spec afresh (the module re-imported)."""

    def __init__(self, root: Path) -> None:
        self.name = f"fp_{uuid.uuid4().hex[:10]}"
        self.folder = root / self.name
        self.folder.mkdir()
        (self.folder / "__init__.py").write_text("")
        self.write("impl.py", IMPL)
        self.write("batch.mce", SPEC)
        self.write("labels.mce", LABELS)

    def write(self, name: str, text: str) -> None:
        """Write ``name`` with ``PKG`` standing for the package's name."""
        (self.folder / name).write_text(text.replace("PKG", self.name), encoding="utf-8")

    def edit(self, name: str, old: str, new: str) -> None:
        """Replace ``old`` (which must be there) by ``new`` in ``name``."""
        path = self.folder / name
        text = path.read_text(encoding="utf-8")
        assert old.replace("PKG", self.name) in text, old
        path.write_text(text.replace(old.replace("PKG", self.name), new.replace("PKG", self.name)), encoding="utf-8")

    def fingerprint(self, path: Path | None = None) -> SpecFingerprint:
        """The fingerprint of the spec, checked from ``path`` (default: its absolute path)."""
        for module in [m for m in sys.modules if m == self.name or m.startswith(self.name + ".")]:
            del sys.modules[module]
        importlib.invalidate_caches()
        path = path if path is not None else self.folder / "batch.mce"
        result = check_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
        assert result.program is not None, result.diagnostics
        return fingerprint(result.program)


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Package]:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # spec parts are named relative to the working directory
    made = Package(tmp_path)
    yield made
    for module in [m for m in sys.modules if m.startswith(made.name)]:
        del sys.modules[module]


# ---------------------------------------------------------------- what does not count


def test_the_fingerprint_is_stable_and_names_every_part(package: Package) -> None:
    first, second = package.fingerprint(), package.fingerprint()
    assert first == second and len(first.digest) == 64
    names = [name for name, _ in first.parts]
    assert f"spec:{package.name}/batch.mce" in names and f"spec:{package.name}/labels.mce" in names
    for cls in ("Doc", "Page", "Facts", "Seen", "ExtractError"):
        assert f"type:{package.name}.impl.{cls}" in names  # Page only through Doc's field
    assert f"field:{package.name}.impl.Doc.pages" in names
    assert describe_change(first, second) == ""


def test_the_working_directory_and_the_path_as_written_do_not_count(package: Package, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run resumed from another folder, its spec named another way, has the same fingerprint."""
    here = package.fingerprint()
    assert f"spec:{package.name}/batch.mce" in dict(here.parts)  # from the folder its package starts in
    relative = package.fingerprint(Path(package.name) / "batch.mce")
    monkeypatch.chdir(package.folder)
    inside = package.fingerprint(Path("batch.mce"))
    monkeypatch.chdir("/")
    elsewhere = package.fingerprint(package.folder / "batch.mce")
    assert here == relative == inside == elsewhere


FORMATTING_EDITS: list[tuple[str, str, str]] = [
    ("comments", "# A batch of documents, each extracted once.\n", "# Reworded.\n# Two lines now.\n"),
    ("spacing", "step extract : Doc -> Facts ! ExtractError = impl.extract", "step   extract:Doc->Facts!ExtractError=\n    impl.extract   # aligned"),
    ("line breaks", "= each(limit=8) local extract >>= total;", "=\n    each(limit=8) local extract\n    >>= total;"),
    ("declaration order", "step extract : Doc -> Facts ! ExtractError = impl.extract\nfn total : list[Facts] -> int = impl.total",
     "fn total : list[Facts] -> int = impl.total\nstep extract : Doc -> Facts ! ExtractError = impl.extract"),
]


@pytest.mark.parametrize("edit", FORMATTING_EDITS, ids=[e[0] for e in FORMATTING_EDITS])
def test_formatting_edits_keep_the_digest(package: Package, edit: tuple[str, str, str]) -> None:
    before = package.fingerprint()
    package.edit("batch.mce", edit[1], edit[2])
    assert package.fingerprint() == before


def test_mcec_fmt_keeps_the_digest(package: Package) -> None:
    before = package.fingerprint()
    path = package.folder / "batch.mce"
    package.edit("batch.mce", "pipeline batch : list[Doc] -> int", "pipeline   batch :list[Doc]->int")
    formatted = format_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
    assert formatted.text is not None
    path.write_text(formatted.text, encoding="utf-8")
    assert package.fingerprint() == before


#: What a space between two tokens of SPEC may become: more spaces, line breaks, a comment.
LAYOUTS = st.sampled_from([" ", "  ", "\n", " \n    ", "\t", "  # a comment\n", "\n\n# another\n  "])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_layout_keeps_the_digest(package: Package, data: st.DataObject) -> None:
    """Every space outside a comment replaced by random layout: the same fingerprint."""
    baseline = package.fingerprint()
    lines = []
    for line in SPEC.replace("PKG", package.name).splitlines():
        if line.startswith("#"):
            lines.append(line)
            continue
        words = line.split(" ")
        lines.append(words[0] + "".join(data.draw(LAYOUTS) + word for word in words[1:]))
    (package.folder / "batch.mce").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert package.fingerprint() == baseline


def test_a_docstring_or_a_method_is_not_a_change_of_type(package: Package) -> None:
    before = package.fingerprint()
    package.edit("impl.py", '"""A document to extract from."""', '"""Reworded."""\n\n    def first(self) -> str:\n        return self.title')
    package.edit("impl.py", "    return Ok(Facts(doc.title, len(doc.pages)), state)", "    count = len(doc.pages)\n    return Ok(Facts(doc.title, count), state)")
    assert package.fingerprint() == before


# ---------------------------------------------------------------- what counts, and how it is named

#: (what, file, old, new, a line describe_change must give)
REAL_CHANGES: list[tuple[str, str, str, str, str]] = [
    ("a bound", "batch.mce", "each(limit=8)", "each(limit=4)", "the spec {pkg}/batch.mce changed"),
    ("an implementation", "batch.mce", "= impl.extract", "= impl.other_extract", "the spec {pkg}/batch.mce changed"),
    ("a signature", "batch.mce", "pipeline named : Doc -> str = labelled;", "pipeline named : Doc -> str ! ExtractError = labelled;",
     "the spec {pkg}/batch.mce changed"),
    ("a used spec", "labels.mce", "pipeline labelled : Doc -> str = label;", "pipeline labelled : Doc -> str = label >>= label_again;\nstep label_again : str -> str = impl.label_text",
     "the spec {pkg}/labels.mce changed"),
    ("a field added", "impl.py", "    title: str\n    pages", "    title: str\n    author: str = ''\n    pages", "type Doc: field `author` added (str)"),
    ("a field removed", "impl.py", "    title: str\n    count: int", "    title: str", "type Facts: field `count` removed (was int)"),
    ("a field retyped", "impl.py", "    number: int\n", "    number: str\n", "type Page: field `number` changed from int to str"),
    ("a kind of class", "impl.py", "@dataclass(frozen=True)\nclass Seen:\n    done: tuple[str, ...] = ()",
     "class Seen(TypedDict):\n    done: tuple[str, ...]", "type Seen ({pkg}.impl.Seen) changed (its kind of class, or the order of its fields)"),
    ("an error class", "impl.py", '    """The extraction failed."""', '    """The extraction failed."""\n\n    code: int = 0',
     "type ExtractError: field `code` added (int)"),
]


@pytest.mark.parametrize("change", REAL_CHANGES, ids=[c[0] for c in REAL_CHANGES])
def test_each_real_change_changes_the_digest_and_is_named(package: Package, change: tuple[str, str, str, str, str]) -> None:
    _, name, old, new, expected = change
    if name == "labels.mce":
        package.edit("impl.py", "def label(", "def label_text(state: Seen, text: str) -> Outcome[Seen, Never, str]:\n    return Ok(text, state)\n\n\ndef label(")
    if "TypedDict" in new:
        package.edit("impl.py", "from typing import Never", "from typing import Never, TypedDict")
    before = package.fingerprint()
    package.edit(name, old, new)
    after = package.fingerprint()
    assert after.digest != before.digest
    described = describe_change(before, after)
    assert expected.format(pkg=package.name) in described.splitlines(), described


def test_a_change_of_a_nested_type_names_that_type_only(package: Package) -> None:
    before = package.fingerprint()
    package.edit("impl.py", "    number: int\n    text: str", "    number: int\n    text: str\n    words: int = 0")
    described = describe_change(before, package.fingerprint())
    assert described == "type Page: field `words` added (int)"  # Doc's own shape (a tuple of Page) is unchanged


def test_a_spec_no_longer_used_and_a_type_no_longer_recorded_are_named(package: Package) -> None:
    before = package.fingerprint()
    package.edit("batch.mce", f"from PKG.labels_mce import labelled\n", "")
    package.edit("batch.mce", "pipeline named : Doc -> str = labelled;\n", "")
    lines = describe_change(before, package.fingerprint()).splitlines()
    assert f"the spec {package.name}/labels.mce is no longer used" in lines
    assert f"the spec {package.name}/batch.mce changed" in lines
    after_removal = package.fingerprint()
    assert describe_change(after_removal, before).splitlines()[:2] == [
        f"the spec {package.name}/batch.mce changed",
        f"the spec {package.name}/labels.mce is now used",
    ]


# ---------------------------------------------------------------- the recorded form


def test_the_fingerprint_round_trips_as_json(package: Package) -> None:
    made = package.fingerprint()
    assert SpecFingerprint.from_json(made.to_json()) == made
    import json

    assert SpecFingerprint.from_json(json.loads(made.to_json())) == made


@pytest.mark.parametrize(
    "bad", ['[]', '{"digest": 1, "parts": []}', '{"digest": "x", "parts": [["a"]]}', '{"digest": "x", "parts": [["a", 2]]}']
)
def test_a_malformed_fingerprint_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        SpecFingerprint.from_json(bad)


def test_parts_of_another_scheme_are_named_not_guessed(package: Package) -> None:
    made = package.fingerprint()
    other = SpecFingerprint("0" * 64, made.parts + (("plan:x", "1"),))
    assert describe_change(other, made) == "plan:x changed"
    assert describe_change(SpecFingerprint("0" * 64, made.parts), made) == "the fingerprint was made by another version of mcec"

