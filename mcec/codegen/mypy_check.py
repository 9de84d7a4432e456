"""Run mypy on generated modules and report its findings at the `.mce` spans.

mcec settles at build time what it can decide alone (LANGUAGE.md §4); what
depends on the user's Python classes and implementations is left to mypy,
run with ``--strict`` on the generated module. Each finding becomes an MCE100
diagnostic at the spec construct that produced the offending line (via the
source map), with mypy's message — so a step implementation whose signature
disagrees with its declaration is reported at the declaration.

mypy runs in-process through ``mypy.api`` with a cache folder, so rebuilding
unchanged modules is fast. Errors in the user's own modules are not reported
(``--follow-imports=silent``): mcec reports on what it generated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mcec.diagnostics import Diagnostic, error
from mcec.span import Span

if TYPE_CHECKING:  # importing mcec.codegen loads libcst (~0.5 s); `mcec check` never needs it
    from mcec.codegen.sourcemap import SourceMap

#: ``path:line:column: severity: message  [code]`` as mypy prints it.
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?:(?P<column>\d+):)? (?P<severity>error|note): (?P<message>.*)$")

#: Where mcec keeps mypy's cache, relative to the working directory.
CACHE_DIR = Path(".mcec") / "mypy_cache"


@dataclass(frozen=True, slots=True)
class GeneratedFile:
    """A generated module on disk, with the spec it came from and its source map.

    ``temporary``: the file is deleted after the check (the pytest plugin), so
    findings do not point the user at it; they point at the spec alone.
    """

    path: Path
    spec_path: str
    source_map: SourceMap
    temporary: bool = False


def run_mypy(files: Sequence[GeneratedFile], cache_dir: Path = CACHE_DIR) -> tuple[Diagnostic, ...]:
    """Type-check ``files`` with ``mypy --strict``; findings as MCE100 diagnostics."""
    if not files:
        return ()
    from mypy import api  # imported here: mypy is slow to import and only compile needs it

    args = [
        "--strict",
        "--follow-imports=silent",
        "--show-column-numbers",
        "--no-error-summary",
        "--no-pretty",
        "--no-color-output",
        "--hide-error-context",
        "--cache-dir",
        str(cache_dir),
        *[str(f.path) for f in files],
    ]
    stdout, stderr, status = api.run(args)
    diagnostics = _translate(stdout, files)
    if status == 2 or (status != 0 and not diagnostics):
        # mypy itself failed (bad configuration, crash): say so at the first spec
        first = files[0]
        text = (stderr or stdout).strip().splitlines()
        message = text[-1] if text else f"mypy exited with status {status}"
        span = Span.file_start(first.spec_path)
        diagnostics.append(error("MCE100", f"mypy could not check the generated code: {message}", span))
    return tuple(diagnostics)


def _translate(output: str, files: Sequence[GeneratedFile]) -> list[Diagnostic]:
    by_path = {os.path.normpath(str(f.path)): f for f in files}
    diagnostics: list[Diagnostic] = []
    pending: tuple[GeneratedFile, int, str, Span, str | None] | None = None
    notes: list[str] = []

    def flush() -> None:
        if pending is not None:
            generated, line, message, span, hint = pending
            where = [] if generated.temporary else [f"in the generated {generated.path}:{line}"]
            help_text = "; ".join([*([hint] if hint else []), *notes, *where]) or None
            diagnostics.append(error("MCE100", f"mypy: {message}", span, help=help_text))

    for raw in output.splitlines():
        match = _LINE.match(raw.strip())
        if match is None:
            continue
        generated = by_path.get(os.path.normpath(match["path"]))
        if generated is None:
            continue
        line = int(match["line"])
        if match["severity"] == "note":
            if pending is not None:
                notes.append(match["message"].strip())
            continue
        flush()
        notes = []
        entry = generated.source_map.entry(line)
        span = entry.span if entry is not None else Span.file_start(generated.spec_path)
        pending = (generated, line, match["message"].strip(), span, entry.hint if entry is not None else None)
    flush()
    return diagnostics
