"""The benchmark harness's smoke run (``python -m benchmarks --smoke``), shared by the
tests/test_bench_smoke*.py files: each runs a group of the benchmarks through the harness
and checks their figures, so that ``--dist loadfile`` spreads the groups over the workers
(one run of all of them was the slowest test of the suite). :data:`GROUPS` covers every
benchmark of the harness exactly once (tests/test_bench_smoke.py holds that).

No wall-clock assertions: the figures of a smoke run on a busy machine mean nothing. Peers
that are not installed are skipped by the harness itself (``benchmarks.peers.PEERS_AVAILABLE``).
"""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: The benchmarks each smoke test file runs (together: every benchmark of the harness).
GROUPS: dict[str, tuple[str, ...]] = {
    "front": ("runtime", "frontend", "checker", "scaling", "codegen", "fn", "control", "events", "instrument"),
    "peers": ("peers",),
    "check": ("check",),
    "models": ("llm", "stream", "react", "plans"),
    "lsp": ("lsp",),
    "durable": ("durable",),
}

#: Below this width a recursion as deep as a shape is wide can still pass (Python's limit is
#: 1,000 frames, and the 500-branch `par` of issue 36 crashed at about 500 levels).
WIDE = 2_000


def _codegen(figures: dict[str, Any]) -> None:
    codegen = figures["codegen"]
    assert {"overhead_sync", "overhead_async", "compile"} <= set(codegen)
    assert {"ratio", "us_per_step", "ratio_to_floor"} <= set(codegen["overhead_sync"])
    # one chain past Python's 1,000 frames went through every phase of the compiler (issue 36)
    assert max(int(size) for size in codegen["compile"]["sizes"]) >= WIDE, list(codegen["compile"]["sizes"])


def _control(figures: dict[str, Any]) -> None:
    control = figures["control"]
    assert {"loop", "match_loop", "match_call", "wrap"} <= set(control)
    for key in ("loop", "match_loop", "match_call"):
        assert {"mcec", "floor", "floor_again"} <= set(control[key]["ratio"]), key
        assert control[key]["value"] > 0 and isinstance(control[key]["target_met"], bool), key
    assert {group["kind"] for group in control["wrap"].values()} == {"sync", "async"}
    for group in control["wrap"].values():
        assert {"bare", "retry", "timeout", "bare_again"} <= set(group["ratio"])
        assert set(group["target_met"]) == {"retry", "timeout"}


def _frontend(figures: dict[str, Any]) -> None:
    assert figures["frontend"]["python"] == {"version": platform.python_version(), "executable": sys.executable}
    frontend = figures["frontend"]["sizes"]
    for size in frontend.values():
        assert {"lark_seconds", "cold_seconds", "recheck_seconds", "cold_over_lark", "recheck_over_cold"} <= set(size)
        assert size["cold_over_lark"] > 0 and size["recheck_over_cold"] > 0


def _peers(figures: dict[str, Any]) -> None:
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


def _check(figures: dict[str, Any]) -> None:
    check = figures["check"]
    [example] = check["examples"].values()  # the smoke run measures the smallest example
    assert {"check_seconds", "fast_seconds", "without_seconds", "mypy_seconds", "fast_over_without"} <= set(example)
    assert {"with_classes_ms", "without_classes_ms", "class_knowledge_ratio"} <= set(example)
    assert all(example[key] > 0 for key in ("check_seconds", "fast_seconds", "without_seconds", "mypy_seconds"))
    assert check["budget"] == 1.5 and isinstance(check["meets_budget"], bool)
    [scaling] = check["mypy_scaling"].values()  # issue 36: mypy's part of `mcec check`, 10 steps
    assert (scaling["warm_mypy_started"], scaling["warm_mypy_reused"]) == (0, 1)  # not a figure: behaviour
    assert scaling["check_cold_cpu"] > 0 and scaling["mypy_cold_cpu"] > 0


def _llm(figures: dict[str, Any]) -> None:
    llm = figures["llm"]["cases"]
    assert set(llm) == {"text_c1", "text_c4", "object_c1", "object_c4"}
    for case in llm.values():
        assert {"ratio", "aa_ratio", "own_work_us_per_call", "direct_us_per_call", "step_us_per_call"} <= set(case)
        assert case["direct_us_per_call"] > 0 and case["step_us_per_call"] > 0


def _stream(figures: dict[str, Any]) -> None:
    stream = figures["stream"]["cases"]
    assert set(stream) == {"text", "object"}
    for case in stream.values():
        assert {"ratio", "aa_ratio", "direct_first_ms", "stream_llm_first_ms", "whole_ratio"} <= set(case)
        assert case["direct_first_ms"] > 0 and case["stream_llm_first_ms"] > 0 and isinstance(case["target_met"], bool)


def _react(figures: dict[str, Any]) -> None:
    react = figures["react"]
    assert "mcec" in react and "floor" in react  # they need only the test extra
    for system in ("mcec", "floor", "langgraph", "pydantic_ai"):
        if system in react:
            assert {"wall_ms", "beyond_ms", "cpu_ms_per_turn", "runs"} <= set(react[system]), system
            assert react[system]["runs"] == 1 and react[system]["wall_ms"] > 0
        else:
            assert system in react["conditions"]["not_installed"], system


