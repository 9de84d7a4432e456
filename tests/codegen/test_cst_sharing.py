"""The whitespace of the emitted syntax tree is shared, not built per node (issue 48 item 4).

libcst builds a fresh ``SimpleWhitespace``/``Newline``/``TrailingWhitespace`` for every field of
every node it constructs; for a module of 10,000 declarations that was a million objects, a sixth
of ``mcec compile``'s peak memory. The emitter's nodes take one shared instance per field
(``mcec.codegen.cst.make``): the number of distinct whitespace objects in a module does not grow
with the spec, and the text it renders is the same.
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst

from mcec.codegen import generate, header_lines
from mcec.codegen.emitter import Emitter
from mcec.compiler import check_source
from mcec.span import SourceFile

_WHITESPACE = (cst.SimpleWhitespace, cst.Newline, cst.TrailingWhitespace)


def _declarations(n: int) -> str:
    lines = ["from m import E\nimport m\nstate int\nerror E\nstep a : int -> str ! E = m.a\nfn b : str -> int = m.b\n"]
    for i in range(n):
        lines.append(f"fn f{i} : int -> int = m.f{i}\n")
        lines.append(f"pipeline p{i} : int -> int ! E = a >>= b >>= f{i} >>= f{i};\n")
    return "".join(lines)


def _module(n: int) -> tuple[Any, cst.Module]:
    result = check_source(SourceFile("many.mce", _declarations(n)), index=False)
    assert result.program is not None, result.diagnostics[:3]
    return result.program, Emitter(result.program).module(header_lines(result.program))


def _distinct_whitespace(node: cst.CSTNode, seen: set[int]) -> set[int]:
    if isinstance(node, _WHITESPACE):
        seen.add(id(node))
    for child in node.children:
        _distinct_whitespace(child, seen)
    return seen


def test_the_whitespace_objects_of_a_generated_module_do_not_grow_with_the_spec() -> None:
    _, small = _module(60)  # both past a descriptor built in parts (mcec.codegen.descriptor.CHUNK)
    _, large = _module(100)
    few = len(_distinct_whitespace(small, set()))
    # one per kind of node and field, the same for 60 pipelines as for 100 (were ~40 per pipeline)
    assert len(_distinct_whitespace(large, set())) == few


def test_shared_whitespace_renders_the_code_libcst_renders() -> None:
    program, module = _module(3)
    written = generate(program).code
    assert written.count("async def p") == 3
    # libcst's own rendering of the tree is the module mcec writes (mcec's layout wraps long lines)
    assert ast.dump(ast.parse(written)) == ast.dump(ast.parse(module.code))
