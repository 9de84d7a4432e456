"""The "did you mean" of a name a Python module lacks is memoised across checks, keyed by what it depends on.

An editor checks a spec again on every pause in typing; a spec naming members a
module lacks (the 1,000-line ``mixed`` benchmark names 1,100) spent most of each
check in difflib, comparing each name with every member of the module again.
The answer depends only on the name and the module's members, so it is kept by
those: a module whose members change gets a fresh answer.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest

from mcec.check import check
from mcec.check.pyindex import PythonIndex
from mcec.span import SourceFile
from mcec.syntax import parse

SPEC = "import app.impl as impl\nstep s : int -> int = impl.lookp\npipeline p : int -> int = s;\n"


def helps(folder: Path) -> list[str | None]:
    """The help of each diagnostic of SPEC, checked with a fresh index of ``folder`` (as ``check --fast`` does)."""
    source = SourceFile(str(folder / "memo.mce"), SPEC)
    parsed = parse(source)
    assert parsed.module is not None, parsed.diagnostics
    found = check(parsed.module, source, PythonIndex([folder])).diagnostics
    return [d.help for d in found if "has no `lookp`" in d.message]


def write_impl(folder: Path, names: list[str]) -> None:
    (folder / "app").mkdir(exist_ok=True)
    (folder / "app" / "__init__.py").write_text("", encoding="utf-8")
    body = "".join(f"def {name}(x: int) -> int:\n    return x\n\n" for name in names)
    (folder / "app" / "impl.py").write_text(body, encoding="utf-8")


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], int]:
    """How many times difflib compared a name with a set of candidates holding ``marker``."""
    seen: list[list[str]] = []
    real = difflib.get_close_matches

    def counting(word: str, possibilities: list[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
        seen.append(list(possibilities))
        return real(word, possibilities, n, cutoff)

    monkeypatch.setattr(difflib, "get_close_matches", counting)
    return lambda marker: sum(marker in candidates for candidates in seen)


def test_a_missing_members_suggestion_is_made_once_across_checks(tmp_path: Path, compared: Callable[[str], int]) -> None:
    marker = f"only_{tmp_path.name.replace('-', '_')}"  # candidates no other test's module has
    write_impl(tmp_path, ["lookup", marker, *(f"helper{i}" for i in range(200))])
    for _ in range(3):
        assert helps(tmp_path) == ["did you mean `lookup`?"]
    assert compared(marker) == 1


def test_a_module_whose_members_change_gets_a_fresh_suggestion(tmp_path: Path) -> None:
    write_impl(tmp_path, ["lookup", "other"])
    assert helps(tmp_path) == ["did you mean `lookup`?"]
    write_impl(tmp_path, ["lookup", "looks", "other"])
    assert helps(tmp_path) == ["did you mean one of `lookup`, `looks`?"]
    write_impl(tmp_path, ["other"])
    assert helps(tmp_path) == [None]
