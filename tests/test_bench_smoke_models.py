"""Smoke run of the benchmarks that talk to a model server or an MCP server: ``llm_bench``,
``react_bench`` and ``plan_bench``, through the harness and alone (see test_bench_smoke.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_smoke_support import smoke

pytest.importorskip("benchmarks.run")


def test_harness_smoke_llm_react_plans(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smoke("models", tmp_path, monkeypatch)


def test_react_bench_smoke_against_both_peers(tmp_path: Path) -> None:
    """benchmarks/react_bench.py with LangGraph and pydantic-ai (the `bench` extra): all four agents
    run the same eight scripted turns (each run is checked inside: the answer, the notes, the
    replies used up). Skipped when the extra is not installed."""
    pytest.importorskip("langgraph")
    pytest.importorskip("pydantic_ai")
    from benchmarks import react_bench

    out = tmp_path / "react.json"
    assert react_bench.main(["--smoke", "--json", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    assert figures["conditions"]["not_installed"] == []
    for system in react_bench.SYSTEMS:
        assert figures[system]["runs"] == 1 and figures[system]["beyond_over_mcec"] is not None, system
    assert isinstance(figures["mcec_smallest_beyond"], bool)


def test_plan_bench_smoke() -> None:
    """benchmarks/plan_bench.py (issue 23) at its smallest: every plan is accepted and runs to
    the compiled pipeline's outcome (checked inside), and every figure is there."""
    pytest.importorskip("openai")
    from benchmarks import plan_bench

    figures = plan_bench.main(smoke=True)
    check = figures["check"]
    assert check["round_trip_us"] > 0 and set(check["plans"]) == set(plan_bench.CHECKED)
    for plan in check["plans"].values():
        assert {"check_us", "check_plan_us", "parse_us", "ratio", "parse_share"} <= set(plan)
        assert plan["check_us"] > 0 and isinstance(plan["target_met"], bool)
    run = figures["run"]
    assert set(run["plans"]) == set(plan_bench.RUNS)
    for plan in run["plans"].values():
        assert {"plan_us_per_step", "compiled_us_per_step", "ratio_per_step", "ratio_per_call"} <= set(plan)
        assert plan["plan_us_per_call"] > 0 and plan["compiled_us_per_call"] > 0
    assert run["spawn_chain_20_over_plan"] > 0
