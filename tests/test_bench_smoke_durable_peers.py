"""Smoke run of ``durable_peers_bench`` (issue 42, item 7): both sides' workloads run durably on
one SQLite folder — mcec's loop and LangGraph's with ``SqliteSaver``, their recorded bytes, the
ask answered on both — so that a benchmark broken by a change on either side fails the suite.
The killed-and-resumed rows need subprocesses (seconds each) and are left to the benchmark
itself. No wall-clock assertions. Skipped without the bench extra (LangGraph's checkpointers)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")
pytest.importorskip("dbos")


def test_durable_peers_workloads_run_on_both_sides(tmp_path: Path) -> None:
    from benchmarks import durable_peers_bench as bench

    spec = bench.write_workload(tmp_path)
    (tmp_path / "db").mkdir()
    sides = bench.Sides(tmp_path / "db", spec, None)
    figures = bench.bench_bytes(sides, 5)
    for pipeline in ("steady", "growing"):
        row = figures[pipeline]
        assert row["mcec_effects"] == 5, row  # one record per step: behaviour, not a figure
        assert row["mcec_bytes"] > 0 and row["langgraph_bytes"] > 0, row
    # each asserts its run waited, then finished; mcec from its compiled module, then from the spec
    assert sides.mcec_ask() > 0 and sides.mcec_ask(spec_form=True) > 0 and sides.lg_ask() > 0
