"""A new construct is a type error in every phase that must handle it.

Every walk over the trees (``Expr``, ``TypeExpr``, ``Decl`` of the syntax tree,
``TExpr`` and ``TDecl`` of the typed IR) dispatches with ``match`` and ends in
``assert_never``. This test proves it the way a contributor would find out: it
copies the compiler (and the random spec generator, tests/spec_gen.py), adds a
scratch class to the unions, runs ``mypy --strict`` on the copy, and expects an
error inside each of the functions listed below — so a phase that silently
falls through a new construct fails this test.

Two constructs, each in a copy of its own:

- a scratch *expression* (``ScratchExpr`` in ``Expr``, ``TScratch`` in ``TExpr``, and a
  ``ScratchType`` in ``TypeExpr``): the parser's depth walk, the checker, the code
  generator, the interpreter, fmt, graph, plan confinement and the spec generator;
- a scratch *declaration* (``ScratchDecl`` in ``Decl``, ``TScratchDecl`` in ``TDecl``): the
  parser's builder, the checker, the code generator, the interpreter, fmt and the spec
  generator (graph draws pipelines and plans are expressions: neither reads a declaration).

The files mypy sends a contributor to are the files a construct costs (with the
grammar, ``grammar/mce.lark``, for its syntax): :data:`MAX_FILES` at most.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The functions that must fail to type-check when a new expression is added, by file.
EXPR_EXPECTED: dict[str, set[str]] = {
    "mcec/syntax/tree.py": {"expr_children"},
    "mcec/syntax/parser.py": {"_too_deep"},
    "mcec/check/expr.py": {"describe", "infer"},
    "mcec/check/pipelines.py": {"find_origin"},
    "mcec/check/typed.py": {"children"},
    "mcec/codegen/emitter.py": {"group_function", "_label"},
    "mcec/run/interpret.py": {"arrow"},
    "mcec/tools/graph.py": {"draw"},
    "mcec/tools/fmt.py": {"flat", "must_break", "broken", "_needs_term_parens"},
    "mcec/plans/check.py": {"_confine", "_unproved_in", "_describe_typed", "_work"},
    "tests/spec_gen.py": {"construct"},
    "mcec/lsp/analysis.py": {"_own_names"},
    "mcec/lsp/features.py": {"_expression_kind"},
    "mcec/durable/against.py": {"_walk"},
}

#: The functions that must fail when a new kind of type expression is added (same copy).
TYPE_EXPECTED: dict[str, set[str]] = {
    "mcec/syntax/tree.py": {"type_children"},
    "mcec/check/env.py": {"resolve_type"},
    "mcec/tools/fmt.py": {"_type"},
    "mcec/lsp/analysis.py": {"_type_names"},
}

#: The functions that must fail to type-check when a new declaration is added, by file.
DECL_EXPECTED: dict[str, set[str]] = {
    "mcec/syntax/parser.py": {"_roots"},
    "mcec/check/names.py": {"_bind", "_declare", "_sign", "unused_warnings"},
    "mcec/check/typed.py": {"_view"},
    "mcec/codegen/emitter.py": {"_spec_names"},
    "mcec/run/interpret.py": {"_declare"},
    "mcec/tools/fmt.py": {"declaration"},
    "tests/spec_gen.py": {"construct"},
    "mcec/lsp/analysis.py": {"decl_name", "decl_kind", "signature_text", "_decl_names"},
    "mcec/check/signing.py": {"_replayable"},
    "mcec/check/llm.py": {"templated"},
    "mcec/durable/changes.py": {"_key"},
}

#: The most files a construct may cost: the ones mypy names, and the grammar. Issue 30's goal
#: was 12; the language server (issue 34) names and shows every construct, which is two files
#: more for an expression (hover's names and labels) and for a declaration (symbols, replay);
#: `mcec check --against` (issue 44) decides where each expression places a run's effects, one more
#: for an expression (a new construct must say whether runs parked after it can move).
MAX_FILES = 15

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

    name: Name
    span: Span
'''

SCRATCH_TYPED = '''

@dataclass(frozen=True, slots=True)
class TScratch:
    """A typed node no phase knows yet."""

    sig: Sig
    span: Span


@dataclass(frozen=True, slots=True)
class TScratchDecl:
    """A checked declaration no phase knows yet."""

    name: str
    span: Span
'''


def _grow(text: str, alias: str, member: str) -> str:
    """``alias``'s union with ``member`` first, written on one line or over several."""
    grown, count = re.subn(rf"\n{alias}: TypeAlias = (\(\s*)?", lambda m: m.group(0) + f"{member} | ", text, count=1)
    assert count == 1, f"the union {alias} is no longer written as this test expects"
    return grown


