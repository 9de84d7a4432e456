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

The baseline, measured in the same rounds: Lark's own LALR parser with
position propagation, the design issue #3 suggested, used the standard way
(``Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True)``,
then ``.parse(text)``) on the same text and grammar. It builds Lark's tree
only, no syntax tree and no resolution, so it does less than what it is
compared with. Each round times both back to back and ``times_lark`` is the
median of the rounds' ratios (Lark's time over parse + resolve): this
machine's speed swings by 1.5x and more from one minute to the next, and a
ratio taken within a round cancels most of that, where lines per second do
not. Lark takes about 3 seconds per 10,000 lines, so the baseline runs up to
``BASELINE_MAX_LINES`` only.
"""

from __future__ import annotations

import functools
import gc
import json
import platform
import statistics
import sys
import time

import lark

from mcec.check.names import DeclarationChecker
from mcec.diagnostics import DiagnosticSink
from mcec.gc_pause import gc_paused
from mcec.parser import load_grammar, parse
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

#: The largest size the Lark baseline runs at (about 30 seconds a run at 100,000 lines).
BASELINE_MAX_LINES = 10_000


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


@functools.cache
def _lark_parser() -> lark.Lark:
    """The baseline parser: Lark's LALR on mcec's grammar, with position propagation (built once)."""
    return lark.Lark(load_grammar(), parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=False)


def _run_baseline(text: str) -> float:
    """Wall seconds of one Lark LALR parse of ``text`` (the tree only), with the collector paused as for mcec."""
    parser = _lark_parser()
    with gc_paused():
        started = time.perf_counter()
        tree = parser.parse(text)
        seconds = time.perf_counter() - started
        del tree
    return seconds


def _measure_all(sizes: list[int], repeat: int, baseline: bool = False) -> dict[int, dict[str, float]]:
    """Median wall seconds per size and phase (``PHASES``); the runs of the sizes are interleaved.

    The machine is shared, so load comes and goes: interleaving spreads it over
    all sizes instead of one, and the median drops the outliers. With
    ``baseline``, sizes up to ``BASELINE_MAX_LINES`` also get ``lark`` (the
    baseline's median seconds) and ``times_lark`` (the median over rounds of
    the baseline's time over parse + resolve, each pair timed back to back).
    """
    sources = {lines: SourceFile("bench.mce", generate(lines)) for lines in sizes}
    times: dict[int, dict[str, list[float]]] = {lines: {phase: [] for phase in PHASES} for lines in sizes}
    for _ in range(repeat):
        for lines in sizes:
            ours = _run_once(sources[lines])
            for phase, seconds in ours.items():
                times[lines][phase].append(seconds)
            if baseline and lines <= BASELINE_MAX_LINES:
                lark_seconds = _run_baseline(sources[lines].text)
                times[lines].setdefault("lark", []).append(lark_seconds)
                times[lines].setdefault("times_lark", []).append(lark_seconds / ours["total"])
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
    "meets_targets": bool, "python": {"version": ..., "executable": ...}}``: the interpreter is
    part of the result because two builds of the same CPython version ran this benchmark 10-30%
    apart on one machine (benchmarks/README.md §). Per size: ``seconds`` and
    ``lines_per_second`` of parse + resolve (what the targets apply to), ``parse_seconds``,
    ``parse_lines_per_second``, ``resolve_seconds``, ``resolve_lines_per_second``,
    ``gc_seconds`` (the collector's pass afterwards) and ``lines_per_second_with_gc``; up to
    ``BASELINE_MAX_LINES``, ``lark_lines_per_second`` (the baseline) and ``times_lark`` (how
    many times faster than the baseline parse + resolve ran, the median of the rounds' ratios).
    ``growth`` is that of parse + resolve. Each time is the median of interleaved runs (5, or 3
    with ``quick``; 100,000 lines is left out with ``quick``).
    """
    if sizes is None:
        sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    _run_once(SourceFile("warmup.mce", generate(100)))  # first-call costs outside the timings
    _run_baseline(generate(100))  # and the baseline's: building Lark's table
    seconds = _measure_all(sizes, repeat=3 if quick else 5, baseline=True)
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
            **_baseline_figures(lines, seconds[lines]),
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
        "python": {"version": platform.python_version(), "executable": sys.executable},
    }


def _baseline_figures(lines: int, seconds: dict[str, float]) -> dict[str, float]:
    """The baseline's lines per second and ``times_lark`` for one size, if it ran there."""
    if "lark" not in seconds:
        return {}
    return {
        "lark_lines_per_second": round(lines / seconds["lark"]),
        "times_lark": round(seconds["times_lark"], 1),
    }


if __name__ == "__main__":
    print(json.dumps(main(quick="--quick" in sys.argv[1:]), indent=2))
