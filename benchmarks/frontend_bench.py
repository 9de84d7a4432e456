"""Front-end benchmark (issue #3): parse + resolve time for generated specs of 1,000 / 10,000 / 100,000 lines.

"Resolve" is name resolution, the declaration phase of the checker:
``DeclarationChecker(module, DiagnosticSink()).run()`` on the parsed module
binds every top-level name and resolves every type, implementation, state and
error declaration (the references inside pipeline bodies are resolved together
with type inference, which ``checker_bench`` measures). Both are timed as
:func:`mcec.compiler.compile_source` runs them, with the cyclic garbage
collector paused; the collector's one pass over what they built, when it
resumes, is timed and reported separately (``gc_seconds``,
``lines_per_second_with_gc``).

Run as a script (``python benchmarks/frontend_bench.py [--quick]``) or call
:func:`main`. Per size it reports the parse, resolve and parse + resolve times
and lines per second; the targets apply to parse + resolve: at least 50,000
lines per second at every size and, between consecutive sizes, a time ratio
scaled to 10x the input of at most 12 (10 is linear). Times are medians of
interleaved runs (the parse + resolve figure is the median of each run's sum),
so that load from other jobs on a shared machine does not land on one size
only.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time

from mcec.check.names import DeclarationChecker
from mcec.diagnostics import DiagnosticSink
from mcec.gc_pause import gc_paused
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


#: The phases timed per size, their sum, and the garbage collector's pass afterwards.
PHASES = ("parse", "resolve", "total", "gc")


def measure(lines: int, repeat: int) -> dict[str, float]:
    """Median wall seconds per phase (``PHASES``) for a ``lines``-line spec, over ``repeat`` runs."""
    return _measure_all([lines], repeat)[lines]


def _run_once(source: SourceFile) -> dict[str, float]:
    """One parse + resolve of ``source`` as the compiler runs them, and the GC pass they cost.

    ``mcec.compiler`` pauses the cyclic GC for all its phases (a syntax tree has
    no cycles, and rescanning it during the build made big files superlinear);
    so is this. When the GC resumes, its next collection scans every object the
    phases left alive once: that pass is timed as ``gc`` (an explicit
    generation-0 collection with the tree and declarations still alive), so it
    is reported, not hidden. Everything is freed before the next run's clock.
    """
    with gc_paused():
        started = time.perf_counter()
        result = parse(source)
        parsed = time.perf_counter()
        assert result.module is not None and not result.diagnostics, result.diagnostics[:3]
        sink = DiagnosticSink()
        declared = DeclarationChecker(result.module, sink).run()
        resolved = time.perf_counter()
        gc.collect(0)
        collected = time.perf_counter()
        assert not sink.items, sink.items[:3]
        del result, declared
    return {
        "parse": parsed - started,
        "resolve": resolved - parsed,
        "total": resolved - started,
        "gc": collected - resolved,
    }


def _measure_all(sizes: list[int], repeat: int) -> dict[int, dict[str, float]]:
    """Median wall seconds per size and phase (``PHASES``); the runs of the sizes are interleaved.

    The machine is shared, so load comes and goes: interleaving spreads it over
    all sizes instead of one, and the median drops the outliers.
    """
    sources = {lines: SourceFile("bench.mce", generate(lines)) for lines in sizes}
    times: dict[int, dict[str, list[float]]] = {lines: {phase: [] for phase in PHASES} for lines in sizes}
    for _ in range(repeat):
        for lines in sizes:
            for phase, seconds in _run_once(sources[lines]).items():
                times[lines][phase].append(seconds)
    return {
        lines: {phase: statistics.median(values) for phase, values in phases.items()}
        for lines, phases in times.items()
    }


#: Targets of issue #3: lines per second at every size, and time growth for 10x the input.
TARGET_LINES_PER_SECOND = 50_000
TARGET_GROWTH_PER_10X = 12.0


def main(quick: bool = False, sizes: list[int] | None = None) -> dict[str, object]:
    """Run the benchmark.

    Returns ``{"sizes": {lines: {...}}, "growth": {"a->b": time ratio}, "targets": {...},
    "meets_targets": bool}``. Per size: ``seconds`` and ``lines_per_second`` of
    parse + resolve (what the targets apply to), ``parse_seconds``,
    ``parse_lines_per_second``, ``resolve_seconds``,
    ``resolve_lines_per_second``, ``gc_seconds`` (the collector's pass
    afterwards) and ``lines_per_second_with_gc``. ``growth`` is that of parse + resolve. Each
    time is the median of interleaved runs (5, or 3 with ``quick``; 100,000
    lines is left out with ``quick``).
    """
    if sizes is None:
        sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    _run_once(SourceFile("warmup.mce", generate(100)))  # first-call costs outside the timings
    seconds = _measure_all(sizes, repeat=3 if quick else 5)
    results = {
        lines: {
            "seconds": round(seconds[lines]["total"], 4),
            "lines_per_second": round(lines / seconds[lines]["total"]),
            "parse_seconds": round(seconds[lines]["parse"], 4),
            "parse_lines_per_second": round(lines / seconds[lines]["parse"]),
            "resolve_seconds": round(seconds[lines]["resolve"], 4),
            "resolve_lines_per_second": round(lines / seconds[lines]["resolve"]),
            "gc_seconds": round(seconds[lines]["gc"], 4),
            "lines_per_second_with_gc": round(lines / (seconds[lines]["total"] + seconds[lines]["gc"])),
        }
        for lines in sizes
    }
    growth = {
        f"{small}->{large}": round((seconds[large]["total"] / seconds[small]["total"]) * (10 * small / large), 2)
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
