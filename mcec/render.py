"""Diagnostics to text (rustc/Gleam style) and to JSON lines.

Pure functions: no I/O and no global state. ``mcec.cli`` decides where the
text goes and whether it is coloured.

A rendered diagnostic looks like this::

    error[MCE001]: expected `;` after the pipeline body, found `pipeline`
     --> spec.mce:2:1
      |
    1 | pipeline p : A -> B = a >>= b
      |                             - after this
    2 | pipeline q : A -> B = a;
      | ^^^^^^^^
      |
      = help: …

The primary span is underlined with ``^``, secondary labels with ``-`` and
their message; a label on exactly the primary span has its message written
after the ``^`` instead (like rustc), so no text is underlined twice. A span running over several lines is underlined to the end of
its first line. Tabs are expanded to :data:`TAB_WIDTH` columns for both the
source line and the underline, so carets stay aligned. Very long lines are
shown as a window around the underline.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from mcec.diagnostics import Diagnostic, Severity
from mcec.span import SourceFile, Span

__all__ = ["DEFAULT_LIMIT", "TAB_WIDTH", "render_json", "render_summary", "render_text"]

#: How many diagnostics :func:`render_text` shows before "… and K more".
DEFAULT_LIMIT: Final = 50
#: Columns per tab stop when showing source lines.
TAB_WIDTH: Final = 4
#: Lines longer than this (after tab expansion) are shown as a window around the underline.
_MAX_LINE: Final = 200
_WINDOW_BEFORE: Final = 60

_RESET: Final = "\x1b[0m"
_BOLD: Final = "\x1b[1m"
_COLOURS: Final = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m"}
_BLUE: Final = "\x1b[1;34m"
_CYAN: Final = "\x1b[1;36m"


@dataclass(frozen=True, slots=True)
class _Style:
    """ANSI sequences, or empty strings when colour is off; ``verbose`` also shows notes."""

    on: bool
    verbose: bool = False

    def paint(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.on and text else text


@dataclass(frozen=True, slots=True)
class _Mark:
    """An underline to draw under one source line."""

    start_column: int  # 1-based, in code points of the raw line
    end_column: int  # exclusive
    char: str
    message: str
    primary: bool


def _display_column(raw: str, column: int) -> int:
    """0-based display column of the 1-based code-point ``column`` of ``raw``, tabs expanded."""
    width = 0
    for char in raw[: max(0, column - 1)]:
        width = (width // TAB_WIDTH + 1) * TAB_WIDTH if char == "\t" else width + 1
    return width + max(0, column - 1 - len(raw))


def _marks_for(span: Span, line: int, source: SourceFile, char: str, message: str, primary: bool) -> _Mark:
    raw_length = len(source.line_text(line))
    end = span.end_column if span.end_line == line else raw_length + 1
    end = max(end, span.column + 1)  # a zero-width span (end of file) still gets one mark
    return _Mark(span.column, end, char, message, primary)


def _same_place(first: Span, second: Span) -> bool:
    """True when two spans cover the same text of the same file."""
    return (first.path, first.start, first.end) == (second.path, second.start, second.end)


def _excerpt(diagnostic: Diagnostic, source: SourceFile, style: _Style) -> list[str]:
    """The gutter, source lines and underlines of one diagnostic."""
    by_line: dict[int, list[_Mark]] = {}
    primary = diagnostic.span
    # A label on exactly the primary span is said next to the carets (`^^^ message`), as rustc
    # does, rather than underlining the same text twice.
    on_primary = [label.message for label in diagnostic.labels if _same_place(label.span, primary)]
    primary_mark = _marks_for(primary, primary.line, source, "^", "; ".join(on_primary), True)
    by_line.setdefault(primary.line, []).append(primary_mark)
    for label in diagnostic.labels:
        if label.span.path != primary.path or _same_place(label.span, primary):
            continue  # a label in another file has no line here; its location is in the JSON
        mark = _marks_for(label.span, label.span.line, source, "-", label.message, False)
        by_line.setdefault(label.span.line, []).append(mark)
    width = len(str(max(by_line)))
    gutter = style.paint(_BLUE, " " * width + " |")
    out = [gutter]
    previous: int | None = None
    for line in sorted(by_line):
        if previous is not None and line > previous + 1:
            out.append(style.paint(_BLUE, "..."))
        previous = line
        raw = source.line_text(line)
        shown = raw.expandtabs(TAB_WIDTH)
        shift = 0
        if len(shown) > _MAX_LINE:
            first = min(_display_column(raw, mark.start_column) for mark in by_line[line])
            shift = max(0, first - _WINDOW_BEFORE)
            shown = ("…" if shift else "") + shown[shift : shift + _MAX_LINE] + "…"
            shift -= 1 if shift else 0  # the leading "…" takes one column
        number = style.paint(_BLUE, f"{line:>{width}} |")
        out.append(f"{number} {shown}".rstrip())
        for mark in sorted(by_line[line], key=lambda m: (not m.primary, m.start_column)):
            begin = _display_column(raw, mark.start_column) - shift
            end = _display_column(raw, mark.end_column) - shift
            begin = max(0, begin)
            length = max(1, min(end, _MAX_LINE + 1) - begin)
            colour = _COLOURS[diagnostic.severity] if mark.primary else _BLUE
            underline = style.paint(colour, mark.char * length)
            text = f" {style.paint(colour, mark.message)}" if mark.message else ""
            out.append(f"{gutter} {' ' * begin}{underline}{text}")
    return out


def _render_one(diagnostic: Diagnostic, sources: Mapping[str, SourceFile], style: _Style) -> str:
    span = diagnostic.span
    head = style.paint(_COLOURS[diagnostic.severity], f"{diagnostic.severity.value}[{diagnostic.code}]")
    lines = [f"{head}{style.paint(_BOLD, ': ' + diagnostic.message)}"]
    # a file not given (another spec's error, reported through one that uses it) is the span's own
    source = sources.get(span.path) or (span.source if span.source.text else None)
    arrow = style.paint(_BLUE, "-->")
    if source is None:
        lines.append(f" {arrow} {span.path}")
    else:
        lines.append(f" {arrow} {span}")
        lines.extend(_excerpt(diagnostic, source, style))
    for label in diagnostic.labels:
        if label.span.path != span.path:
            lines.append(f" {arrow} {label.span}: {label.message}")
    if diagnostic.help:
        lines.append(f"  = {style.paint(_CYAN, 'help')}: {diagnostic.help}")
    if diagnostic.note and style.verbose:
        lines.append(f"  = {style.paint(_CYAN, 'note')}: {diagnostic.note}")
    return "\n".join(lines) + "\n\n"


def render_text(
    diagnostics: Iterable[Diagnostic],
    sources: Mapping[str, SourceFile],
    *,
    color: bool,
    limit: int | None = DEFAULT_LIMIT,
    verbose: bool = False,
) -> str:
    """Render diagnostics for people, each followed by a blank line (``verbose``: with their notes).

    ``sources`` maps a span's path to its file; a diagnostic whose file is not
    there is shown with its span's own text (an unreadable file, whose span has
    none, is shown without an excerpt). After
    ``limit`` diagnostics (``None``: no limit) one line says how many more there
    were. Colour uses ANSI escapes and is off unless ``color`` is true.
    """
    items = list(diagnostics)
    style = _Style(color, verbose)
    shown = items if limit is None else items[: max(0, limit)]
    text = "".join(_render_one(d, sources, style) for d in shown)
    hidden = len(items) - len(shown)
    if hidden > 0:
        text += f"… and {hidden} more\n\n"
    return text


def render_summary(diagnostics: Iterable[Diagnostic], *, color: bool) -> str:
    """``error: 2 errors, 1 warning emitted (`mcec explain MCE013` says what a code means)`` (or
    ``warning: …``, naming the first code of that severity); empty when there is nothing to say."""
    items = list(diagnostics)
    errors = sum(1 for d in items if d.is_error)
    warnings = len(items) - errors
    if not items:
        return ""
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        parts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    severity = Severity.ERROR if errors else Severity.WARNING
    head = _Style(color).paint(_COLOURS[severity], severity.value)
    first = next(d for d in items if d.severity is severity)
    return f"{head}: {', '.join(parts)} emitted (`mcec explain {first.code}` says what a code means)\n"


def render_json(diagnostic: Diagnostic) -> str:
    """One diagnostic as one line of JSON, keys in the order docs/language.md §8 lists them."""
    span = diagnostic.span
    record = {
        "severity": diagnostic.severity.value,
        "code": diagnostic.code,
        "message": diagnostic.message,
        "file": span.path,
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
        "labels": [
            {
                "file": label.span.path,
                "line": label.span.line,
                "column": label.span.column,
                "end_line": label.span.end_line,
                "end_column": label.span.end_column,
                "message": label.message,
            }
            for label in diagnostic.labels
        ],
        "help": diagnostic.help,
    }
    if diagnostic.note is not None:
        record["note"] = diagnostic.note
    return json.dumps(record, ensure_ascii=False)
