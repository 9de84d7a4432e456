"""The benchmark harness: every benchmark of the project, one table, one JSON file.

    python -m benchmarks [--quick] [--json PATH] [--only NAMES] [--huge-steps N] [--fresh]

Runs ``runtime_bench``, ``frontend_bench``, ``checker_bench``, ``scaling_bench`` (issue 36), ``codegen_bench``
(issue #5), ``fn_bench`` (issue 48), ``control_bench`` (issue 21), ``peers`` (issue #6), ``check_bench`` (issue 20), ``llm_bench``,
``react_bench`` (issue 22), ``plan_bench`` (issue 23), ``lsp_bench`` (issue 34), ``events_bench`` and ``stream_bench`` (issue 33), ``instrument_bench`` (issue 48), prints each one's detail, then ONE
markdown summary table with a target and ✓/✗ column, and writes every figure
to ``benchmarks/results.json`` (or ``--json PATH``). A benchmark that fails is
reported as an error row; the others still run.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BENCHMARKS = (
    "runtime", "frontend", "checker", "scaling", "codegen", "fn", "control", "events", "instrument", "peers", "check", "llm", "stream",
    "react", "plans", "lsp", "durable",
)
Row = tuple[str, str, str, str, str]  # benchmark, measure, value, target, verdict
#: The checker's sizes in the smoke run (the test suite's). The largest is wide enough that a
#: recursion as deep as a shape is wide fails there (mcec never raises Python's limit of 1,000
#: frames): a 1,000-branch `par` that no longer compiled went unnoticed behind smaller smoke
#: sizes once (issue 36). The full run goes to 100,000; the shapes are the same, only longer.
SMOKE_CHECKER_SIZES = [200, 2_000]


def machine() -> dict[str, Any]:
    """The machine and the versions the figures were taken with."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = (0.0, 0.0, 0.0)
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mcec", "runtime", "grammar"],
            capture_output=True, text=True, cwd=HERE.parent, timeout=10,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "", ""
    from benchmarks.peers import versions

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        # Which interpreter, not only which version: on the reference VM two CPython 3.11 builds
        # ran the front end 10-30% apart (benchmarks/README.md §), so a figure needs its build.
        "python_executable": sys.executable,
        "python_build": " ".join(platform.python_build()),
        "platform": platform.platform(),
        "load_average_at_start": [round(x, 2) for x in load],
        "git_commit": commit,
        "uncommitted_compiler_or_runtime_files": [line[3:] for line in dirty.splitlines()],
        "versions": versions(),
    }


def _mark(ok: bool | None) -> str:
    return "" if ok is None else ("✓" if ok else "✗")


# ------------------------------------------------------------ rows per benchmark


