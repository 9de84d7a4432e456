"""Code-generation benchmark (issue #5).

Run ``python -m benchmarks.codegen_bench [--quick]`` or call :func:`main`.

1. **Per-step overhead** of a compiled 1,000-step pipeline (sync steps and
   async steps) as a ratio to hand-written straight-line Python with the same
   checks (``workloads.straight_line``), measured interleaved in the same run
   (CPU time, median of rounds). Target ≤ 1.3. Alternative code shapes are
   measured next to them (hand-written, never generated) to show what each
   part of the shape costs.
2. **Compile time** (parse + check + generate + black + source map; mypy
   excluded, and mypy ``--strict`` cold, separately) for 100, 1,000 and 10,000
   steps, with the growth ratio per 10× (linear: ≈ 10).
3. **100,000 steps**: compiled and run once, in a subprocess with a timeout.
   The generated module is cached (outside the repo) for the depth workload
   of ``peers.py``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import workloads as w

TARGET_RATIO = 1.3


# --------------------------------------------------------------- (1) run time


def bench_overhead(n: int, is_async: bool, rounds: int) -> dict[str, Any]:
    """µs/step of the compiled pipeline, the floor and prototype shapes; ratios to the floor."""
    code = w.compiled_code(w.chain_spec(n, is_async))
    module = w.load(code, f"chain_{n}_{'async' if is_async else 'sync'}")
    shapes = {
        "floor": w.straight_line(n, is_async),
        "proto_unique_names": w.straight_line(n, is_async, shape="unique"),
        "proto_type_is": w.straight_line(n, is_async, shape="type_is"),
        "proto_no_unpack": w.straight_line(n, is_async, shape="no_unpack"),
        "proto_no_try": w.straight_line(n, is_async, shape="bare"),
    }
    pipeline = module.p

    async def measure() -> dict[str, float]:
        expected = await shapes["floor"](7, 0)
        assert await pipeline(7, 0) == expected
        for fn in shapes.values():
            assert await fn(7, 0) == expected
        candidates: dict[str, Any] = {"mcec": lambda: pipeline(7, 0)}
        candidates.update({name: (lambda f=fn: f(7, 0)) for name, fn in shapes.items()})
        return await w.ainterleaved(candidates, rounds=rounds, inner=3)

    times = asyncio.run(measure())
    floor = times["floor"]
    out: dict[str, Any] = {
        "steps": n,
        "us_per_step": {k: round(v / n * 1e6, 4) for k, v in times.items()},
        "ratio_to_floor": {k: round(v / floor, 3) for k, v in times.items()},
    }
    out["ratio"] = out["ratio_to_floor"]["mcec"]
    out["target_met"] = out["ratio"] <= TARGET_RATIO
    if not out["target_met"]:
        out["profile"] = w.profile_top(lambda: asyncio.run(_repeat(pipeline, 50)))
    return out


async def _repeat(fn: Any, times: int) -> None:
    for _ in range(times):
        await fn(7, 0)


# --------------------------------------------------------------- (2) compile time


def _mypy_seconds(generated: Any) -> float:
    """Cold ``mypy --strict`` on one generated module (fresh cache dir), as mcec runs it."""
    from mcec.codegen.mypy_check import GeneratedFile, run_mypy

    with tempfile.TemporaryDirectory(prefix="mcec-bench-mypy-") as tmp:
        path = Path(tmp) / "bench_mce.py"
        path.write_text(generated.code, encoding="utf-8")
        t0 = time.perf_counter()
        diagnostics = run_mypy([GeneratedFile(path, "bench.mce", generated.source_map)], Path(tmp) / "cache")
        seconds = time.perf_counter() - t0
    assert not diagnostics, [d.message for d in diagnostics[:3]]
    return seconds


def bench_compile(sizes: list[int], mypy: bool, repeats: dict[int, int]) -> dict[str, Any]:
    """Phase times (median of repeats) per size, growth per 10×, and cold mypy time."""
    w.compile_phases(w.chain_spec(10, False))  # warm-up: Lark parser, black, libcst
    rows: dict[str, Any] = {}
    for n in sizes:
        text = w.chain_spec(n, False)
        runs = []
        generated = None
        for _ in range(repeats.get(n, 1)):
            times, generated = w.compile_phases(text)
            runs.append(times)
        phases = {
            phase: statistics.median(getattr(t, phase) for t in runs)
            for phase in ("parse", "check", "emit", "black", "sourcemap")
        }
        total = statistics.median(t.total for t in runs)
        row: dict[str, Any] = {
            "repeats": len(runs),
            "lines_out": runs[0].lines,
            "seconds": {k: round(v, 4) for k, v in phases.items()} | {"total": round(total, 4)},
            "us_per_step": {k: round(v / n * 1e6, 1) for k, v in phases.items()} | {"total": round(total / n * 1e6, 1)},
            "black_share": round(phases["black"] / total, 3),
            "formatter": runs[0].formatter,
        }
        if mypy and generated is not None:
            row["mypy_seconds"] = round(_mypy_seconds(generated), 3)
        rows[str(n)] = row
        w.compiled_code(text, store=generated.code if generated else None)
    growth = {
        f"{a}->{b}": round(rows[str(b)]["seconds"]["total"] / rows[str(a)]["seconds"]["total"], 2)
        for a, b in zip(sizes, sizes[1:])
    }
    out: dict[str, Any] = {"sizes": rows, "growth_total": growth}
    if mypy:
        out["growth_mypy"] = {
            f"{a}->{b}": round(rows[str(b)]["mypy_seconds"] / rows[str(a)]["mypy_seconds"], 2)
            for a, b in zip(sizes, sizes[1:])
        }
    return out


def compile_profile(n: int) -> str:
    """cProfile top entries (cumulative) of compiling an ``n``-step chain. black is
    compiled with mypyc, so its internals show as one entry."""
    text = w.chain_spec(n, False)
    return w.profile_top(lambda: w.compile_phases(text), limit=18, sort="cumulative")


# --------------------------------------------------------------- (3) 100,000 steps


def huge(n: int) -> dict[str, Any]:
    """Compile an ``n``-step chain (phase times), store it in the cache, run it once."""
    text = w.chain_spec(n, False)
    times, generated = w.compile_phases(text)
    w.compiled_code(text, store=generated.code)
    t0 = time.perf_counter()
    module = w.load(generated.code, f"chain_{n}")
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = asyncio.run(module.p(7, 0))
    t_run = time.perf_counter() - t0
    assert out.value == n and out.state == 7, out
    return {
        "steps": n,
        "lines_out": times.lines,
        "seconds": {
            "parse": round(times.parse, 3),
            "check": round(times.check, 3),
            "emit": round(times.emit, 3),
            "black": round(times.black, 3),
            "sourcemap": round(times.sourcemap, 3),
            "total": round(times.total, 3),
            "python_compile_and_load": round(t_load, 3),
            "run": round(t_run, 4),
        },
        "black_share": round(times.black / times.total, 3),
        "formatter": times.formatter,
        "ok": True,
    }


def huge_in_subprocess(n: int, timeout: float) -> dict[str, Any]:
    """:func:`huge` in a child process, so a crash, a hang or the memory stay there."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.codegen_bench", "--huge", str(n)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=Path(__file__).resolve().parent.parent,
        )
    except subprocess.TimeoutExpired:
        return {"steps": n, "ok": False, "error": f"timeout after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"steps": n, "ok": False, "error": " / ".join(tail), "wall": round(time.perf_counter() - t0, 1)}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------- main


def main(
    quick: bool = False, huge_steps: int | None = None, huge_timeout: float = 3600.0, smoke: bool = False
) -> dict[str, Any]:
    """Run the benchmark; return the figures.

    ``quick``: small sizes, no mypy, no 100,000-step run; ``smoke`` (the test
    suite's): tiny sizes; ``huge_steps``: size of the compile-and-run-once
    pipeline (default 100,000 in a full run, 0 = skip).
    """
    quick = quick or smoke
    n_run = 20 if smoke else 100 if quick else 1_000
    rounds = 5 if quick else 41
    results: dict[str, Any] = {
        "overhead_sync": bench_overhead(n_run, False, rounds),
        "overhead_async": bench_overhead(n_run, True, rounds),
    }
    # the smoke run compiles one chain past Python's 1,000 frames, so that a recursion as deep
    # as the chain is long fails CI (issue 36); the profile below stays on the tiny one
    sizes = [2, 2_000] if smoke else [10, 100] if quick else [100, 1_000, 10_000]
    repeats = {2: 1, 2_000: 1, 10: 3, 100: 3, 1_000: 3, 10_000: 1}
    results["compile"] = bench_compile(sizes, mypy=not quick, repeats=repeats)
    profile_n = sizes[-2] if quick else 1_000
    results["compile"]["profile"] = {"steps": profile_n, "top": compile_profile(profile_n)}
    if huge_steps is None:
        huge_steps = 0 if quick else 100_000
    if huge_steps:
        results["huge"] = huge_in_subprocess(huge_steps, huge_timeout)
    return results


def print_detail(results: dict[str, Any]) -> None:
    """Human-readable detail of :func:`main`'s figures."""
    for key in ("overhead_sync", "overhead_async"):
        r = results[key]
        print(f"\n### {key} ({r['steps']} steps): µs/step and ratio to the floor (CPU time, interleaved, median)\n")
        print("| shape | µs/step | ratio |")
        print("|---|---|---|")
        for name, us in r["us_per_step"].items():
            print(f"| {name} | {us:.4f} | {r['ratio_to_floor'][name]:.3f} |")
        if "profile" in r:
            print(f"\nProfile of the compiled pipeline (target missed):\n```\n{r['profile']}\n```")
    c = results["compile"]
    first = next(iter(c["sizes"].values()))
    print(f"\n### compile time (seconds; wall clock, median of repeats; formatting = {first.get('formatter')})\n")
    print("| steps | parse | check | emit (libcst) | formatting | source map | total | µs/step | formatting share | mypy --strict (cold) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, row in c["sizes"].items():
        s = row["seconds"]
        print(
            f"| {n} | {s['parse']} | {s['check']} | {s['emit']} | {s['black']} | {s['sourcemap']} | {s['total']} "
            f"| {row['us_per_step']['total']} | {row['black_share']:.0%} | {row.get('mypy_seconds', '—')} |"
        )
    print(f"\ngrowth of total per 10× steps: {c['growth_total']}; mypy: {c.get('growth_mypy', '—')}")
    if "profile" in c:
        print(f"\nProfile of one compile ({c['profile']['steps']} steps, cumulative):\n```\n{c['profile']['top']}\n```")
    if "huge" in results:
        print(f"\n### huge pipeline\n\n```\n{json.dumps(results['huge'], indent=2)}\n```")


if __name__ == "__main__":
    if "--huge" in sys.argv:
        print(json.dumps(huge(int(sys.argv[sys.argv.index("--huge") + 1]))))
    else:
        figures = main(quick="--quick" in sys.argv[1:])
        print_detail(figures)
