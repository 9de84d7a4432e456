"""Smoke run of benchmarks/console_bench.py (issue 46) at a small size: it fills a database, serves
it with a real `mcec console`, and fetches every page (timings are the benchmark's, never asserted)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_console_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.console_bench import main

    result = main(["--runs", "30", "--effects", "20", "--rounds", "1", "--real", "4"])
    pages = [row["page"] for row in result["rows"]]
    assert pages[:5] == ["runs page (newest 50)", "runs page, refreshed part", "runs page, status=finished",
                         "runs page, offset 5,000", "run page, 20 effects"]
    assert all(row["server_ms"] > 0 for row in result["rows"])  # every page answered, with its Server-Timing
    by = {row["page"]: row for row in result["rows"]}
    assert by["run page, 20 effects"]["bytes"] > by["open questions (none)"]["bytes"]
    assert "runs page" in capsys.readouterr().out
