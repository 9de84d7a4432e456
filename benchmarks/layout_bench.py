"""Generation time end to end with mcec's layout against plain black (issue 30).

``python -m benchmarks.layout_bench [STEPS …]``: for each example spec and a chain of each
``STEPS`` (default 1,000) trivial steps, the median time of parse + check + emit + format +
source map, formatted by :mod:`mcec.codegen.layout` (what ``generate`` does) and by running
``black.format_str`` over the whole module, and whether the two texts are the same.
"""

from __future__ import annotations

import glob
import statistics
import sys
import time
from collections.abc import Callable

from benchmarks import workloads as w
from mcec.check import check
from mcec.check.typed import Program
from mcec.codegen import Generated, generate, header_lines
from mcec.codegen.emitter import Emitter
from mcec.codegen.layout import black_module
from mcec.codegen.sourcemap import build_source_map
from mcec.span import SourceFile
from mcec.syntax import parse


def program_of(path: str, text: str) -> Program | None:
    """The checked program, or None for a spec that needs the Python index to check (uses)."""
    source = SourceFile(path, text)
    parsed = parse(source)
    checked = check(parsed.module, source) if parsed.module is not None else None
    return checked.program if checked is not None else None


def with_layout(program: Program) -> str:
    """What ``mcec compile`` does: the layout, black only on long lines."""
    return generate(program).code


def with_black(program: Program) -> str:
    """Plain black over the whole module, then the same source map."""
    emitter = Emitter(program)
    module = emitter.module(header_lines(program))
    code = black_module(module.code)
    Generated(code, build_source_map(module, emitter.spans, code, emitter.hints))
    return code


def timed(fn: Callable[[Program], str], path: str, text: str, rounds: int) -> tuple[float, str]:
    """Median seconds of ``rounds`` runs (parse and check included), and the output."""
    times, out = [], ""
    for _ in range(rounds):
        start = time.perf_counter()
        program = program_of(path, text)
        assert program is not None
        out = fn(program)
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main(steps: list[int]) -> None:
    """Print one line per spec: lines, both times, their ratio, and whether the texts agree."""
    cases = [(p, open(p, encoding="utf-8").read()) for p in sorted(glob.glob("examples/**/*.mce", recursive=True))]
    cases += [(f"chain{n}.mce", w.chain_spec(n, False)) for n in steps]
    for path, text in cases:
        if program_of(path, text) is None:
            print(f"{path}: skipped (checks only with its Python index)")
            continue
        rounds = 1 if text.count("\n") > 5_000 else 5
        fast, ours = timed(with_layout, path, text, rounds)
        slow, theirs = timed(with_black, path, text, rounds)
        print(
            f"{path:40s} {ours.count(chr(10)):7,d} lines  layout {fast * 1000:9.1f} ms  "
            f"black {slow * 1000:9.1f} ms  ×{slow / fast:5.2f}  same text: {ours == theirs}",
            flush=True,
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1_000])