def rows_runtime(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``runtime_bench``."""
    rows: list[Row] = []
    for key in ("chain_sync", "chain_async"):
        c = r[key]
        rows.append(("runtime", f"{key} 1,000 steps: AgentMonad / straight-line", f"{c['ratio']:.2f}", "≤ 1.6", _mark(c["ratio"] <= 1.6)))
    p = r["par_1000x50ms"]
    rows.append(("runtime", "AgentMonad.par 1,000 × 50 ms: wall / 50 ms", f"{p['ratio']:.2f}", "≤ 1.5", _mark(p["ratio"] <= 1.5)))
    return rows


def rows_frontend(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``frontend_bench``: the cold front end against Lark's parse, and a re-check after an edit."""
    rows: list[Row] = []
    budgets = r["budgets"]
    for lines, s in r["sizes"].items():
        budgeted = int(lines) == 1_000
        rows.append((
            "frontend",
            f"parse+check {int(lines):,} lines / Lark LALR parse",
            f"{s['cold_over_lark']:.2f}",
            f"≤ {budgets['cold_over_lark']}" if budgeted else "",
            _mark(s["cold_over_lark"] <= budgets["cold_over_lark"]) if budgeted else "",
        ))
        rows.append((
            "frontend",
            f"re-check after one edit {int(lines):,} lines / cold",
            f"{s['recheck_over_cold']:.2f}",
            f"≤ {budgets['recheck_over_cold']}" if budgeted else "",
            _mark(s["recheck_over_cold"] <= budgets["recheck_over_cold"]) if budgeted else "",
        ))
    return rows


def rows_checker(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``checker_bench``."""
    rows: list[Row] = []
    for shape, s in r.items():
        largest = list(s["sizes"])[-1]
        rows.append(("checker", f"{shape} {int(largest):,} steps: steps/s", f"{s['sizes'][largest]['steps_per_second']:,}", "", ""))
        worst = max(s["growth_per_10x"])
        rows.append(("checker", f"{shape}: worst growth per 10×", f"{worst:.2f}", "≤ 12", _mark(worst <= 12)))
    return rows


def rows_scaling(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``scaling_bench`` (issue 36): growth exponents, and peak memory of the largest size."""
    from benchmarks.scaling_bench import TARGET_EXPONENT, TARGET_PEAK_MB

    rows: list[Row] = []
    for shape, s in r.items():
        sizes = list(s["sizes"])
        span = f"{int(sizes[0]):,}→{int(sizes[-1]):,}"
        for phase, value in s["exponents"].items():
            rows.append(("scaling #36", f"{shape} {span}: {phase} exponent", f"{value:.2f}", f"≤ {TARGET_EXPONENT}", _mark(value <= TARGET_EXPONENT)))
        peak = s["sizes"][sizes[-1]]["peak_mb"]
        target = TARGET_PEAK_MB if shape == "decls" and int(sizes[-1]) == 10_000 else None
        rows.append((
            "scaling #36", f"{shape} {int(sizes[-1]):,}: peak MB", f"{peak:.0f}",
            f"< {target}" if target else "", _mark(peak < target) if target else "",
        ))
    return rows


def rows_codegen(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``codegen_bench`` (issue #5)."""
    rows: list[Row] = []
    for key, label in (("overhead_sync", "sync"), ("overhead_async", "async")):
        o = r[key]
        rows.append((
            "codegen #5",
            f"{o['steps']:,}-step compiled pipeline ({label} steps) / hand-written floor",
            f"{o['ratio']:.3f}",
            "≤ 1.3",
            _mark(o["target_met"]),
        ))
    c = r["compile"]
    for n, row in c["sizes"].items():
        s = row["seconds"]
        rows.append((
            "codegen #5",
            f"compile {int(n):,} steps (parse+check+generate+format), s",
            f"{s['total']:.2f} (formatting {row['black_share']:.0%})",
            "",
            "",
        ))
        if "mypy_seconds" in row:
            rows.append(("codegen #5", f"mypy --strict on {int(n):,}-step output (cold), s", f"{row['mypy_seconds']:.2f}", "", ""))
    for step, g in c["growth_total"].items():
        rows.append(("codegen #5", f"compile time growth {step}", f"{g:.2f}", "≤ 12 (linear)", _mark(g <= 12)))
    for step, g in c.get("growth_mypy", {}).items():
        rows.append(("codegen #5", f"mypy time growth {step}", f"{g:.2f}", "≤ 12 (linear)", _mark(g <= 12)))
    if "huge" in r:
        h = r["huge"]
        if h.get("ok"):
            s = h["seconds"]
            rows.append((
                "codegen #5",
                f"{h['steps']:,} steps: compile s / run s",
                f"{s['total']:.0f} (formatting {h['black_share']:.0%}) / {s['run']:.2f}",
                "compiles and runs",
                "✓",
            ))
        else:
            rows.append(("codegen #5", f"{h['steps']:,} steps compile and run", h.get("error", "failed"), "compiles and runs", "✗"))
    return rows


def rows_fn(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``fn_bench`` (issue 48 item 1): a chain of fns and of steps against hand-written."""
    fn, step = r["fn"], r["step"]
    return [
        ("fn #48", f"chain of {r['length']:,} fns / hand-written value = inc(value)",
         f"{fn['ratio']['mcec']:.3f} (A/A {fn['ratio']['hand_again']:.3f})", f"≤ {r['fn_target']}", _mark(r["fn_target_met"])),
        ("fn #48", f"chain of {r['length']:,} sync steps / hand-written floor",
         f"{step['ratio']['mcec']:.3f} (A/A {step['ratio']['floor_again']:.3f})", f"≤ {r['step_target']}", _mark(r["step_target_met"])),
    ]


def rows_control(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``control_bench`` (issue 21): each construct against hand-written
    Python (loop, match) or against the same chain compiled bare (retry, timeout)."""
    rows: list[Row] = []
    for key, measure, unit in (
        ("loop", f"loop({r['loop']['iterations']}) iteration: compiled / hand-written for loop", "iteration"),
        ("match_loop", "match dispatch in a loop, 4 classes: compiled / hand-written isinstance chain", "dispatch"),
        ("match_call", "match as the pipeline body, per call: compiled / hand-written isinstance chain", "call"),
    ):
        g = r[key]
        us = g["us"]
        rows.append((
            "control #21",
            measure,
            f"{g['value']:.3f} ({us['mcec']:.3f} / {us['floor']:.3f} µs per {unit}; A/A {g['ratio']['floor_again']:.3f})",
            f"≤ {g['target']}",
            _mark(g["target_met"]),
        ))
    for g in r["wrap"].values():
        for construct, spelled in (("retry", "retry(3)"), ("timeout", "timeout(30)")):
            rows.append((
                "control #21",
                f"{spelled} around {g['steps']} {g['kind']} steps, success path: / bare chain",
                f"{g['ratio'][construct]:.3f} ({g['added_us_per_call'][construct]:+.2f} µs per call; A/A {g['ratio']['bare_again']:.3f})",
                f"≤ {g['target']}",
                _mark(g["target_met"][construct]),
            ))
    return rows


def rows_instrument(r: dict[str, Any]) -> list[Row]:
    """Summary row of ``instrument_bench`` (issue 48): ``instrument()`` with the SDK not configured."""
    per_call = ", ".join(f"{n} steps {ratio:.3f}" for n, ratio in r["per_call_ratio"].items())
    return [(
        "instrument #48",
        "compiled chain, instrument() with the SDK not configured: per step / not instrumented",
        f"{r['value']:.3f} (A/A {r['per_step_aa']:.3f}; per call {per_call})",
        f"≤ {r['target']}",
        _mark(r["target_met"]),
    )]


def rows_events(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``events_bench`` (issue 33): no consumer attached (against the loop that
    does not look for one), and the cost per step of a list sink and of OTel spans."""
    c, e = r["chain"], r["each"]
    rows: list[Row] = [
        (
            "events #33",
            f"{c['steps']:,}-step interpreted chain, no sink: per step / before events",
            f"{c['value']:.3f} (A/A {c['ratio']['run_again'] / c['ratio']['run']:.3f})",
            f"≤ {c['target']}",
            _mark(c["target_met"]),
        ),
        (
            "events #33",
            f"each over {e['elements']:,} elements, no sink: per element / before events",
            f"{e['value']:.3f} (A/A {e['ratio']['run_group_again'] / e['ratio']['run_group']:.3f})",
            f"≤ {e['target']}",
            _mark(e["target_met"]),
        ),
    ]
    for sink, label in (("list_sink", "every event kept in a list"), ("otel_in_memory", "OTel spans, in-memory exporter")):
        if sink in c["us_per_step"]:
            rows.append((
                "events #33",
                f"per step with {label}: µs (× no sink)",
                f"{c['us_per_step'][sink]:.2f} ({c['with_sink_over_none'][sink]:.1f}×)",
                "reported",
                "",
            ))
    return rows


def rows_peers(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``peers`` (issue #6)."""
    rows: list[Row] = []
    for case, c in r["chain"].items():
        us = c["us_per_step"]
        if "mcec" in us:
            ratio = c["ratio_to_floor"]["mcec"]
            rows.append(("peers #6", f"chain {case}: mcec µs/step (× floor)", f"{us['mcec']:.3f} ({ratio:.2f}×)", "≤ 1.3× floor", _mark(ratio <= 1.3)))
        if "mcec" in us and "lcel" in us:
            x = us["lcel"] / us["mcec"]
            api = "ainvoke" if case.startswith("async") else "invoke"
            rows.append(("peers #6", f"chain {case}: LCEL {api} / mcec per step", f"{x:.1f}×", "≥ 20×", _mark(x >= 20)))
        for system in ("agentmonad", "closure", "returns", "langgraph"):
            if system in us:
                rows.append(("peers #6", f"chain {case}: {system} µs/step (× floor)", f"{us[system]:.3f} ({c['ratio_to_floor'][system]:.2f}×)", "", ""))
            elif system in c["errors"]:
                rows.append(("peers #6", f"chain {case}: {system}", c["errors"][system], "", ""))
    for system, d in r["depth"].items():
        if "skipped" in d:
            rows.append(("peers #6", f"depth: {system}", d["skipped"], "", ""))
            continue
        failures = [f"{n}: {a['error']}" for n, a in d["attempts"].items() if not a.get("ok")]
        value = f"{d['deepest_ok']:,}" + (f" ({failures[0]})" if failures else "")
        if system == "mcec":
            wanted = max(int(n) for n in d["attempts"]) if not failures else None
            target_n = 100_000 if wanted is None or wanted >= 100_000 else wanted
            rows.append(("peers #6", "depth: mcec deepest chain run", value, f"{target_n:,}, no crash", _mark(d["deepest_ok"] >= target_n)))
        else:
            rows.append(("peers #6", f"depth: {system} deepest chain run", value, "", ""))
    f = r["groups"]["fanout"]
    for name, ratio in f["ratio_to_50ms"].items():
        mcec = name.startswith("mcec")
        rows.append(("peers #6", f"fan-out {f['branches']:,} × 50 ms: {name} wall / 50 ms", f"{ratio:.2f}", "≤ 1.3" if mcec else "", _mark(ratio <= 1.3) if mcec else ""))
    for name, ff in r["groups"]["failfast"].items():
        mcec = name.startswith("mcec")
        value = f"{ff['ms']:.1f} ms, {ff['cancelled_at_result']}/{ff['siblings']} cancelled"
        ok = ff["failed_with_boom"] and ff["all_cancelled"] and ff["ms"] <= 50
        rows.append(("peers #6", f"fail-fast: {name}", value, "≤ 50 ms, all cancelled" if mcec else "", _mark(ok) if mcec else ""))
    if "compiler" in r:
        for n, c in r["compiler"]["sizes"].items():
            us = c["us_per_step"]
            rows.append((
                "peers #6",
                f"compiler {int(n):,} steps, µs/step: parse/check/generate/format (mypy)",
                f"{us['parse']}/{us['check']}/{us['emit']}/{us['black']} ({c['mypy_us_per_step']})",
                "",
                "",
            ))
    return rows


def rows_check(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``check_bench`` (issue 20): per example, the three commands, and what class knowledge costs."""
    rows: list[Row] = []
    budget = r["budget"]
    for spec, e in r["examples"].items():
        name = spec.removeprefix("examples/")
        rows.append((
            "check #20",
            f"{name}: mcec check / check --fast / plain mypy, s (warm)",
            f"{e['check_seconds']:.2f} / {e['fast_seconds']:.2f} / {e['mypy_seconds']:.2f}",
            "",
            "",
        ))
        rows.append((
            "check #20",
            f"{name}: check --fast with / without class knowledge",
            f"{e['fast_over_without']:.2f}",
            f"≤ {budget}",
            _mark(e["fast_over_without"] <= budget),
        ))
        rows.append((
            "check #20",
            f"{name}: front end in-process, ms, with / without class knowledge",
            f"{e['with_classes_ms']:.1f} / {e['without_classes_ms']:.1f} ({e['class_knowledge_ratio']:.2f}×)",
            "",
            "",
        ))
    for steps, m in r.get("mypy_scaling", {}).items():
        rows.append((
            "check #36",
            f"{int(steps):,} steps: CPU s, check / plain mypy: cold, warm, after an edit",
            f"{m['check_cold_cpu']:.1f} / {m['mypy_cold_cpu']:.1f}, {m['check_warm_cpu']:.1f} / {m['mypy_warm_cpu']:.1f}, "
            f"{m['check_edited_cpu']:.1f} / {m['mypy_edited_cpu']:.1f}",
            "",
            "",
        ))
        rows.append((
            "check #36",
            f"{int(steps):,} steps: cold check less compile --no-mypy / cold plain mypy, CPU",
            f"{m['cold_check_less_compile_over_mypy']:.2f}",
            "",
            "",
        ))
        rows.append((
            "check #36",
            f"{int(steps):,} steps: a warm check of an unchanged spec starts mypy (times)",
            f"{m['warm_mypy_started']}",
            "0",
            _mark(m["warm_mypy_started"] == 0),
        ))
    return rows


def rows_lsp(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``lsp_bench`` (issue 34): per spec, a re-check after an edit inside one pipeline
    over a cold ``check --fast``, and keystroke to diagnostics over stdio."""
    rows: list[Row] = []
    budget = r["budget"]["recheck_over_cold"]
    for name, f in r["specs"].items():
        rows.append((
            "lsp #34",
            f"{name} ({f['lines']} lines): re-check after an edit / cold check",
            f"{f['recheck_over_cold']:.3f} ({f['recheck_seconds'] * 1000:.1f} / {f['cold_seconds'] * 1000:.1f} ms)",
            f"≤ {budget}",
            _mark(f["recheck_over_cold"] <= budget),
        ))
        if "keystroke_ms" in f:
            rows.append((
                "lsp #34",
                f"{name}: keystroke to diagnostics over stdio, ms (after the debounce)",
                f"{f['keystroke_ms']:.0f} ({f['after_debounce_ms']:.0f})",
                "",
                "",
            ))
    return rows


def rows_llm(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``llm_bench`` (issue 22): an ``llm`` step over a direct ``AsyncOpenAI`` call."""
    rows: list[Row] = []
    for case, c in r["cases"].items():
        kind, _, level = case.partition("_c")
        rows.append((
            "llm #22",
            f"llm step / direct AsyncOpenAI, {kind} output, {level} concurrent (A/A)",
            f"{c['ratio']:.3f} ({c['aa_ratio']:.3f})",
            "≤ 1.05",
            _mark(c["ratio"] <= 1.05),
        ))
        rows.append(("llm #22", f"llm step's own work without I/O, {kind}, µs/call", f"{c['own_work_us_per_call']:.1f}", "", ""))
    return rows


def rows_stream(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``stream_bench`` (issue 33): time to the first streamed token through a
    ``stream llm`` step against the openai SDK's own stream."""
    rows: list[Row] = []
    for kind, c in r["cases"].items():
        rows.append((
            "stream #33",
            f"time to first token, stream llm / the openai SDK's stream, {kind} output (A/A)",
            f"{c['ratio']:.3f} ({c['aa_ratio']:.3f})",
            f"≤ {c['target']}",
            _mark(c["target_met"]),
        ))
    return rows


def rows_react(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``react_bench`` (issue 22): the ReAct agent end to end against its peers."""
    rows: list[Row] = []
    c = r["conditions"]
    for system in ("mcec", "floor", "langgraph", "pydantic_ai"):
        if system not in r:
            if system in c["not_installed"]:
                rows.append(("react #22", f"ReAct {c['turns']} turns: {system}", "not installed", "", ""))
            continue
        row = r[system]
        mcec = system == "mcec"
        rows.append((
            "react #22",
            f"ReAct {c['turns']} turns: {system} wall ms / beyond scripted {c['scripted_latency_ms']} ms / CPU ms per turn",
            f"{row['wall_ms']:.1f} / {row['beyond_ms']:.1f} / {row['cpu_ms_per_turn']:.2f}",
            "smallest beyond of mcec, langgraph, pydantic-ai" if mcec else "",
            _mark(bool(r.get("mcec_smallest_beyond"))) if mcec and any(p in r for p in ("langgraph", "pydantic_ai")) else "",
        ))
    return rows


def rows_plans(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``plan_bench`` (issue 23): checking a plan against one model round trip,
    and a running plan's per-step overhead against the same text compiled."""
    rows: list[Row] = []
    c = r["check"]
    for plan, p in c["plans"].items():
        budgeted = plan != "chain_200"
        rows.append((
            "plans #23",
            f"check {plan} (uncached) / one round trip to the local test server",
            f"{p['ratio']:.3f} ({p['check_us']:.0f} / {c['round_trip_us']:.0f} µs; parse {p['parse_share']:.0%})",
            f"≤ {c['target']}" if budgeted else "",
            _mark(p["target_met"]) if budgeted else "",
        ))
    g = r["run"]
    for plan, p in g["plans"].items():
        rows.append((
            "plans #23",
            f"running {plan}: plan / compiled per step",
            f"{p['ratio_per_step']:.2f} ({p['plan_us_per_step']:.2f} / {p['compiled_us_per_step']:.2f} µs; A/A {g['aa_ratio']:.3f})",
            f"≤ {g['target']}",
            _mark(p["target_met"]),
        ))
    return rows


def rows_durable(r: dict[str, Any]) -> list[Row]:
    """Summary rows of ``durable_bench`` (issue 31): a durable step over a bare DBOS step on the
    same database, recorded bytes per effect, non-durable runs against a baseline tree."""
    s = r["step"]
    rows: list[Row] = [(
        "durable #31",
        f"durable step / bare DBOS step, {r['database']}, ms per step (slope {s['sizes'][0]}→{s['sizes'][1]} turns)",
        f"{s['ratio']:.3f} ({s['mcec_ms_per_step']:.2f} / {s['dbos_ms_per_step']:.2f})",
        f"≤ {s['target']}",
        _mark(s["target_met"]),
    )]
    for pipeline, label in (("steady", "constant state"), ("growing", "state grows a note per turn")):
        b = r["bytes"][pipeline]
        per = " / ".join(f"{row['bytes_per_effect']:,.0f}" for row in b["turns"].values())
        rows.append((
            "durable #31",
            f"recorded bytes per effect at {' / '.join(b['turns'])} turns, {label} (growth exponent)",
            f"{per} ({b['exponent']:.2f})",
            "linear (≤ 1.1)",
            _mark(b["linear"]),
        ))
    nd = r["nondurable"]
    if "ratio" in nd:
        rows.append((
            "durable #31",
            "non-durable loop, this tree / baseline, µs per step: interpreted, compiled",
            f"{nd['ratio']['interpreted_us']:.3f}, {nd['ratio']['compiled_us']:.3f}",
            f"≤ {nd['target']}",
            _mark(nd["target_met"]),
        ))
    return rows


# ------------------------------------------------------------ running


def _run_one(name: str, level: str, args: argparse.Namespace, results: dict[str, Any]) -> dict[str, Any]:
    quick = level != "full"
    smoke = level == "smoke"
    if name == "runtime":
        from benchmarks import runtime_bench

        return runtime_bench.main(quick=quick)
    if name == "frontend":
        from benchmarks import frontend_bench

        return frontend_bench.main(quick=quick, sizes=[1_000] if smoke else None)
    if name == "checker":
        from benchmarks import checker_bench

        return checker_bench.main(quick=quick, sizes=SMOKE_CHECKER_SIZES if smoke else None)
    if name == "scaling":
        from benchmarks import scaling_bench

        return scaling_bench.main(quick=quick, sizes=[20, 200] if smoke else None)
    if name == "codegen":
        from benchmarks import codegen_bench

        out = codegen_bench.main(quick=quick, smoke=smoke, huge_steps=args.huge_steps)
        codegen_bench.print_detail(out)
        return out
    if name == "fn":
        from benchmarks import fn_bench

        out = fn_bench.main(quick=quick, smoke=smoke)
        fn_bench.print_detail(out)
        return out
    if name == "control":
        from benchmarks import control_bench

        out = control_bench.main(quick=quick, smoke=smoke)
        control_bench.print_detail(out)
        return out
    if name == "events":
        from benchmarks import events_bench

        out = events_bench.main(quick=quick, smoke=smoke)
        events_bench.print_detail(out)
        return out
    if name == "instrument":
        from benchmarks import instrument_bench

        out = instrument_bench.main(quick=quick, smoke=smoke)
        instrument_bench.print_detail(out)
        return out
    if name == "peers":
        from benchmarks import peers

        codegen = results.get("codegen") if isinstance(results.get("codegen"), dict) else None
        out = peers.main(quick=quick, smoke=smoke, codegen=codegen if codegen and "error" not in codegen else None)
        peers.print_detail(out)
        return out
    if name == "check":
        from benchmarks import check_bench

        out = check_bench.main(quick=quick, smoke=smoke)
        check_bench.print_detail(out)
        return out
    if name == "llm":
        from benchmarks import llm_bench

        out = llm_bench.run_all(rounds=3 if quick else 9, calls=200, smoke=smoke)
        llm_bench.print_detail(out["cases"])
        return out
    if name == "stream":
        from benchmarks import stream_bench

        out = stream_bench.run_all(rounds=3 if quick else 9, calls=100, smoke=smoke)
        stream_bench.print_detail(out["cases"])
        return out
    if name == "react":
        from benchmarks import react_bench

        if smoke:
            out = react_bench.run_all(rounds=1, warmup=1, model_delay=0.001, tool_delay=0.001)
        else:
            out = react_bench.run_all(rounds=5 if quick else 31, warmup=2, model_delay=0.02, tool_delay=0.005)
        react_bench.print_detail(out)
        return out
    if name == "plans":
        from benchmarks import plan_bench

        out = plan_bench.main(quick=quick, smoke=smoke)
        plan_bench.print_detail(out)
        return out
    if name == "lsp":
        from benchmarks import lsp_bench

        out = lsp_bench.main(quick=quick, smoke=smoke)
        lsp_bench.print_detail(out)
        return out
    if name == "durable":
        from benchmarks import durable_bench

        baseline = os.environ.get("MCEC_BENCH_BASELINE")  # a checkout before durable runs, to compare with
        out = durable_bench.main(quick=quick, smoke=smoke, baseline=Path(baseline) if baseline else None)
        durable_bench.print_detail(out)
        return out
    raise ValueError(name)


ROWS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "runtime": rows_runtime,
    "frontend": rows_frontend,
    "checker": rows_checker,
    "scaling": rows_scaling,
    "codegen": rows_codegen,
    "fn": rows_fn,
    "control": rows_control,
    "events": rows_events,
    "instrument": rows_instrument,
    "peers": rows_peers,
    "check": rows_check,
    "llm": rows_llm,
    "stream": rows_stream,
    "react": rows_react,
    "plans": rows_plans,
    "lsp": rows_lsp,
    "durable": rows_durable,
}


def table(results: dict[str, Any]) -> str:
    """THE summary table (markdown) of every benchmark that ran."""
    lines = ["| benchmark | measure | value | target | met |", "|---|---|---|---|---|"]
    for name in BENCHMARKS:
        if name not in results:
            continue
        r = results[name]
        if "error" in r:
            lines.append(f"| {name} | (benchmark failed) | {r['error']} | | ✗ |")
            continue
        try:
            rows = ROWS[name](r)
        except Exception as exc:  # a figure missing: say so rather than crash the report
            rows = [(name, "(table rows failed)", f"{type(exc).__name__}: {exc}", "", "✗")]
        lines += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the benchmarks selected by ``argv``; print detail and the table; write JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny N everywhere (minutes, not an hour)")
    parser.add_argument("--smoke", action="store_true", help="the smallest sizes (the test suite's smoke run)")
    parser.add_argument("--json", default=str(HERE / "results.json"), help="where to write the figures")
    parser.add_argument("--only", default=",".join(BENCHMARKS), help=f"comma-separated subset of {','.join(BENCHMARKS)}")
    parser.add_argument("--huge-steps", type=int, default=None, help="size of the compile-and-run pipeline (default 100000; 0 skips)")
    parser.add_argument("--fresh", action="store_true", help="empty the compiled-module cache first")
    args = parser.parse_args(argv)
    level = "smoke" if args.smoke else "quick" if args.quick else "full"
    selected = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(selected) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    if args.fresh:
        from benchmarks.workloads import cache_dir

        shutil.rmtree(cache_dir(), ignore_errors=True)

    results: dict[str, Any] = {"machine": machine(), "level": level, "seconds": {}}
    print(f"# mcec benchmarks ({level})\n")
    print(
        "Measurements are interleaved (A/B/A/B, order rotating per round) and reported as medians, "
        "so load from other processes on this shared machine hits every side alike; CPU-bound "
        "micro-benchmarks use this process's CPU time, wall-clock workloads use perf_counter.\n"
    )
    print(f"machine: {json.dumps(results['machine'])}\n")
    for name in BENCHMARKS:
        if name not in selected:
            continue
        print(f"\n## {name}\n", flush=True)
        started = time.perf_counter()
        try:
            results[name] = _run_one(name, level, args, results)
            if name in ("frontend", "checker", "scaling"):
                print(json.dumps(results[name], indent=2))
        except Exception as exc:  # one broken benchmark must not hide the others
            traceback.print_exc(file=sys.stdout)
            results[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]}
        results["seconds"][name] = round(time.perf_counter() - started, 1)
        sys.stdout.flush()

    summary = table(results)
    results["table"] = summary
    print("\n## Summary\n")
    print(summary)
    print(f"\n(seconds per benchmark: {results['seconds']})")
    Path(args.json).write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    print(f"figures written to {args.json}")
    return results


def quiet_main(argv: list[str]) -> tuple[dict[str, Any], str]:
    """:func:`main` with its output captured (for tests)."""
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        results = main(argv)
    return results, buffer.getvalue()


if __name__ == "__main__":
    main()