def _add_scratch(root: Path, construct: str) -> None:
    """Declare the scratch classes in the copy at ``root`` and add them to the unions of ``construct``."""
    tree = root / "mcec" / "syntax" / "tree.py"
    text = tree.read_text(encoding="utf-8")
    marker = "\n# ---------------------------------------------------------------- type syntax\n"
    assert marker in text, "mcec/syntax/tree.py no longer has its type-syntax section"
    text = text.replace(marker, SCRATCH_SYNTAX + "\n" + marker, 1)
    typed = root / "mcec" / "check" / "typed.py"
    typed_text = typed.read_text(encoding="utf-8")
    marker = "\n\n# ---------------------------------------------------------------- imports\n"
    assert marker in typed_text, "mcec/check/typed.py no longer has its imports section"
    typed_text = typed_text.replace(marker, SCRATCH_TYPED + marker, 1)
    if construct == "expression":
        text = _grow(_grow(text, "Expr", "ScratchExpr"), "TypeExpr", "ScratchType")
        typed_text = _grow(typed_text, "TExpr", "TScratch")
    else:
        text = _grow(text, "Decl", "ScratchDecl")
        typed_text = _grow(typed_text, "TDecl", "TScratchDecl")
    tree.write_text(text, encoding="utf-8")
    typed.write_text(typed_text, encoding="utf-8")


def _enclosing_functions(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.lineno, node.end_lineno or node.lineno, node.name))
    return found


def _failing(root: Path, construct: str, cache: Path) -> tuple[dict[str, set[str]], str]:
    """The functions mypy finds an error in, by file, in a copy with the scratch ``construct``
    (mypy's cache in ``cache``: the session's, for the project's options, tests/conftest.py; the
    libraries come from it warm, and a module with errors is never taken from a cache)."""
    for part in ("mcec", "runtime", "grammar"):
        shutil.copytree(ROOT / part, root / part)
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    (root / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "spec_gen.py", root / "tests" / "spec_gen.py")
    _add_scratch(root, construct)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(cache), "mcec", "runtime/agentmonad", "tests/spec_gen.py"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode != 0, done.stdout
    failing: dict[str, set[str]] = {}
    for line in done.stdout.splitlines():
        found = re.match(r"((?:mcec|tests|runtime)/[\w/]+\.py):(\d+): error:", line)
        if found is None:
            continue
        file, number = found.group(1), int(found.group(2))
        names = [name for first, last, name in _enclosing_functions(root / file) if first <= number <= last]
        failing.setdefault(file, set()).update(names or {"<module>"})
    return failing, done.stdout


@pytest.mark.parametrize("construct", ["expression", "declaration"])
def test_a_scratch_construct_is_a_mypy_error_in_every_phase(construct: str, tmp_path: Path, project_mypy_cache: Path) -> None:
    failing, output = _failing(tmp_path, construct, project_mypy_cache)
    expected: dict[str, set[str]] = {}
    for table in (EXPR_EXPECTED, TYPE_EXPECTED) if construct == "expression" else (DECL_EXPECTED,):
        for file, names in table.items():
            expected.setdefault(file, set()).update(names)
    missing = {file: names - failing.get(file, set()) for file, names in expected.items()}
    assert not any(missing.values()), f"phases that do not fail on a new {construct}: {missing}\n{output}"
    # every file mypy sends a contributor to is one this test knows, so its count is the cost
    unexpected = set(failing) - set(expected)
    assert not unexpected, f"a new {construct} is an error in files this test does not list: {unexpected}\n{output}"
    own = EXPR_EXPECTED if construct == "expression" else DECL_EXPECTED
    assert len(own) + 1 <= MAX_FILES, f"a new {construct} costs {len(own)} files and the grammar"


def test_the_spec_generator_writes_every_construct_it_does_not_excuse() -> None:
    """tests/spec_gen.py writes every kind of expression and declaration but those it names in
    ``NOT_WRITTEN`` (the differential test and the fuzzers cover only what it writes)."""
    from typing import get_args

    from hypothesis import HealthCheck, given, settings

    from mcec import syntax as s
    from mcec.span import SourceFile

    sys.path.insert(0, str(ROOT / "tests"))
    import spec_gen

    seen: set[str] = set()

    @settings(max_examples=150, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(spec_gen.specs())
    def collect(text: str) -> None:
        parsed = s.parse(SourceFile("generated.mce", text))
        assert parsed.module is not None, parsed.diagnostics
        for decl in parsed.module.decls:
            spec_gen.construct(decl)  # raises for a construct it says it does not write
            seen.add(type(decl).__name__)
            roots = [decl.body] if isinstance(decl, s.PipelineDecl) and not isinstance(decl.body, s.Block) else []
            stack: list[s.Expr] = roots
            while stack:
                node = stack.pop()
                spec_gen.construct(node)
                seen.add(type(node).__name__)
                stack.extend(s.expr_children(node))

    collect()
    every = {cls.__name__ for cls in (*get_args(s.Expr), *get_args(s.Decl))}
    assert set(spec_gen.NOT_WRITTEN) <= every, "NOT_WRITTEN names a construct that does not exist"
    assert every - set(spec_gen.NOT_WRITTEN) - seen == set(), "constructs the generator never wrote"
