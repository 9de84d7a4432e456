"""``--durable`` for ``mcec check`` and ``mcec compile``: the build-time check of durable runs.

A durable run (docs/language.md §13) records every effect's value and error,
and the state, as JSON; :func:`mcec.check.durable.check_durable` proves before
any run that each of those types can be recorded (MCE033). With ``--durable``
the two commands ask it for every pipeline of each clean spec, or for those
named with ``--pipeline``. It imports the spec's classes (pydantic needs them),
as ``mcec run`` does; the rest of ``check`` only reads their source.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcec.check.durable import check_durable
from mcec.check.pyindex import package_root
from mcec.check.typed import Program
from mcec.diagnostics import Diagnostic, error
from mcec.span import Span

__all__ = ["add_durable_arguments", "durable_diagnostics"]


def add_durable_arguments(command: argparse.ArgumentParser) -> None:
    """``--durable`` and ``--pipeline NAME`` (repeatable)."""
    command.add_argument(
        "--durable",
        action="store_true",
        help="also check that a durable run of each pipeline can record every value it gives as JSON "
        "(MCE033; imports the spec's Python classes)",
    )
    command.add_argument(
        "--pipeline",
        action="append",
        default=None,
        metavar="NAME",
        help="with --durable: check only this pipeline (repeatable; default: every pipeline)",
    )


def durable_diagnostics(spec: Path, program: Program, pipelines: list[str] | None) -> list[Diagnostic]:
    """MCE033 for each pipeline of ``program`` (or each of ``pipelines`` it has; MCE002 for a name
    it has not), with the spec's modules made importable as a run imports them."""
    import sys

    for root in (str(Path.cwd()), str(package_root(spec))):
        if root not in sys.path:
            sys.path.insert(0, root)
    declared = [p.name for p in program.pipelines]
    found: list[Diagnostic] = []
    for name in pipelines if pipelines is not None else declared:
        if name not in declared:
            if pipelines is not None:
                known = ", ".join(f"`{p}`" for p in declared) or "none"
                found.append(error("MCE002", f"no pipeline `{name}` in this spec (its pipelines: {known})", Span.file_start(str(spec))))
            continue
        found.extend(check_durable(program, name))
    return list(dict.fromkeys(found))
