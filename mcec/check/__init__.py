"""The checker: name resolution and type checking, from syntax to the typed IR.

``check(module, source)`` is the whole API. It binds and types the declarations
(:mod:`mcec.check.names`, over the scopes of :mod:`mcec.check.env`), infers every
pipeline body callees first (:mod:`mcec.check.pipelines`, :mod:`mcec.check.expr`),
then warns about unused declarations. It never stops at the first problem: all
diagnostics are collected (their prose is in :mod:`mcec.check.report`) and
returned sorted, and a :class:`~mcec.check.typed.Program` is built only when none of
them is an error.

Checking recurses over nested expressions (chains are flat and iterate); the
parser bounds nesting (:data:`mcec.syntax.MAX_DEPTH`), so the recursion stays
well within Python's default limit.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mcec import syntax
from mcec.check.names import DeclarationChecker, Declared, unused_warnings
from mcec.check.pipelines import PipelineChecker
from mcec.check.pyindex import PythonIndex
from mcec.check.types import counting_unknowns
from mcec.check.uses import Specs
from mcec.diagnostics import Diagnostic, DiagnosticSink
from mcec.span import SourceFile
from mcec.check.typed import Program, TPipeline, TToolbox

__all__ = ["CheckResult", "build_program", "check"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The checked program (None iff any diagnostic is an error) and every diagnostic, sorted;
    ``unknown_relations`` counts the type questions the checker could not answer (left to mypy)."""

    program: Program | None
    diagnostics: tuple[Diagnostic, ...]
    unknown_relations: int = 0


def check(
    module: syntax.Module, source: SourceFile, index: PythonIndex | None = None, specs: Specs | None = None
) -> CheckResult:
    """Resolve names and check types of ``module``, parsed from ``source``.

    ``index`` reads the Python modules, classes and functions the spec names
    (:class:`~mcec.check.pyindex.PythonIndex`); with it, relations between
    imported classes get definite answers and implementations are held to
    their declarations. Without it, every such question is left to mypy.

    An import from another spec's generated module reads that spec (§11), with
    an index or without (the spec is found by its path); ``specs`` holds the
    specs already read by the check that reads this one (None: a new set).
    """
    sink = DiagnosticSink()
    with counting_unknowns() as unknowns:
        declarations = DeclarationChecker(module, sink, index, specs)
        declared = declarations.run()
        checker = PipelineChecker(declared, declarations, sink)
        pipelines = checker.run()
    sink.extend(unused_warnings(module, declared))
    diagnostics = sink.sorted()
    if any(d.is_error for d in diagnostics):
        return CheckResult(None, diagnostics, unknowns.count)
    program = build_program(module, source, declared, pipelines, checker.toolboxes)
    return CheckResult(program, diagnostics, unknowns.count)


def build_program(
    module: syntax.Module,
    source: SourceFile,
    declared: Declared,
    pipelines: list[TPipeline],
    toolboxes: list[TToolbox],
) -> Program:
    """The :class:`~mcec.check.typed.Program` of a module that checked without errors."""
    return Program(
        path=module.path,
        source_sha256=hashlib.sha256(source.text.encode("utf-8")).hexdigest(),
        state=declared.state,
        merge=declared.merge,
        decls=(
            *declared.imports,
            *declared.steps.values(),
            *declared.fns.values(),
            *declared.servers.values(),
            *declared.tools.values(),
            *declared.models.values(),
            *declared.llms.values(),
            *declared.asks.values(),
            *declared.uses.values(),
            *toolboxes,
            *pipelines,  # callees first
        ),
        source=source.text,
    )
