"""The grammar's analysis is kept between processes (mcec.syntax.grammar.grammar_parser): a second
process loads it instead of analysing the grammar again, and a missing, half-written or unwritable
cache only costs the analysis, never the parse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

#: Parses an example in a fresh process; with ``forbid``, analysing the grammar is an error there.
PARSE = """
import sys
import lark
if sys.argv[1] == "forbid":
    def analyse(*args, **kwargs):
        raise AssertionError("the grammar was analysed again")
    lark.Lark._build_parser = analyse
from mcec.span import SourceFile
from mcec.syntax import parse
from mcec.syntax.grammar import tables
parsed = parse(SourceFile("x.mce", "pipeline p : int -> int = inc >>= inc;\\n"))
assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
assert "par" in tables().reserved_words
print("parsed")
"""


def _parse(cache: Path | str, mode: str = "build") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    return subprocess.run([sys.executable, "-c", PARSE, mode], capture_output=True, text=True, env=env, timeout=120)


def test_a_second_process_loads_the_grammars_analysis_instead_of_making_it(tmp_path: Path) -> None:
    first = _parse(tmp_path)
    assert first.returncode == 0 and first.stdout == "parsed\n", first.stderr
    kept = sorted(p.name for p in (tmp_path / "mcec").iterdir())
    assert [name.split("-")[1] for name in kept] == ["parser", "tables"], kept
    assert (tmp_path / "mcec").stat().st_mode & 0o077 == 0  # the user's own: the files are pickles
    again = _parse(tmp_path, "forbid")
    assert again.returncode == 0 and again.stdout == "parsed\n", again.stderr


def test_a_half_written_cache_is_analysed_again_and_mended(tmp_path: Path) -> None:
    assert _parse(tmp_path).returncode == 0
    for kept in (tmp_path / "mcec").iterdir():
        kept.write_bytes(kept.read_bytes()[:2000])  # what a reader sees while another process writes
    mended = _parse(tmp_path)
    assert mended.returncode == 0 and mended.stdout == "parsed\n" and mended.stderr == "", mended.stderr
    assert _parse(tmp_path, "forbid").returncode == 0


def test_without_a_cache_folder_it_may_write_the_grammar_is_analysed_in_the_process(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    out = _parse(blocked)
    assert out.returncode == 0 and out.stdout == "parsed\n" and out.stderr == "", out.stderr
