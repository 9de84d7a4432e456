"""Rendering diagnostics: text layout, labels, tabs, multi-line spans, colour, limit, JSON."""

from __future__ import annotations

import json

from mcec.diagnostics import Label, error, warning
from mcec.render import render_json, render_summary, render_text
from mcec.span import SourceFile

SOURCE = SourceFile("t.mce", "step a : A -> B = m.a\n\tpipeline p : A -> B = a >>= b;\nx\ny\nz\n")
SOURCES = {"t.mce": SOURCE}


def test_primary_and_label_on_other_lines() -> None:
    d = error(
        "MCE010",
        "bind mismatch",
        SOURCE.span(45, 46),
        labels=(Label(SOURCE.span(5, 6), "produces B"),),
        help="fix it",
    )
    assert render_text([d], SOURCES, color=False) == (
        "error[MCE010]: bind mismatch\n"
        " --> t.mce:2:24\n"
        "  |\n"
        "1 | step a : A -> B = m.a\n"
        "  |      - produces B\n"
        "2 |     pipeline p : A -> B = a >>= b;\n"
        "  |" + " " * 27 + "^\n"
        "  = help: fix it\n"
        "\n"
    )


def test_multiline_span_underlines_to_end_of_first_line() -> None:
    d = warning("W001", "never used", SOURCE.span(0, 30))
    text = render_text([d], SOURCES, color=False)
    assert "  | " + "^" * 21 + "\n" in text
    assert text.startswith("warning[W001]: never used\n")


def test_gap_between_lines_is_marked() -> None:
    d = error("MCE003", "declared twice", SOURCE.span(58, 59), labels=(Label(SOURCE.span(0, 4), "first here"),))
    assert "\n...\n" in render_text([d], SOURCES, color=False)


def test_colour_only_when_asked() -> None:
    d = error("MCE001", "bad", SOURCE.span(0, 4))
    assert "\x1b[" not in render_text([d], SOURCES, color=False)
    assert "\x1b[" in render_text([d], SOURCES, color=True)


def test_limit_and_summary() -> None:
    ds = [error("MCE001", f"bad {i}", SOURCE.span(0, 1)) for i in range(5)] + [warning("W001", "w", SOURCE.span(0, 1))]
    text = render_text(ds, SOURCES, color=False, limit=2)
    assert text.count("error[MCE001]") == 2 and text.endswith("… and 4 more\n\n")
    hint = "says what a code means)"
    assert render_summary(ds, color=False) == f"error: 5 errors, 1 warning emitted (`mcec explain MCE001` {hint}\n"
    assert render_summary(ds[-1:], color=False) == f"warning: 1 warning emitted (`mcec explain W001` {hint}\n"
    assert render_summary([], color=False) == ""


def test_json_keys_and_order() -> None:
    d = error("MCE010", "m", SOURCE.span(46, 47), labels=(Label(SOURCE.span(5, 6), "l"),))
    record = json.loads(render_json(d))
    assert list(record) == [
        "severity", "code", "message", "file", "line", "column", "end_line", "end_column", "labels", "help",
    ]
    assert record["labels"] == [{"file": "t.mce", "line": 1, "column": 6, "end_line": 1, "end_column": 7, "message": "l"}]
    assert record["help"] is None and "\n" not in render_json(d)


def test_missing_source_shows_path_only() -> None:
    d = error("MCE005", "cannot read", SourceFile("gone.mce", "").span(0, 0))
    assert render_text([d], {}, color=False) == "error[MCE005]: cannot read\n --> gone.mce\n\n"


def test_label_on_the_primary_span_is_written_after_the_carets() -> None:
    source = SourceFile("s.mce", "pipeline p : A -> B = a >>= b;\n")
    span = source.span(22, 23)
    diagnostic = error("MCE010", "mismatch", span, labels=(Label(source.span(22, 23), "gives A"), Label(source.span(28, 29), "takes B")))
    text = render_text([diagnostic], {"s.mce": source}, color=False)
    assert text == (
        "error[MCE010]: mismatch\n"
        " --> s.mce:1:23\n"
        "  |\n"
        "1 | pipeline p : A -> B = a >>= b;\n"
        "  |                       ^ gives A\n"
        "  |                             - takes B\n"
        "\n"
    )
    # The JSON keeps every label.
    assert [label["message"] for label in json.loads(render_json(diagnostic))["labels"]] == ["gives A", "takes B"]
