"""The compiler facade: text in, diagnostics and (when clean) Python out.

``compile_source`` chains the phases — parse, check, generate — as pure
functions over a :class:`~mcec.span.SourceFile`; nothing here writes files.
The checker reads the source of the Python modules the spec names (never
running them) through a :class:`~mcec.check.pyindex.PythonIndex`: by default
one for the working directory and the folder the spec's package starts in,
which is where Python will import them from when the generated module runs;
pass ``index=`` to read them elsewhere, or ``index=False`` to leave every
question about them to mypy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from mcec.check import check
from mcec.check.pyindex import PythonIndex
from mcec.gcpause import without_cycle_collection
from mcec.diagnostics import Diagnostic
from mcec.syntax import parse
from mcec.span import SourceFile
from mcec.check.typed import Program

if TYPE_CHECKING:  # the code generator (and libcst, ~0.5 s to import) loads only when code is generated
    from mcec.codegen import Generated


@dataclass(frozen=True, slots=True)
class CompileResult:
    """What compiling one spec produced: always diagnostics; a program and code when error-free."""

    source: SourceFile
    diagnostics: tuple[Diagnostic, ...]
    program: Program | None
    generated: Generated | None
    #: Type questions about the spec's Python classes the checker could not answer (mypy's).
    unknown_relations: int = 0

    @property
    def ok(self) -> bool:
        """True when no error was reported (warnings allowed)."""
        return not any(d.is_error for d in self.diagnostics)


#: What the checker reads the spec's Python names with: an index, None for one of the
#: working directory, or False for none (no class knowledge).
IndexChoice = PythonIndex | Literal[False] | None


def check_source(source: SourceFile, *, index: IndexChoice = None) -> CompileResult:
    """Parse and check, without generating code."""
    return _phases(source, emit=False, index=index)


def compile_source(source: SourceFile, *, index: IndexChoice = None) -> CompileResult:
    """Parse, check and generate."""
    return _phases(source, emit=True, index=index)


def _phases(source: SourceFile, *, emit: bool, index: IndexChoice) -> CompileResult:
    # The cycle collector is off for the front end as for generation (mcec.gcpause,
    # which imports nothing heavy): the syntax tree and the checked program stay alive to the
    # end and hold no cycles, yet every full collection walked them all again, which made
    # `check --fast` of 10,000 declarations a quarter slower and grow faster than the spec
    # (issue 36); reference counting frees them afterwards.
    with without_cycle_collection():
        return _run_phases(source, emit=emit, index=index)


def _run_phases(source: SourceFile, *, emit: bool, index: IndexChoice) -> CompileResult:
    parsed = parse(source)
    diagnostics = list(parsed.diagnostics)
    if parsed.module is None or any(d.is_error for d in diagnostics):
        return CompileResult(source, tuple(diagnostics), None, None)
    python = PythonIndex.for_directory(spec=source.path) if index is None else (index or None)
    checked = check(parsed.module, source, python)
    diagnostics.extend(checked.diagnostics)
    if checked.program is None:
        return CompileResult(source, tuple(diagnostics), None, None, checked.unknown_relations)
    generated = None
    if emit:
        from mcec.codegen import generate

        generated = generate(checked.program)
    return CompileResult(source, tuple(diagnostics), checked.program, generated, checked.unknown_relations)
