"""A new node kind is a type error in every phase that does not handle it.

Every walk over the trees (``Expr``, ``TypeExpr``, ``Decl`` of the syntax tree,
``TExpr`` of the typed IR) dispatches with ``match`` and ends in
``assert_never``. This test proves it the way a contributor would find out: it
copies the compiler, adds a scratch class to each union, runs ``mypy --strict``
on the copy, and expects an error inside each of the functions listed below —
so a phase that silently falls through a new node fails this test.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The functions that must fail to type-check when each union grows, by file.
EXPECTED: dict[str, set[str]] = {
    "mcec/syntax/tree.py": {"expr_children", "type_children"},
    "mcec/syntax/parser.py": {"_roots"},
    "mcec/check/expr.py": {"describe", "infer"},
    "mcec/check/env.py": {"resolve_type"},
    "mcec/check/names.py": {"_bind", "_declare", "_sign", "unused_warnings"},
    "mcec/check/pipelines.py": {"find_origin"},
    "mcec/check/typed.py": {"children"},
    "mcec/codegen/emitter.py": {"group_function", "_label"},
    "mcec/run/interpret.py": {"arrow"},
    "mcec/tools/graph.py": {"draw"},
    "mcec/tools/fmt.py": {"flat", "must_break", "broken", "declaration", "_type", "_needs_term_parens"},
}

SCRATCH_SYNTAX = '''

@dataclass(frozen=True, slots=True)
class ScratchExpr(Node):
    """A node kind no phase knows yet."""

    span: Span


@dataclass(frozen=True, slots=True)
class ScratchType(Node):
    """A type node no phase knows yet."""

    span: Span


@dataclass(frozen=True, slots=True)
class ScratchDecl(Node):
    """A declaration no phase knows yet."""

    span: Span
'''

SCRATCH_TYPED = '''

@dataclass(frozen=True, slots=True)
class TScratch:
    """A typed node no phase knows yet."""

    sig: Sig
    span: Span
'''


def _add_scratch_nodes(package: Path) -> None:
    tree = package / "syntax" / "tree.py"
    text = tree.read_text(encoding="utf-8")
    text = text.replace("\n# ---------------------------------------------------------------- type syntax\n", SCRATCH_SYNTAX + "\n\n# ---------------------------------------------------------------- type syntax\n", 1)
    # on one line (`Expr: TypeAlias = Ref | …`) or over several (`Expr: TypeAlias = (\n    Ref | …`)
    text = re.sub(r"\nExpr: TypeAlias = (\(\s*)?Ref \|", r"\nExpr: TypeAlias = \1ScratchExpr | Ref |", text, count=1)
    assert "ScratchExpr | Ref" in text, "the Expr union is no longer written as this test expects"
    text = text.replace("TypeExpr: TypeAlias = Name |", "TypeExpr: TypeAlias = ScratchType | Name |", 1)
    text = text.replace("Decl: TypeAlias = (\n    FromImport", "Decl: TypeAlias = (\n    ScratchDecl\n    | FromImport", 1)
    tree.write_text(text, encoding="utf-8")
    typed = package / "check" / "typed.py"
    text = typed.read_text(encoding="utf-8")
    text = text.replace("\n\n# ---------------------------------------------------------------- imports\n", SCRATCH_TYPED + "\n\n# ---------------------------------------------------------------- imports\n", 1)
    # on one line (`TExpr: TypeAlias = TRef | …`) or over several (`TExpr: TypeAlias = (\n    TRef | …`)
    text, count = re.subn(r"TExpr: TypeAlias = (\(\s*)?TRef\s*\|", r"TExpr: TypeAlias = \1TScratch | TRef |", text, count=1)
    assert count == 1, "the TExpr union of mcec/check/typed.py is no longer where this test looks for it"
    typed.write_text(text, encoding="utf-8")


def _enclosing_functions(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.lineno, node.end_lineno or node.lineno, node.name))
    return found


def test_a_scratch_node_in_each_union_is_a_mypy_error_in_every_phase(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "mcec", tmp_path / "mcec")
    shutil.copytree(ROOT / "runtime", tmp_path / "runtime")
    shutil.copytree(ROOT / "grammar", tmp_path / "grammar")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    _add_scratch_nodes(tmp_path / "mcec")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0, done.stdout
    failing: dict[str, set[str]] = {}
    for line in done.stdout.splitlines():
        match = re.match(r"(mcec/[\w/]+\.py):(\d+): error:", line)
        if match is None:
            continue
        file, number = match.group(1), int(match.group(2))
        for first, last, name in _enclosing_functions(tmp_path / file):
            if first <= number <= last:
                failing.setdefault(file, set()).add(name)
    missing = {file: names - failing.get(file, set()) for file, names in EXPECTED.items()}
    assert not any(missing.values()), f"phases that do not fail on a new node kind: {missing}\n{done.stdout}"
