"""Smoke run of the benchmark harness (``python -m benchmarks``) at tiny sizes.

Checks that every benchmark runs and that the summary table and the JSON
carry the expected keys. No wall-clock assertions: the figures of a smoke run
on a busy machine mean nothing. Peers that are not installed are skipped by
the harness itself (``benchmarks.peers.PEERS_AVAILABLE``).
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

run = pytest.importorskip("benchmarks.run")


def test_harness_smoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCEC_BENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results.json"
    results, text = run.quiet_main(["--smoke", "--huge-steps", "0", "--json", str(out)])

    figures = json.loads(out.read_text(encoding="utf-8"))
    for key in ("machine", "level", "seconds", "table", *run.BENCHMARKS):
        assert key in figures, key
    for name in run.BENCHMARKS:
        assert "error" not in figures[name], (name, figures[name])
    assert figures["level"] == "smoke"
    assert {"nproc", "cpu", "python", "python_executable", "python_build", "versions"} <= set(figures["machine"])
    assert figures["frontend"]["python"] == {"version": platform.python_version(), "executable": sys.executable}

    codegen = figures["codegen"]
    assert {"overhead_sync", "overhead_async", "compile"} <= set(codegen)
    assert {"ratio", "us_per_step", "ratio_to_floor"} <= set(codegen["overhead_sync"])

    control = figures["control"]
    assert {"loop", "match_loop", "match_call", "wrap"} <= set(control)
    for key in ("loop", "match_loop", "match_call"):
        assert {"mcec", "floor", "floor_again"} <= set(control[key]["ratio"]), key
        assert control[key]["value"] > 0 and isinstance(control[key]["target_met"], bool), key
    assert {group["kind"] for group in control["wrap"].values()} == {"sync", "async"}
    for group in control["wrap"].values():
        assert {"bare", "retry", "timeout", "bare_again"} <= set(group["ratio"])
        assert set(group["target_met"]) == {"retry", "timeout"}

    frontend = figures["frontend"]["sizes"]
    for size in frontend.values():
        assert {"lark_seconds", "cold_seconds", "recheck_seconds", "cold_over_lark", "recheck_over_cold"} <= set(size)
        assert size["cold_over_lark"] > 0 and size["recheck_over_cold"] > 0

    peers = figures["peers"]
    assert {"chain", "depth", "groups", "versions"} <= set(peers)
    chain = peers["chain"]["sync_10"]
    assert {"floor", "mcec", "agentmonad", "closure"} <= set(chain["us_per_step"])
    for peer, module in (("lcel", "langchain_core"), ("returns", "returns"), ("langgraph", "langgraph")):
        if peers["peers_available"][peer]:
            assert peer in chain["us_per_step"] or peer in chain["errors"], peer
        else:
            assert chain["errors"][peer] == "not installed", peer
    assert peers["depth"]["mcec"]["deepest_ok"] > 0
    assert {"fanout", "failfast"} <= set(peers["groups"])
    assert "mcec_each" in peers["groups"]["failfast"]
    # the groups run at the width the full benchmark uses: a 1,000-branch `par` that did not
    # compile once went unnoticed behind a 20-branch smoke run (issue 36)
    from benchmarks import peers as peers_bench

    assert peers["groups"]["fanout"]["branches"] == peers_bench.FANOUT_BRANCHES == 1_000
    assert {"mcec_each", "mcec_par"} <= set(peers["groups"]["fanout"]["wall_ms"])
    failfast = peers["groups"]["failfast"]
    assert failfast["mcec_par"]["siblings"] == peers_bench.FAILFAST_BRANCHES - 1
    assert failfast["mcec_par"]["failed_with_boom"] and failfast["mcec_each"]["failed_with_boom"]

    check = figures["check"]
    [example] = check["examples"].values()  # the smoke run measures the smallest example
    assert {"check_seconds", "fast_seconds", "without_seconds", "mypy_seconds", "fast_over_without"} <= set(example)
    assert {"with_classes_ms", "without_classes_ms", "class_knowledge_ratio"} <= set(example)
    assert all(example[key] > 0 for key in ("check_seconds", "fast_seconds", "without_seconds", "mypy_seconds"))
    assert check["budget"] == 1.5 and isinstance(check["meets_budget"], bool)
    [scaling] = check["mypy_scaling"].values()  # issue 36: mypy's part of `mcec check`, 10 steps
    assert (scaling["warm_mypy_started"], scaling["warm_mypy_reused"]) == (0, 1)  # not a figure: behaviour
    assert scaling["check_cold_cpu"] > 0 and scaling["mypy_cold_cpu"] > 0

    llm = figures["llm"]["cases"]
    assert set(llm) == {"text_c1", "text_c4", "object_c1", "object_c4"}
    for case in llm.values():
        assert {"ratio", "aa_ratio", "own_work_us_per_call", "direct_us_per_call", "step_us_per_call"} <= set(case)
        assert case["direct_us_per_call"] > 0 and case["step_us_per_call"] > 0

    react = figures["react"]
    assert "mcec" in react and "floor" in react  # they need only the test extra
    for system in ("mcec", "floor", "langgraph", "pydantic_ai"):
        if system in react:
            assert {"wall_ms", "beyond_ms", "cpu_ms_per_turn", "runs"} <= set(react[system]), system
            assert react[system]["runs"] == 1 and react[system]["wall_ms"] > 0
        else:
            assert system in react["conditions"]["not_installed"], system

    plans = figures["plans"]
    assert {"check", "run", "load_average"} <= set(plans)
    assert plans["check"]["round_trip_us"] > 0 and plans["run"]["plans"]["chain_20"]["ratio_per_step"] > 0

    table = figures["table"]
    assert table.startswith("| benchmark | measure | value | target | met |")
    assert "## Summary" in text and table in text
    for label in ("runtime", "frontend", "checker", "codegen #5", "control #21", "peers #6", "check #20", "llm #22", "react #22", "plans #23"):
        assert f"| {label} |" in table, label
    assert "/ Lark LALR parse" in table and "re-check after one edit" in table
    assert "hand-written for loop" in table and "timeout(30) around" in table
    assert "check --fast with / without class knowledge" in table


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


def test_the_fuzzer_runs() -> None:
    """benchmarks/fuzz.py (mutated, generated, random and deep specs through the whole compiler)."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "benchmarks/fuzz.py", "--seconds", "3", "--seed", "1"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout[done.stdout.index("{") :])["findings"] == 0


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
