"""The ``mcec`` command line: the only module of the compiler that does file I/O.

Structure: :func:`build_parser` creates one argparse sub-command per entry of
:data:`COMMANDS`. Each entry is a small ``add_<name>(subparsers)`` function that
declares the command's arguments and sets ``func`` to the function running it,
``run_<name>(args, out) -> int``. To add a command (``compile``, ``build``,
``run``, ``graph``, ``fmt``, ``serve``), write those two functions and append
``add_<name>`` to :data:`COMMANDS`; shared helpers are :func:`load_source`,
:func:`collect_specs`, :func:`front_end` and :class:`Reporter`.

Exit status: 0 no error (warnings allowed), 1 an error was reported, 2 usage or
I/O problem (a missing file is an MCE005 diagnostic), 3 internal compiler error
(a bug, reported in one tidy line instead of a traceback).

Diagnostics go to stdout (they are the output of ``check``); in text mode a
summary line (``error: 2 errors, 1 warning emitted``) follows them. Text is
coloured only when stdout is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from mcec.diagnostics import Diagnostic, error
from mcec.syntax import parse
from mcec.render import DEFAULT_LIMIT, render_json, render_summary, render_text
from mcec.span import SourceFile, Span
from mcec.syntax import Module

__all__ = ["COMMANDS", "Reporter", "build_parser", "collect_specs", "front_end", "load_source", "main"]

#: Exit statuses.
EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """A problem with the command line or the files it names (exit status 2)."""


# ---------------------------------------------------------------- shared helpers


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


def _checker() -> Callable[[Module, SourceFile], Sequence[Diagnostic]] | None:
    """``mcec.check.check`` reduced to its diagnostics, or ``None`` while the checker is not installed."""
    try:
        from mcec.check import check
    except ImportError:
        return None

    def diagnostics_of(module: Module, source: SourceFile) -> Sequence[Diagnostic]:
        return tuple(check(module, source).diagnostics)

    return diagnostics_of


def front_end(source: SourceFile) -> tuple[Module | None, tuple[Diagnostic, ...]]:
    """Parse, then (when parsing succeeded) check one spec.

    The checker (``mcec.check``) is imported lazily; while it does not exist
    yet, only syntax-level diagnostics are reported.
    """

    def run() -> tuple[Module | None, tuple[Diagnostic, ...]]:
        parsed = parse(source)
        diagnostics = list(parsed.diagnostics)
        if parsed.module is not None and not any(d.is_error for d in diagnostics):
            check = _checker()
            if check is not None:
                diagnostics.extend(check(parsed.module, source))
        unique = dict.fromkeys(diagnostics)
        return parsed.module, tuple(sorted(unique, key=Diagnostic.sort_key))

    return run()


@dataclass
class Reporter:
    """Prints diagnostics in the chosen format and remembers what was reported."""

    out: TextIO
    format: str = "text"
    limit: int | None = DEFAULT_LIMIT
    color: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)

    def add(self, diagnostics: Sequence[Diagnostic], source: SourceFile | None = None) -> None:
        """Record diagnostics (and the source they point into)."""
        if source is not None:
            self.sources[source.path] = source
        self.diagnostics.extend(diagnostics)

    @property
    def has_errors(self) -> bool:
        """True when any recorded diagnostic is an error."""
        return any(d.is_error for d in self.diagnostics)

    def flush(self) -> None:
        """Print everything recorded (text: with the limit and the summary line)."""
        if self.format == "json":
            shown = self.diagnostics if self.limit is None else self.diagnostics[: self.limit]
            for diagnostic in shown:
                self.out.write(render_json(diagnostic) + "\n")
        else:
            self.out.write(render_text(self.diagnostics, self.sources, color=self.color, limit=self.limit))
            self.out.write(render_summary(self.diagnostics, color=self.color))
        self.out.flush()


def _color_wanted(out: TextIO) -> bool:
    return out.isatty() and not os.environ.get("NO_COLOR")


def _positive(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


# ---------------------------------------------------------------- mcec check


def add_check(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``mcec check PATH... [--format text|json] [--max-diagnostics N]``."""
    command = subparsers.add_parser(
        "check", help="parse and check specs, reporting diagnostics", description="Parse and check `.mce` specs."
    )
    command.add_argument("paths", nargs="+", metavar="PATH", help="a .mce file, or a folder searched recursively")
    command.add_argument("--format", choices=("text", "json"), default="text", help="diagnostic format")
    command.add_argument(
        "--max-diagnostics",
        type=_positive,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show at most N diagnostics (default {DEFAULT_LIMIT}; 0 = no limit)",
    )
    command.set_defaults(func=run_check)


def run_check(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``mcec check``: report every diagnostic of every spec named."""
    limit = args.max_diagnostics or None
    reporter = Reporter(out, args.format, limit, _color_wanted(out) and args.format == "text")
    files, problems = collect_specs(args.paths)
    io_failed = bool(problems)
    reporter.add(problems)
    for path in files:
        source, problem = load_source(path)
        if problem is not None:
            reporter.add([problem], source)
            io_failed = io_failed or problem.code == "MCE005"
            continue
        assert source is not None
        _module, diagnostics = front_end(source)
        reporter.add(diagnostics, source)
    reporter.flush()
    if io_failed:
        return EXIT_USAGE
    return EXIT_ERRORS if reporter.has_errors else EXIT_OK


# ---------------------------------------------------------------- entry point

#: One ``add_<name>`` per sub-command; each sets ``func`` to its ``run_<name>``.
COMMANDS: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = [add_check]


#: Modules that add more sub-commands; each has a ``COMMANDS`` list of
#: ``add_<name>`` functions. They build on this module, so they are imported
#: lazily, when the parser is built.
COMMAND_MODULES: list[str] = ["mcec.commands", "mcec.fmt", "mcec.graph", "mcec.serve"]


def _code_commands() -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
    """The ``add_<name>`` functions of every module in :data:`COMMAND_MODULES`."""
    import importlib

    adders: list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]] = []
    for name in COMMAND_MODULES:
        adders.extend(importlib.import_module(name).COMMANDS)
    return adders


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with every sub-command of :data:`COMMANDS`."""
    from mcec import __version__

    parser = argparse.ArgumentParser(prog="mcec", description="The Monadic Context Engineering compiler.")
    parser.add_argument("--version", action="version", version=f"mcec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in [*COMMANDS, *_code_commands()]:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mcec`` console script; returns the exit status."""
    out = sys.stdout
    if hasattr(out, "reconfigure"):
        # Never fail on a terminal that cannot show a character of a spec.
        out.reconfigure(errors="backslashreplace")
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        status: int = args.func(args, out)
        return status
    except UsageError as exc:
        print(f"mcec: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`mcec check … | head`): not an error of ours. Point
        # stdout at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERRORS
    except Exception as exc:  # a bug: one tidy line, never a traceback
        message = str(exc) or type(exc).__name__
        print(f"internal compiler error: {type(exc).__name__}: {message}", file=sys.stderr)
        print("this is a bug in mcec; please report it with the spec that triggered it", file=sys.stderr)
        return EXIT_INTERNAL
