"""The language reference in the repository (docs/language.md) and the code agree.

Every diagnostic code mcec can print is in the reference's table and in
``mcec.diagnostics.CODES`` (issue 18, item 20: MCE006 was printed but not
listed), ``mcec explain`` prints each one's entry, and the README and the
facade point users at the reference.
"""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path
from typing import get_args

import mcec
from mcec.cli.explain import reference_entries, reference_text
from mcec.diagnostics import CODES, Code

ROOT = Path(__file__).resolve().parent.parent


def test_every_code_is_in_the_reference_and_every_listed_code_exists() -> None:
    text = reference_text()
    assert text is not None
    listed = set(reference_entries(text))
    assert listed == set(CODES), f"only in the code: {set(CODES) - listed}; only in the reference: {listed - set(CODES)}"


def test_the_code_type_is_the_reference_table() -> None:
    """``Code``, the type every diagnostic's code has (mypy rejects any other string where a code is
    written), lists exactly the codes of ``CODES`` and of the reference's table (``mcec explain``)."""
    text = reference_text()
    assert text is not None
    typed = get_args(Code)
    assert len(typed) == len(set(typed)), "a code is listed twice in Code"
    assert set(typed) == set(CODES) == set(reference_entries(text))


def test_mcec_explain_prints_the_reference_entry() -> None:
    done = subprocess.run([sys.executable, "-m", "mcec", "explain", "mce013"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.startswith("MCE013: an error escapes")
    unknown = subprocess.run([sys.executable, "-m", "mcec", "explain", "E42"], capture_output=True, text=True, cwd=ROOT)
    assert unknown.returncode == 2 and "MCE013" in unknown.stdout


def test_the_readme_links_the_reference_in_the_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "(docs/language.md)" in readme and "../shared/" not in readme


def test_the_facade_doctests() -> None:
    failures, tried = doctest.testmod(mcec)
    assert tried and not failures


def test_sources_cite_the_reference_in_the_repository() -> None:
    """Comments, docstrings and help cite docs/language.md, which ships with the code; the
    original design contract (LANGUAGE.md) is not in the repository, so a reader cannot follow
    a citation of it."""
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    citing = []
    for name in tracked:
        path = ROOT / name
        if path.suffix not in {".py", ".lark", ".mce", ".toml", ".md", ".j2", ".out", ".txt"} or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # the deliberately broken inputs of the robustness tests
        if "LANGUAGE.md" in text:
            citing.append(name)
    # this test, and version 1's spec, kept byte for byte as version 1 compiled it (test_v1_words)
    kept = {"tests/test_reference.py", "tests/codegen/v1/v1_words.mce"}
    assert [name for name in citing if name not in kept] == []
