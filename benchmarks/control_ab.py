"""``retry``/``timeout`` around sync chains, two checkouts' *runtimes* timed in alternating processes.

Run ``python -m benchmarks.control_ab --base-python PY --base-tree TREE [--triples N] [--rounds R]``
from this checkout: each triple runs :func:`benchmarks.control_bench.bench_wrap` (10- and
100-step sync chains) in three processes — the base (``PY`` with ``TREE`` as its working
directory, so its ``benchmarks``, compiler and runtime), this checkout (this interpreter), the
base again — in an order that rotates per triple. Each process compiles the benchmark's spec
with its own compiler and times ``timeout(30)``/``retry(3)`` against the bare chain in one run
(ratios within a process). The base run twice gives the A/A between processes; each run's
``bare_again`` the A/A within one. Used for the "control #48" rows of benchmarks/README.md
(issue 48: a change to ``agentmonad.control``, which :mod:`benchmarks.side_by_side` cannot
show: it loads every side's generated code on one runtime).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

#: One process's work: its tree's compiler and runtime, sync chains of 10 and 100 steps.
_CHILD = """
import json, sys
from benchmarks import control_bench as cb, workloads as w
rounds = int(sys.argv[1])
module = w.load(w.compiled_code(cb.control_spec(40, [10, 100])), "control_ab")
out = {}
for k in (10, 100):
    r = cb.bench_wrap(module, "sync", k, rounds, inner=max(1, 60 // k))
    out[k] = {"ratio": r["ratio"], "us": r["us"], "added": r["added_us_per_call"]}
print(json.dumps(out))
"""

SIDES = ("base", "this", "base again")


def run_side(python: str, tree: str, rounds: int) -> dict[str, Any]:
    """One process of ``python`` in ``tree``: its figures by chain length (as text keys)."""
    out = subprocess.run(
        [python, "-c", _CHILD, str(rounds)], cwd=tree, capture_output=True, text=True, check=True
    ).stdout
    return dict(json.loads(out))


def main(base_python: str, base_tree: str, triples: int, rounds: int) -> dict[str, list[dict[str, Any]]]:
    """Every side's figures, one entry per triple."""
    runs: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for t in range(triples):
        order = SIDES[t % 3 :] + SIDES[: t % 3]
        for side in order:
            python, tree = (sys.executable, os.getcwd()) if side == "this" else (base_python, base_tree)
            runs[side].append(run_side(python, tree, rounds))
    return runs


def report(runs: dict[str, list[dict[str, Any]]]) -> None:
    """Median and range of each side's ``timeout`` ratio and µs added, and the per-triple A/B and A/A."""

    def span(xs: list[float], fmt: str = ".3f") -> str:
        return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}–{max(xs):{fmt}})"

    for k in ("10", "100"):
        print(f"## timeout(30) / bare chain, {k} sync steps")
        for side in SIDES:
            ratios = [r[k]["ratio"]["timeout"] for r in runs[side]]
            added = [r[k]["added"]["timeout"] for r in runs[side]]
            bare = [r[k]["us"]["bare"] for r in runs[side]]
            again = [r[k]["ratio"]["bare_again"] for r in runs[side]]
            print(
                f"{side:11} ratio {span(ratios)}  added µs {span(added, '+.2f')} on {statistics.median(bare):.2f}"
                f"  in-run A/A {min(again):.3f}–{max(again):.3f}"
            )
        first, this, again = (
            [r[k]["ratio"]["timeout"] for r in runs[side]] for side in ("base", "this", "base again")
        )
        print(f"this / base per triple: {span([b / a for a, b in zip(first, this)])}")
        print(f"base again / base (A/A): {span([b / a for a, b in zip(first, again)])}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-python", required=True, help="the interpreter whose environment runs the base tree")
    parser.add_argument("--base-tree", required=True, help="the base checkout (its working directory)")
    parser.add_argument("--triples", type=int, default=14)
    parser.add_argument("--rounds", type=int, default=61)
    args = parser.parse_args()
    report(main(args.base_python, args.base_tree, args.triples, args.rounds))
