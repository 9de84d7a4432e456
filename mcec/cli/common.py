"""What every command shares: reading specs, finding them below folders, and printing diagnostics.

The commands (``mcec.cli.check``, ``compile``, ``fmt``, ``graph``, ``serve``) do
their file I/O through these helpers and report through :class:`Reporter`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from mcec.diagnostics import Diagnostic, error
from mcec.render import DEFAULT_LIMIT, render_json, render_summary, render_text
from mcec.span import SourceFile, Span

__all__ = [
    "add_otel_option",
    "with_otel",
    "EXIT_ERRORS",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "Reporter",
    "Subparsers",
    "UsageError",
    "collect_specs",
    "color_wanted",
    "load_source",
    "non_negative",
]

#: Exit statuses.
EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3

#: What ``add_<name>`` functions receive to add their sub-command.
Subparsers = argparse._SubParsersAction  # noqa: SLF001 (argparse's own type for add_subparsers())


class UsageError(Exception):
    """A problem with the command line or the files it names (exit status 2)."""


def _file_span(path: str) -> Span:
    """A span for a whole file we could not read (no excerpt is shown)."""
    return Span.file_start(path)


def load_source(path: Path) -> tuple[SourceFile | None, Diagnostic | None]:
    """Read a spec as UTF-8.

    Returns ``(source, None)``; ``(None, MCE005)`` when the file cannot be read;
    or ``(source, MCE001)`` when it is not valid UTF-8 (the source then has the
    bad bytes replaced, so the diagnostic can show the line).
    """
    name = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return None, error("MCE005", f"cannot read `{name}`: {reason}", _file_span(name))
    try:
        return SourceFile(name, data.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        source = SourceFile(name, data.decode("utf-8", errors="replace"))
        good = len(data[: exc.start].decode("utf-8"))
        return source, error(
            "MCE001",
            f"the file is not valid UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded",
            source.span(good, good + 1),
            help="save the spec as UTF-8",
        )


def collect_specs(paths: Sequence[str]) -> tuple[list[Path], list[Diagnostic]]:
    """The files to process: each file named, and every ``*.mce`` below each folder (sorted).

    A path that does not exist is an MCE005 diagnostic.
    """
    files: list[Path] = []
    problems: list[Diagnostic] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*.mce") if p.is_file()))
        elif path.exists():
            files.append(path)
        else:
            problems.append(error("MCE005", f"no such file or folder: `{raw}`", _file_span(raw)))
    return files, problems


@dataclass
class Reporter:
    """Prints diagnostics in the chosen format and remembers what was reported."""

    out: TextIO
    format: str = "text"
    limit: int | None = DEFAULT_LIMIT
    color: bool = False
    #: Show each diagnostic's note too (``--verbose``).
    verbose: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)
    _seen: set[Diagnostic] = field(default_factory=set, repr=False)

    def add(self, diagnostics: Sequence[Diagnostic], source: SourceFile | None = None) -> None:
        """Record diagnostics (and the source they point into)."""
        if source is not None:
            self.sources[source.path] = source
        # A spec's errors come with each spec that uses it (§11): each is reported once.
        for diagnostic in diagnostics:
            if diagnostic not in self._seen:
                self._seen.add(diagnostic)
                self.diagnostics.append(diagnostic)

    @property
    def has_errors(self) -> bool:
        """True when any recorded diagnostic is an error."""
        return any(d.is_error for d in self.diagnostics)

    def flush(self, summary: dict[str, object] | None = None) -> None:
        """Print everything recorded (text: with the limit and the summary line; JSON: one object
        per diagnostic, then, when ``summary`` is given, ``{"summary": {...}}`` with the counts)."""
        if self.format == "json":
            shown = self.diagnostics if self.limit is None else self.diagnostics[: self.limit]
            for diagnostic in shown:
                self.out.write(render_json(diagnostic) + "\n")
            if summary is not None:
                errors = sum(1 for d in self.diagnostics if d.is_error)
                counts = {"errors": errors, "warnings": len(self.diagnostics) - errors, **summary}
                self.out.write(json.dumps({"summary": counts}) + "\n")
        else:
            self._read_other_sources()
            self.out.write(
                render_text(self.diagnostics, self.sources, color=self.color, limit=self.limit, verbose=self.verbose)
            )
            self.out.write(render_summary(self.diagnostics, color=self.color))
        self.out.flush()


    def _read_other_sources(self) -> None:
        """Read the files of diagnostics whose source was not given (another spec's errors,
        reported through a spec that uses it), so that they show their lines too."""
        paths = {d.span.path for d in self.diagnostics} | {l.span.path for d in self.diagnostics for l in d.labels}
        for path in sorted(paths - set(self.sources)):
            if path.endswith(".mce") and Path(path).is_file():
                source, problem = load_source(Path(path))
                if source is not None and problem is None:
                    self.sources[path] = source


def color_wanted(out: TextIO) -> bool:
    """True when ``out`` is a terminal and ``NO_COLOR`` is unset."""
    return out.isatty() and not os.environ.get("NO_COLOR")


def non_negative(text: str) -> int:
    """An argparse type: an int that is 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def add_otel_option(command: argparse.ArgumentParser) -> None:
    """``--otel``, as ``mcec run`` and ``mcec worker`` take it (``mcec.run.telemetry``)."""
    command.add_argument(
        "--otel",
        action="store_true",
        help="export the runs' OpenTelemetry spans as the standard OTEL_* environment variables say "
        "(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, …; needs mcec[trace])",
    )


def with_otel(command: str, args: argparse.Namespace, body: Callable[[], int]) -> int:
    """``body()``, with the process's runs exported as spans when ``args.otel`` (``--otel``): a
    missing package or a bad ``OTEL_*`` value is one line on stderr and exit status 2."""
    if not args.otel:
        return body()
    from mcec.run import telemetry

    try:
        provider = telemetry.start()
    except telemetry.TelemetryError as exc:
        print(f"mcec {command}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return body()
    finally:
        telemetry.shutdown(provider)
