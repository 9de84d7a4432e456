"""Benchmark of the checker: CPU time of ``mcec.check.check`` alone (parsing excluded).

Shapes, each at 1,000, 10,000 and 100,000 steps:

- ``chain``: one pipeline ``s0 >>= s1 >>= …`` over a few alternating steps;
- ``wide_par``: one ``par < … >`` with that many branches;
- ``deep``: nested ``par <local (…), f>`` groups, as deep as the parser allows
  (:data:`mcec.syntax.MAX_DEPTH`), repeated in pipelines to make up the size.

Run ``python benchmarks/checker_bench.py [--quick]``; ``main()`` returns the
figures as a dict (seconds and steps per second per shape and size, plus the
10×-growth ratios) so tests or CI can assert on them.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Callable

from mcec.check import check
from mcec.gcpause import without_cycle_collection
from mcec.span import SourceFile
from mcec.syntax import MAX_DEPTH, Module, parse

HEADER = """from bench.impl import S, E1, E2
import bench.impl as impl
state S
error E1
error E2
step a : int -> str ! E1 = impl.a
step b : str -> int ! E2 = impl.b
fn   f : int -> int = impl.f
fn   g : int -> tuple[int, int] = impl.g
"""


def chain(n: int) -> str:
    """A pipeline of ``n`` steps in one flat chain."""
    parts = ["a" if i % 2 == 0 else "b" for i in range(n - n % 2)]
    return HEADER + f"pipeline p : int -> int ! E1 | E2 = {' >>= '.join(parts)};\n"


def wide_par(n: int) -> str:
    """One ``par`` with ``n`` branches (alternating steps and fns)."""
    branches = ", ".join("f" if i % 2 else "(a >>= b)" for i in range(n // 2 + 1))
    return HEADER + f"pipeline p : int -> tuple = par <{branches}>;\n".replace(
        "tuple", "tuple[" + ", ".join(["int"] * (n // 2 + 1)) + "]"
    )


def deep(n: int) -> str:
    """Pipelines of nested ``par <local (…), f>`` groups, as deep as the parser allows, ``n // 2`` groups in all."""
    levels = (MAX_DEPTH - 2) // 2  # two nodes a level: the par and the local
    expr, out = "f", "int"
    for _ in range(levels):
        expr = f"par <local ({expr}), f>"
        out = f"tuple[{out}, int]"
    count = max(1, (n // 2) // levels)
    pipelines = "".join(f"pipeline p{i} : int -> {out} = {expr};\n" for i in range(count))
    return HEADER + pipelines


SHAPES: dict[str, Callable[[int], str]] = {"chain": chain, "wide_par": wide_par, "deep": deep}


def _parse(text: str) -> tuple[Module, SourceFile]:
    source = SourceFile("bench.mce", text)
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics[:3]
    return parsed.module, source


def _time_check(module: Module, source: SourceFile, repeat: int) -> float:
    """The best of ``repeat`` checks of ``module``, each timed as the compiler runs it.

    As :mod:`mcec.compiler` does, the cycle collector is paused during the check
    (:func:`~mcec.gcpause.without_cycle_collection`), and the heap is collected before
    it: unpaused, the check paid for full collections over whatever this process held
    (the benchmarks run before this one in ``python -m benchmarks``, the trees of the
    larger shapes) — 246× growth per 10× in the full run against 10–17× alone. The
    previous result is freed outside the timed part too (its tree is as big as the check's).
    The time is this process's CPU time, as the harness's other CPU-bound benchmarks use: on
    the shared machine, wall-clock time counted other processes' turns on the cores.
    """
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        with without_cycle_collection():
            start = time.process_time()
            result = check(module, source)
            best = min(best, time.process_time() - start)
        assert result.program is not None, result.diagnostics[:3]
        del result
    return best


def main(quick: bool = False, sizes: list[int] | None = None) -> dict[str, object]:
    """Run the benchmark; ``quick`` stops at 10,000 steps; ``sizes`` overrides
    the sizes (the harness's smoke run passes tiny ones). Returns the figures."""
    if sizes is None:
        sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    figures: dict[str, object] = {}

    for shape, make in SHAPES.items():
        rows: dict[str, dict[str, float]] = {}
        for size in sizes:
            module, source = _parse(make(size))
            seconds = _time_check(module, source, repeat=7 if size < 100_000 else 2)  # small sizes: more tries against noise
            rows[str(size)] = {"seconds": round(seconds, 4), "steps_per_second": round(size / seconds)}
        ratios = [
            round(rows[str(big)]["seconds"] / rows[str(small)]["seconds"], 2)
            for small, big in zip(sizes, sizes[1:])
        ]
        figures[shape] = {"sizes": rows, "growth_per_10x": ratios}
    return figures


if __name__ == "__main__":
    print(json.dumps(main(quick="--quick" in sys.argv[1:]), indent=2))
