"""Checked plans (issue 23): what checking a plan costs, and what running one costs per step.

The toolbox is ``benchmarks/plans/calc.mce`` (``toolbox calc : int -> int ! Bad |
MergeConflict``: sync and async ``int -> int`` steps, fns for ``par``/``each``
and a ``catch`` handler, steps in ``benchmarks/plans/impl.py``). The plans
(:data:`PLANS`) are a chain of 20 toolbox references, one of 200, one of 20
async steps, and one of 20 references through ``par``, ``each``, ``catch`` and
``match`` (``mixed_20``). The spec is compiled with one pipeline per plan
appended, ``pipeline p_<plan> : int -> int ! Bad | MergeConflict = <the same
text>;``, and loaded in memory (``mcec.run.runner.load_module``).

1. **Checking** (target: a 20-step plan's check ≤ 0.1× one round trip). In
   the same interleaved rounds (order rotating, wall clock, one event loop):
   ``reps`` uncached checks of each plan (``CheckedToolbox._check``: parse,
   confine, type, build the interpreter's arrow: what ``spawn`` pays for a
   text it has not seen), the same plans' parse alone (``syntax.parse_plan``)
   and parse + check without the arrow (``check_plan``), and ``reps`` round
   trips of the request an ``llm`` step makes (``AsyncOpenAI`` ``chat.
   completions.create``, one user message) to the local OpenAI-compatible test
   server (``tests/llm_server.py`` in a subprocess, as ``llm_bench`` runs it).
   Figure: the median of the per-round ratios check / round trip.
2. **Running** (target: a plan's per-step overhead ≤ 2× compiled code). The
   accepted plans run with ``AcceptedPlan.run(state, value)`` and the same
   texts compiled as pipelines are timed in one :func:`benchmarks.workloads.
   ainterleaved` group (this process's CPU time, batches of calls, median of
   the rounds), with the 1-step plans ``inc`` / ``ainc`` beside them. Figures:
   µs per call and per step, the ratio plan / compiled per call, and the
   per-step overhead ``(t(N) − t(1)) / (N − 1)`` of each side and its ratio.
   ``spawn_chain_20`` is ``spawn(calc) write_plan`` end to end with the 20-step
   chain (the planner scripted, the check cached, as on every spawn after the
   first of a text); ``compiled_again`` is the A/A noise of the group.

    python -m benchmarks.plan_bench [--quick|--smoke] [--profile] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks import workloads as w

HERE = Path(__file__).resolve().parent
SPEC = HERE / "plans" / "calc.mce"
TYPE = "int -> int ! Bad | MergeConflict"

#: Targets of issue 23.
TARGET_CHECK = 0.1  # check of a 20-step plan / one round trip to the local server
TARGET_RUN = 2.0  # plan per step / compiled per step

_SYNC = ("inc", "dbl", "half", "dec")
_ASYNC = ("ainc", "adbl")


def chain(names: tuple[str, ...], n: int) -> str:
    """``n`` references cycling through ``names``, bound with ``>>=``."""
    return " >>= ".join(names[i % len(names)] for i in range(n))


#: The plans: name -> text. Every one is accepted by toolbox ``calc`` (checked at start).
PLANS: dict[str, str] = {
    "chain_1": "inc",
    "async_1": "ainc",
    "chain_20": chain(_SYNC, 20),
    "chain_200": chain(_SYNC, 200),
    "async_20": chain(_ASYNC, 20),
    # 20 references through par, each, catch and match (sync and async steps)
    "mixed_20": (
        "inc >>= par <dbl, half> >>= pick >>= spread >>= each (inc >>= dbl) >>= total"
        " >>= (dec catch Bad => recover) >>= match { 0 => inc, _ => (half >>= dbl) }"
        " >>= par <inc, ainc> >>= pick >>= adbl >>= inc >>= dec >>= half"
    ),
}
#: Steps of each plan (toolbox references it runs on its path; ``mixed_20``'s count the
#: references of its text, of which one ``match`` arm and the handler do not run).
STEPS = {"chain_1": 1, "async_1": 1, "chain_20": 20, "chain_200": 200, "async_20": 20, "mixed_20": 20}
#: What the check benchmark times (the 1-step plans are only the run benchmark's baselines).
CHECKED = ("chain_20", "mixed_20", "chain_200")
#: Run groups: plan -> the 1-step plan of the same kind.
RUNS = {"chain_20": "chain_1", "chain_200": "chain_1", "async_20": "async_1", "mixed_20": "chain_1"}


def spec_text() -> str:
    """calc.mce with one pipeline per plan, ``p_<plan>``, of the same text."""
    lines = [SPEC.read_text(encoding="utf-8")]
    lines += [f"pipeline p_{name} : {TYPE} = {text};\n" for name, text in PLANS.items()]
    return "".join(lines)


def load() -> tuple[types.ModuleType, Any]:
    """The spec compiled and loaded in memory, and its toolbox ``calc`` read by the plan engine."""
    from mcec.compiler import compile_source
    from mcec.plans.engine import CheckedToolbox
    from mcec.run.runner import load_module
    from mcec.span import SourceFile

    root = str(HERE.parent)
    if root not in sys.path:  # the spec imports benchmarks.plans.impl
        sys.path.insert(0, root)
    result = compile_source(SourceFile(str(SPEC), spec_text()))
    assert result.program is not None and result.generated is not None, result.diagnostics[:3]
    module = load_module(result.program, result.generated)
    checked = module.TOOLBOX_calc.checked()
    assert isinstance(checked, CheckedToolbox), checked
    return module, checked


# --------------------------------------------------------------- 1. checking


def _checkers(checked: Any) -> dict[str, Callable[[str], object]]:
    """Three depths of checking one text, none of them cached."""
    from mcec import syntax
    from mcec.plans.check import check_plan
    from mcec.plans.engine import AcceptedPlan
    from mcec.span import SourceFile

    file = checked.file

    def full(text: str) -> object:
        verdict = checked._check(text)  # the engine's check, bypassing its cache
        assert isinstance(verdict, AcceptedPlan), verdict
        return verdict

    def typed(text: str) -> object:
        return check_plan(checked.scope, SourceFile(file, text))

    def parse(text: str) -> object:
        return syntax.parse_plan(SourceFile(file, text))

    return {"check": full, "check_plan": typed, "parse": parse}


async def _round_trips(url: str, rounds: int, reps: int, checked: Any) -> dict[str, list[tuple[float, float]]]:
    """Per round, (wall, CPU) seconds per operation of each candidate: the round trip
    and each plan at each depth of checking, interleaved, the order rotating."""
    from openai import AsyncOpenAI

    from benchmarks.llm_bench import KEY

    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)
    counter = iter(range(10**9))

    async def round_trip() -> None:
        for _ in range(reps):
            prompt = f"Question: what is {next(counter)}?\nAnswer briefly."
            completion = await client.chat.completions.create(
                model="bench", messages=[{"role": "user", "content": prompt}]
            )
            assert completion.choices[0].message.content is not None

    def checking(fn: Callable[[str], object], text: str, n: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            for _ in range(n):
                fn(text)

        return run

    candidates: dict[str, tuple[Callable[[], Awaitable[None]], int]] = {"round_trip": (round_trip, reps)}
    for depth, fn in _checkers(checked).items():
        for plan in CHECKED:
            n = max(1, reps * 20 // STEPS[plan])  # the 200-step plan: a tenth as many
            candidates[f"{depth}:{plan}"] = (checking(fn, PLANS[plan], n), n)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in candidates}
    try:
        for fn, _ in candidates.values():  # warm up: the client's connection, Lark, the checker
            await fn()
        names = list(candidates)
        for r in range(rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                fn, n = candidates[name]
                t0, c0 = time.perf_counter(), time.process_time()
                await fn()
                samples[name].append(((time.perf_counter() - t0) / n, (time.process_time() - c0) / n))
    finally:
        await client.close()
    return samples


def bench_check(checked: Any, rounds: int, reps: int) -> dict[str, Any]:
    """Checking each plan against one round trip to the local test server (see the module doc)."""
    from benchmarks.llm_bench import start_server

    proc, url = start_server()
    try:
        samples = asyncio.run(_round_trips(url, rounds, reps, checked))
    finally:
        proc.terminate()
        proc.wait(10)
    trip = [wall for wall, _ in samples["round_trip"]]
    out: dict[str, Any] = {
        "rounds": rounds,
        "reps": reps,
        "round_trip_us": round(statistics.median(trip) * 1e6, 1),
        "round_trip_cpu_us": round(statistics.median(c for _, c in samples["round_trip"]) * 1e6, 1),
        "plans": {},
    }
    for plan in CHECKED:
        row: dict[str, Any] = {"steps": STEPS[plan], "chars": len(PLANS[plan])}
        for depth in ("check", "check_plan", "parse"):
            s = samples[f"{depth}:{plan}"]
            row[f"{depth}_us"] = round(statistics.median(wall for wall, _ in s) * 1e6, 1)
            row[f"{depth}_cpu_us"] = round(statistics.median(c for _, c in s) * 1e6, 1)
        check = [wall for wall, _ in samples[f"check:{plan}"]]
        row["ratio"] = round(statistics.median(c / t for c, t in zip(check, trip)), 4)
        row["parse_share"] = round(row["parse_cpu_us"] / row["check_cpu_us"], 3)
        row["target_met"] = row["ratio"] <= TARGET_CHECK
        out["plans"][plan] = row
    out["target"] = TARGET_CHECK
    out["value"] = out["plans"]["chain_20"]["ratio"]
    out["target_met"] = out["value"] <= TARGET_CHECK and out["plans"]["mixed_20"]["target_met"]
    return out


# --------------------------------------------------------------- 2. running


def bench_run(module: types.ModuleType, checked: Any, rounds: int, budget_steps: int) -> dict[str, Any]:
    """Accepted plans run vs the same text compiled (see the module doc); about
    ``budget_steps`` steps per batch of each candidate."""
    from benchmarks.plans import impl

    plans = {name: checked.check(text) for name, text in PLANS.items()}
    state, value = 0, 5

    def calls(name: str) -> int:
        return max(1, budget_steps // STEPS[name])

    def batch(fn: Callable[[Any, Any], Awaitable[Any]], n: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            for _ in range(n):
                await fn(state, value)
            await asyncio.sleep(0)

        return run

    candidates: dict[str, Callable[[], Awaitable[None]]] = {}
    per_call: dict[str, int] = {}
    for name in PLANS:
        n = calls(name)
        candidates[f"plan:{name}"] = batch(plans[name].run, n)
        candidates[f"compiled:{name}"] = batch(getattr(module, f"p_{name}"), n)
        per_call[f"plan:{name}"] = per_call[f"compiled:{name}"] = n
    candidates["compiled_again:chain_20"] = batch(module.p_chain_20, calls("chain_20"))
    candidates["spawn:chain_20"] = batch(module.solve, calls("chain_20"))
    per_call["compiled_again:chain_20"] = per_call["spawn:chain_20"] = calls("chain_20")

    async def measure() -> dict[str, float]:
        impl.PLAN[0] = PLANS["chain_20"]
        for name in PLANS:  # the plan and the compiled pipeline agree
            got = await plans[name].run(state, value)
            expected = await getattr(module, f"p_{name}")(state, value)
            assert (got.value, got.state) == (expected.value, expected.state), (name, got, expected)
        spawned = await module.solve(state, value)
        assert spawned.value == (await module.p_chain_20(state, value)).value, spawned
        return await w.ainterleaved(dict(candidates), rounds=rounds)

    times = asyncio.run(measure())
    us = {name: t / per_call[name] * 1e6 for name, t in times.items()}  # µs per call
    out: dict[str, Any] = {"rounds": rounds, "us_per_call": {k: round(v, 3) for k, v in us.items()}, "plans": {}}
    for name, base in RUNS.items():
        steps = STEPS[name]
        plan_step = (us[f"plan:{name}"] - us[f"plan:{base}"]) / (steps - 1)
        compiled_step = (us[f"compiled:{name}"] - us[f"compiled:{base}"]) / (steps - 1)
        out["plans"][name] = {
            "steps": steps,
            "plan_us_per_call": round(us[f"plan:{name}"], 2),
            "compiled_us_per_call": round(us[f"compiled:{name}"], 2),
            "ratio_per_call": round(us[f"plan:{name}"] / us[f"compiled:{name}"], 3),
            "plan_us_per_step": round(plan_step, 3),
            "compiled_us_per_step": round(compiled_step, 3),
            "ratio_per_step": round(plan_step / compiled_step, 3),
            "target_met": plan_step / compiled_step <= TARGET_RUN,
        }
    out["one_step"] = {
        base: {
            "plan_us": round(us[f"plan:{base}"], 2),
            "compiled_us": round(us[f"compiled:{base}"], 2),
            "ratio": round(us[f"plan:{base}"] / us[f"compiled:{base}"], 3),
        }
        for base in ("chain_1", "async_1")
    }
    out["aa_ratio"] = round(us["compiled_again:chain_20"] / us["compiled:chain_20"], 3)
    out["spawn_chain_20_over_plan"] = round(us["spawn:chain_20"] / us["plan:chain_20"], 3)
    out["target"] = TARGET_RUN
    out["target_met"] = all(p["target_met"] for p in out["plans"].values())
    return out


# --------------------------------------------------------------- main


def profile(checked: Any, plan: str = "chain_20", reps: int = 200) -> str:
    """cProfile of ``reps`` uncached checks of ``plan`` (cumulative: parse vs checker)."""
    check = _checkers(checked)["check"]
    return w.profile_top(lambda: [check(PLANS[plan]) for _ in range(reps)], limit=25, sort="cumulative")


def main(quick: bool = False, smoke: bool = False) -> dict[str, Any]:
    """Both comparisons; the figures. Default under a minute; ``quick`` fewer rounds; ``smoke``
    (the test suite's) two rounds of tiny batches, a few seconds."""
    module, checked = load()
    for name, text in PLANS.items():
        verdict = checked._check(text)
        assert not hasattr(verdict, "diagnostics") or all(not d.is_error for d in verdict.diagnostics), name
    check_rounds, check_reps = (2, 2) if smoke else (7, 10) if quick else (31, 20)
    run_rounds, run_steps = (2, 200) if smoke else (7, 2_000) if quick else (31, 4_000)
    return {
        "check": bench_check(checked, check_rounds, check_reps),
        "run": bench_run(module, checked, run_rounds, run_steps),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def print_detail(results: dict[str, Any]) -> None:
    """The figures as markdown tables."""
    c = results["check"]
    print(
        f"\n### checking, µs per plan (wall / CPU), against one round trip to the local server: "
        f"{c['round_trip_us']} µs (CPU {c['round_trip_cpu_us']}); median of {c['rounds']} rounds\n"
    )
    print("| plan | steps | chars | parse | check_plan | check (verdict) | parse share (CPU) | check / round trip | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for plan, p in c["plans"].items():
        cells = [f"{p[f'{d}_us']:.0f} / {p[f'{d}_cpu_us']:.0f}" for d in ("parse", "check_plan", "check")]
        mark = "✓" if p["target_met"] else "✗"
        print(f"| {plan} | {p['steps']} | {p['chars']} | {' | '.join(cells)} | {p['parse_share']:.0%} | {p['ratio']:.3f} | ≤ {c['target']} {mark} |")
    r = results["run"]
    print(f"\n### running, µs (CPU), median of {r['rounds']} rounds; A/A {r['aa_ratio']:.3f}\n")
    print("| plan | steps | plan µs/call | compiled µs/call | per call | plan µs/step | compiled µs/step | per step | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for plan, p in r["plans"].items():
        mark = "✓" if p["target_met"] else "✗"
        print(
            f"| {plan} | {p['steps']} | {p['plan_us_per_call']:.1f} | {p['compiled_us_per_call']:.1f} | {p['ratio_per_call']:.2f} |"
            f" {p['plan_us_per_step']:.3f} | {p['compiled_us_per_step']:.3f} | {p['ratio_per_step']:.2f} | ≤ {r['target']} {mark} |"
        )
    for base, o in r["one_step"].items():
        print(f"\n1-step {base}: plan {o['plan_us']} µs, compiled {o['compiled_us']} µs ({o['ratio']:.2f}×)", end="")
    print(f"\nspawn(calc) end to end (20-step plan, check cached) / the plan's run: {r['spawn_chain_20_over_plan']:.3f}")
    print(f"load average after the run: {results['load_average']}")


def cli(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="checked plans: checking cost and per-step overhead (issue 23)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the 20-step check")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(load()[1]))
        return 0
    results = main(quick=args.quick, smoke=args.smoke)
    print_detail(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
