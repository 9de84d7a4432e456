"""Front-end benchmark: parse speed for generated specs of 1,000 / 10,000 / 100,000 lines.

Run as a script (``python benchmarks/frontend_bench.py [--quick]``) or call
:func:`main`. Reports lines per second for each size and the time ratio between
consecutive sizes (10x the input should take at most 12x the time).
"""

from __future__ import annotations

import json
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
    """Best-of-``repeat`` seconds to parse a ``lines``-line spec."""
    text = generate(lines)
    source = SourceFile("bench.mce", text)
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        result = parse(source)
        best = min(best, time.perf_counter() - started)
        assert result.module is not None and not result.diagnostics, result.diagnostics[:3]
    return best


def main(quick: bool = False, sizes: list[int] | None = None) -> dict[str, object]:
    """Run the benchmark; return ``{"sizes": {lines: {"seconds", "lines_per_second"}}, "growth": {...}}``.

    ``sizes`` overrides the spec sizes (the harness's smoke run passes tiny ones).
    """
    if sizes is None:
        sizes = [1_000, 10_000] if quick else [1_000, 10_000, 100_000]
    parse(SourceFile("warmup.mce", generate(100)))  # build the Lark parser outside the timings
    results: dict[int, dict[str, float]] = {}
    for lines in sizes:
        seconds = measure(lines, repeat=3 if lines <= 10_000 else 1)
        results[lines] = {"seconds": round(seconds, 4), "lines_per_second": round(lines / seconds)}
    growth = {
        f"{small}->{large}": round(results[large]["seconds"] / results[small]["seconds"], 2)
        for small, large in zip(sizes, sizes[1:])
    }
    report: dict[str, object] = {"sizes": results, "growth": growth}
    return report


if __name__ == "__main__":
    print(json.dumps(main(quick="--quick" in sys.argv[1:]), indent=2))
