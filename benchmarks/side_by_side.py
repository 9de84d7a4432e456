"""The code two (or more) versions of the compiler generate, timed side by side in one process.

Run ``python -m benchmarks.side_by_side [--rounds R] [--runs K] TREE [TREE ...]``, each TREE a
checkout of the project (``git worktree add --detach /tmp/base main``); the first is the
baseline. Each tree's compiler compiles the same benchmark specs (a subprocess with that tree
on ``PYTHONPATH``); every module is then loaded in *this* process, on this process's runtime
(an older tree's generated code runs on a newer runtime unchanged, as long as the runtime
still exports what it imports), and the same pipelines of each are timed interleaved
(:func:`benchmarks.workloads.ainterleaved`, CPU time, median of ``R`` rounds), with the
baseline's module timed twice for the A/A. What differs between the sides is then only the
code the generator emits, not process-to-process noise, which on a shared machine moves
absolute figures by ±30 %. ``K`` runs are made; each ratio's median and range are printed.

Cases: ``match`` as a pipeline's body (four one-step arms, per call), a 10-step chain of
sync and of async steps and a 100-step chain of sync steps inside the control benchmark's
module (per call), and the codegen benchmark's 100-step chains (per step). Used for the
"runtime seam" row of benchmarks/README.md (issue 30: compiled code through the effect seam).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from benchmarks import control_bench as cb
from benchmarks import workloads as w

#: What a subprocess prints: the generated code of each spec, by the tree on its PYTHONPATH.
_GENERATE = """
import json
from benchmarks import workloads as w, control_bench as cb
print(json.dumps({
    "control": w.compile_text(cb.control_spec(1000, [10, 100])),
    "chain_sync": w.compile_text(w.chain_spec(100, False)),
    "chain_async": w.compile_text(w.chain_spec(100, True)),
}))
"""


def generated(tree: str) -> dict[str, str]:
    """The benchmark specs' generated code, compiled by ``tree``'s compiler."""
    env = dict(os.environ, PYTHONPATH=f"{tree}:{tree}/runtime")
    out = subprocess.run(
        [sys.executable, "-c", _GENERATE], env=env, cwd="/", capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out))


def cases(modules: dict[str, Any]) -> dict[str, tuple[Any, list[Any], int, int]]:
    """Per case: the pipeline, the values of one batch, the units a batch counts, calls per sample."""
    shapes = [cb.SHAPE_A, cb.SHAPE_B, cb.SHAPE_C, cb.SHAPE_D] * 250
    return {
        "match as the body (per call)": (modules["control"].mc, shapes, len(shapes), 1),
        "10 sync steps (per call)": (modules["control"].bare_sync_10, [0] * 20, 20, 3),
        "10 async steps (per call)": (modules["control"].bare_async_10, [0] * 20, 20, 3),
        "100 sync steps (per call)": (modules["control"].bare_sync_100, [0] * 20, 20, 1),
        "chain of 100 sync (per step)": (modules["chain_sync"].p, [0] * 5, 500, 1),
        "chain of 100 async (per step)": (modules["chain_async"].p, [0] * 5, 500, 1),
    }


def run_once(codes: dict[str, dict[str, str]], rounds: int) -> dict[str, dict[str, float]]:
    """One run: each case's ratio to the baseline (the first tree), the A/A included."""
    names = list(codes)
    loaded = {n: {k: w.load(v, f"{n}_{k}") for k, v in c.items()} for n, c in codes.items()}
    per_tree = {n: cases(m) for n, m in loaded.items()}
    again = cases({k: w.load(v, f"again_{k}") for k, v in codes[names[0]].items()})
    ratios: dict[str, dict[str, float]] = {}
    for case in per_tree[names[0]]:
        candidates = {n: cb.batch(per_tree[n][case][0], 7, per_tree[n][case][1]) for n in names}
        candidates[f"{names[0]} again"] = cb.batch(again[case][0], 7, again[case][1])
        times = asyncio.run(w.ainterleaved(candidates, rounds=rounds, inner=per_tree[names[0]][case][3]))
        ratios[case] = {n: t / times[names[0]] for n, t in times.items()}
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", nargs="+", help="checkouts of the project; the first is the baseline")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    codes = {os.path.basename(t.rstrip("/")) or t: generated(t) for t in args.trees}
    runs = [run_once(codes, args.rounds) for _ in range(args.runs)]
    print(f"ratio to {next(iter(codes))}: median [min–max] of {args.runs} runs; load {os.getloadavg()[0]:.1f}\n")
    print("| case | " + " | ".join(runs[0][next(iter(runs[0]))]) + " |")
    print("|---|" + "---|" * len(runs[0][next(iter(runs[0]))]))
    for case in runs[0]:
        cells = []
        for name in runs[0][case]:
            rs = [r[case][name] for r in runs]
            cells.append(f"{statistics.median(rs):.3f} [{min(rs):.3f}–{max(rs):.3f}]")
        print(f"| {case} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
