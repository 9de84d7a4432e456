"""The checker: name resolution and type checking, from syntax to the typed IR.

``check(module, source)`` is the whole API (the language server's re-checks
call it too, with ``signing`` and ``unchecked``). It binds and types the declarations
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
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcec import syntax
from mcec.check.migrations import migration_diagnostics, renames
from mcec.check.names import DeclarationChecker, Declared, unused_warnings
from mcec.check.pipelines import PipelineChecker
from mcec.check.pyindex import PythonIndex
from mcec.check.types import counting_unknowns
from mcec.check.uses import Specs
from mcec.diagnostics import Diagnostic, DiagnosticSink
from mcec.span import SourceFile
from mcec.check.typed import Program, TPipeline, TToolbox

if TYPE_CHECKING:
    from mcec.check.signing import Signing

__all__ = ["CheckResult", "build_program", "check"]


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The checked program (None iff any diagnostic is an error) and every diagnostic, sorted;
    ``unknown_relations`` counts the type questions the checker could not answer (left to mypy);
    ``signing`` is this check's signing of the declarations, for the next check (None unless
    one was asked for)."""

    program: Program | None
    diagnostics: tuple[Diagnostic, ...]
    unknown_relations: int = 0
    signing: Signing | None = None


def check(
    module: syntax.Module,
    source: SourceFile,
    index: PythonIndex | None = None,
    specs: Specs | None = None,
    *,
    signing: Signing | None = None,
    unchecked: Collection[str] = (),
) -> CheckResult:
    """Resolve names and check types of ``module``, parsed from ``source``.

    ``index`` reads the Python modules, classes and functions the spec names
    (:class:`~mcec.check.pyindex.PythonIndex`); with it, relations between
    imported classes get definite answers and implementations are held to
    their declarations. Without it, every such question is left to mypy.

    An import from another spec's generated module reads that spec (§11), with
    an index or without (the spec is found by its path); ``specs`` holds the
    specs already read by the check that reads this one (None: a new set).

    For the language server's re-checks (:mod:`mcec.lsp.incremental`):
    ``signing``, the signing of an earlier check (``Signing()`` for none), is
    replayed for the declarations it holds instead of signing them again, and the
    result's ``signing`` is this check's (:mod:`mcec.check.signing`); the
    pipelines named in ``unchecked`` are declared (their names and signatures)
    but their bodies are not checked, and no program is built then.
    """
    sink = DiagnosticSink()
    with counting_unknowns() as unknowns:
        if signing is None:
            declarations = DeclarationChecker(module, sink, index, specs)
        else:
            from mcec.check.signing import ReplayingChecker  # the language server's only

            declarations = replaying = ReplayingChecker(module, sink, index, specs, signing)
        declared = declarations.run()
        checker = PipelineChecker(declared, declarations, sink, frozenset(unchecked))
        pipelines = checker.run()
    sink.extend(unused_warnings(module, declared))
    sink.extend(migration_diagnostics(module, declared))
    diagnostics = sink.sorted()
    signed = replaying.recorded if signing is not None else None
    if unchecked or any(d.is_error for d in diagnostics):
        return CheckResult(None, diagnostics, unknowns.count, signed)
    program = build_program(module, source, declared, pipelines, checker.toolboxes)
    return CheckResult(program, diagnostics, unknowns.count, signed)


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
        renames=renames(module),
    )