def _plans(figures: dict[str, Any]) -> None:
    plans = figures["plans"]
    assert {"check", "run", "load_average"} <= set(plans)
    assert plans["check"]["round_trip_us"] > 0 and plans["run"]["plans"]["chain_20"]["ratio_per_step"] > 0


def _checker(figures: dict[str, Any]) -> None:
    """Every shape of the checker's (a chain, a wide `par`, deep nesting) ran at least :data:`WIDE` wide."""
    for shape, rows in figures["checker"].items():
        assert max(int(size) for size in rows["sizes"]) >= WIDE, (shape, list(rows["sizes"]))


def _lsp(figures: dict[str, Any]) -> None:
    lsp = figures["lsp"]["specs"]
    assert {"research.mce", "decls.mce", "mixed.mce"} <= set(lsp)
    for spec in lsp.values():
        assert spec["cold_seconds"] > 0 and spec["recheck_over_cold"] > 0 and spec["keystroke_ms"] > 0
    assert lsp["decls.mce"]["reused"] and lsp["decls.mce"]["lines"] > 1_000


def _events(figures: dict[str, Any]) -> None:
    events = figures["events"]
    chain, each = events["chain"], events["each"]
    assert {"run", "interpret", "run_again", "list_sink", "otel_in_memory"} <= set(chain["us_per_step"])
    assert {"run_group", "loop_alone", "run_group_again"} <= set(each["us_per_element"])
    assert isinstance(chain["target_met"], bool) and isinstance(each["target_met"], bool)


def _instrument(figures: dict[str, Any]) -> None:
    instrumented = figures["instrument"]
    assert {"bare", "instrumented", "bare_again"} <= set(instrumented["us_per_call"])
    assert isinstance(instrumented["target_met"], bool)


def _durable(figures: dict[str, Any]) -> None:
    durable = figures["durable"]
    step = durable["step"]
    assert step["mcec_ms_per_step"] != 0 and step["dbos_ms_per_step"] != 0 and isinstance(step["target_met"], bool)
    for pipeline in ("steady", "growing"):
        for turns, row in durable["bytes"][pipeline]["turns"].items():
            assert row["effects"] == int(turns), (pipeline, turns, row)  # one record per effect: not a figure, behaviour
            assert row["bytes"] > 0
    nondurable = durable["nondurable"]["this"]
    assert nondurable["interpreted_us"] > 0 and nondurable["compiled_us"] > 0


def _fn(figures: dict[str, Any]) -> None:
    fn = figures["fn"]
    assert {"hand", "mcec", "hand_again"} <= set(fn["fn"]["ratio"]) and {"floor", "mcec", "floor_again"} <= set(fn["step"]["ratio"])
    assert isinstance(fn["fn_target_met"], bool) and isinstance(fn["step_target_met"], bool)


def _none(figures: dict[str, Any]) -> None:
    """No figure-level check beyond the harness's own (the benchmark ran without an error)."""


#: Per benchmark: its label in the summary table, the check of its figures, and phrases its rows must show.
CHECKS: dict[str, tuple[str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = {
    "runtime": ("runtime", _none, ()),
    "frontend": ("frontend", _frontend, ("/ Lark LALR parse", "re-check after one edit")),
    "checker": ("checker", _checker, ()),
    "scaling": ("scaling #36", _none, ()),
    "codegen": ("codegen #5", _codegen, ()),
    "fn": ("fn #48", _fn, ("fns / hand-written value = inc(value)",)),
    "control": ("control #21", _control, ("hand-written for loop", "timeout(30) around")),
    "events": ("events #33", _events, ("no sink: per step / before events", "OTel spans, in-memory exporter")),
    "instrument": ("instrument #48", _instrument, ("instrument() with the SDK not configured",)),
    "peers": ("peers #6", _peers, ()),
    "check": ("check #20", _check, ("check --fast with / without class knowledge",)),
    "llm": ("llm #22", _llm, ()),
    "stream": ("stream #33", _stream, ("time to first token, stream llm",)),
    "react": ("react #22", _react, ()),
    "plans": ("plans #23", _plans, ()),
    "lsp": ("lsp #34", _lsp, ()),
    "durable": ("durable #31", _durable, ("durable step / bare DBOS step", "recorded bytes per effect")),
}


def smoke(group: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the harness at ``--smoke`` sizes on ``GROUPS[group]`` and check the JSON and the table."""
    from benchmarks import run

    names = GROUPS[group]
    monkeypatch.setenv("MCEC_BENCH_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results.json"
    results, text = run.quiet_main(["--smoke", "--huge-steps", "0", "--only", ",".join(names), "--json", str(out)])

    figures = json.loads(out.read_text(encoding="utf-8"))
    for key in ("machine", "level", "seconds", "table", *names):
        assert key in figures, key
    for name in names:
        assert "error" not in figures[name], (name, figures[name])
    assert figures["level"] == "smoke"
    assert {"nproc", "cpu", "python", "python_executable", "python_build", "versions"} <= set(figures["machine"])

    table = figures["table"]
    assert table.startswith("| benchmark | measure | value | target | met |")
    assert "## Summary" in text and table in text
    for name in names:
        label, check, phrases = CHECKS[name]
        check(figures)
        assert f"| {label} |" in table, label
        for phrase in phrases:
            assert phrase in table, (name, phrase)
