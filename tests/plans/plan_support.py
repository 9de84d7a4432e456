"""Shared helpers of the plan tests: the fixture spec compiled (once per process) and loaded."""

from __future__ import annotations

import functools
import types
from pathlib import Path

from mcec.check.typed import Program
from mcec.compiler import compile_source
from mcec.run.runner import load_module
from mcec.span import SourceFile

BOX = Path(__file__).resolve().parent / "planbox" / "box.mce"
EDGES = Path(__file__).resolve().parent / "edgebox"


@functools.cache
def compiled_box() -> types.ModuleType:
    """tests/plans/planbox/box.mce generated and imported in memory (as `mcec run` loads a spec)."""
    result = compile_source(SourceFile(str(BOX), BOX.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return load_module(result.program, result.generated)


@functools.cache
def compiled_program() -> Program:
    """The checked program of box.mce (for the reference interpreter)."""
    result = compile_source(SourceFile(str(BOX), BOX.read_text(encoding="utf-8")))
    assert result.program is not None, result.diagnostics
    return result.program


@functools.cache
def compiled_edge(name: str) -> tuple[types.ModuleType, Program]:
    """tests/plans/edgebox/NAME.mce generated and imported in memory, and its checked program."""
    path = EDGES / f"{name}.mce"
    result = compile_source(SourceFile(str(path), path.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return load_module(result.program, result.generated), result.program
