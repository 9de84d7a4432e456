"""Front-end benchmark: parse speed for generated specs of 1,000 / 10,000 / 100,000 lines.

Run as a script (``python benchmarks/frontend_bench.py [--quick]``) or call
:func:`main`. Reports lines per second for each size (target: at least 50,000)
and, between consecutive sizes, the time ratio scaled to 10x the input (target:
at most 12; 10 is linear). Times are medians of interleaved runs, so that load
from other jobs on a shared machine does not land on one size only.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from mcec.parser import parse
from mcec.span import SourceFile

HEADER = """# generated benchmark spec
from bench.impl import S, A, E1, E2
import bench.impl as impl
state S
error E1
error E2
"""


def generate(lines: int) -> str:
    """A spec of about ``lines`` lines mixing declarations, both pipeline forms and every expression form."""
    out = [HEADER]
    count = HEADER.count("\n")
    index = 0
    while count < lines:
        i = index
        out.append(
            f"step s{i} : A -> A ! E1 = impl.s{i}\n"
            f"fn f{i} : list[A] -> dict[str, A | None] = impl.f{i}\n"
            f"# pipeline {i}\n"
            f"pipeline p{i} : A -> A ! E1 | E2 = s{i} >>= par <s{i}, local s{i}> catch E1 => f{i} orelse s{i};\n"
            f"pipeline q{i} : list[A] -> list[A] {{\n"
            f"    step s{i} >>= s{i};\n"
            f"    each(limit=4) (s{i} >>= s{i});\n"
            f"    par <s{i}, s{i}, s{i}>;\n"
            f"}}\n"
        )
        count += 9
        index += 1
    return "".join(out)


def measure(lines: int, repeat: int) -> float:
    """Median seconds (wall clock) to parse a ``lines``-line spec, over ``repeat`` runs."""
    return _measure_all([lines], repeat)[lines]


def _measure_all(sizes: list[int], repeat: int) -> dict[int, float]:
    """Median wall seconds per size; the runs of the sizes are interleaved.

    The machine is shared, so load comes and goes: interleaving spreads it over
    all sizes instead of one, and the median drops the outliers. The previous
    run's tree is freed before the clock starts, so its deallocation is not
    charged to the next parse.
    """
    sources = {lines: SourceFile("bench.mce", generate(lines)) for lines in sizes}
    times: dict[int, list[float]] = {lines: [] for lines in sizes}
    for _ in range(repeat):
        for lines in sizes:
            result = None
            started = time.perf_counter()
            result = parse(sources[lines])
            times[lines].append(time.perf_counter() - started)
            assert result.module is not None and not result.diagnostics, result.diagnostics[:3]
            del result
    return {lines: statistics.median(values) for lines, values in times.items()}


#: Targets of issue #3: lines per second at every size, and time growth for 10x the input.
TARGET_LINES_PER_SECOND = 50_000
TARGET_GROWTH_PER_10X = 12.0


def main(quick: bool = False, sizes: list[int] | None = None) -> dict[str, object]:
    """Run the benchmark.

    Returns ``{"sizes": {lines: {"seconds", "lines_per_second"}}, "growth": {"a->b": time ratio},
    "targets": {...}, "meets_targets": bool}``; ``seconds`` is the median of
    interleaved runs (5, or 3 with ``quick``; 100,000 lines is left out with
    ``quick``).
    """
    if sizes is None:
        sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    parse(SourceFile("warmup.mce", generate(100)))  # build the parse table outside the timings
    seconds = _measure_all(sizes, repeat=3 if quick else 5)
    results = {
        lines: {"seconds": round(seconds[lines], 4), "lines_per_second": round(lines / seconds[lines])}
        for lines in sizes
    }
    growth = {
        f"{small}->{large}": round((seconds[large] / seconds[small]) * (10 * small / large), 2)
        for small, large in zip(sizes, sizes[1:])
    }
    meets = all(r["lines_per_second"] >= TARGET_LINES_PER_SECOND for r in results.values()) and all(
        g <= TARGET_GROWTH_PER_10X for g in growth.values()
    )
    return {
        "sizes": results,
        "growth": growth,
        "targets": {"lines_per_second": TARGET_LINES_PER_SECOND, "growth_per_10x": TARGET_GROWTH_PER_10X},
        "meets_targets": meets,
    }


if __name__ == "__main__":
    print(json.dumps(main(quick="--quick" in sys.argv[1:]), indent=2))
