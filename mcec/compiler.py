"""The compiler facade: text in, diagnostics and (when clean) Python out.

``compile_source`` chains the phases — parse, check, generate — as pure
functions over a :class:`~mcec.span.SourceFile`; nothing here touches files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcec.check import check
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

    @property
    def ok(self) -> bool:
        """True when no error was reported (warnings allowed)."""
        return not any(d.is_error for d in self.diagnostics)


def check_source(source: SourceFile) -> CompileResult:
    """Parse and check, without generating code."""
    return _phases(source, emit=False)


def compile_source(source: SourceFile) -> CompileResult:
    """Parse, check and generate."""
    return _phases(source, emit=True)


def _phases(source: SourceFile, *, emit: bool) -> CompileResult:
    parsed = parse(source)
    diagnostics = list(parsed.diagnostics)
    if parsed.module is None or any(d.is_error for d in diagnostics):
        return CompileResult(source, tuple(diagnostics), None, None)
    checked = check(parsed.module, source)
    diagnostics.extend(checked.diagnostics)
    if checked.program is None:
        return CompileResult(source, tuple(diagnostics), None, None)
    generated = None
    if emit:
        from mcec.codegen import generate

        generated = generate(checked.program)
    return CompileResult(source, tuple(diagnostics), checked.program, generated)
