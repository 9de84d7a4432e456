"""Front-end benchmark: parse + check of a generated spec, against Lark's own parse of the same text.

Three things are timed back to back in each round, on the same text:

- **Lark**, the baseline: Lark's LALR parser with position propagation on
  mcec's grammar, used the standard way
  (``Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True).parse(text)``).
  It builds Lark's own tree only.
- **cold**: mcec's front end as ``mcec check --fast`` runs it, parse then check
  (:func:`mcec.syntax.parse`, :func:`mcec.check.check`).
- **recheck**: the same spec after one declaration changed (a step added to
  one pipeline's chain), re-parsed with :func:`mcec.syntax.incremental.reparse`
  from the previous tree, then checked.

Budgets (issue 19), each a median of the rounds' ratios, since this shared
machine's speed swings by 1.5x from one minute to the next and a ratio taken
within a round cancels most of that:

- ``cold_over_lark`` ≤ 1.5 at 1,000 lines;
- ``recheck_over_cold`` ≤ 0.2 at 1,000 lines.

Run as a script (``python benchmarks/frontend_bench.py [--quick]``) or call :func:`main`.
"""

from __future__ import annotations

import functools
import json
import platform
import statistics
import sys
import time

import lark

from mcec.check import check
from mcec.span import SourceFile
from mcec.syntax import parse
from mcec.syntax.grammar import load_grammar
from mcec.syntax.incremental import reparse

HEADER = """# generated benchmark spec
from bench.impl import S, A, E1, E2
import bench.impl as impl
state S
error E1
error E2
"""

#: Budgets: the cold front end over Lark's parse, and a re-check over the cold front end.
BUDGET_COLD_OVER_LARK = 1.5
BUDGET_RECHECK_OVER_COLD = 0.2


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


def edited(text: str) -> str:
    """``text`` with one declaration changed: a step more in the chain of the middle ``pipeline p``."""
    count = text.count("\npipeline p")
    marker = f"\npipeline p{count // 2} "
    at = text.index(marker)
    line_end = text.index("\n", at + 1)
    line = text[at:line_end]
    step = line.split("= ", 1)[1].split(" ", 1)[0]
    return text[:at] + line.replace(f"= {step} >>= ", f"= {step} >>= {step} >>= ", 1) + text[line_end:]


@functools.cache
def _lark_parser() -> lark.Lark:
    """The baseline parser: Lark's LALR on mcec's grammar, with position propagation (built once)."""
    return lark.Lark(load_grammar(), parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=False)


def _time_lark(text: str) -> float:
    started = time.perf_counter()
    _lark_parser().parse(text)
    return time.perf_counter() - started


def _time_cold(source: SourceFile) -> float:
    started = time.perf_counter()
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics[:3]
    check(parsed.module, source)
    return time.perf_counter() - started


def _time_recheck(before: SourceFile, after: SourceFile) -> float:
    previous = parse(before).module
    assert previous is not None
    started = time.perf_counter()
    parsed = reparse(previous, after)
    assert parsed.module is not None and not parsed.diagnostics
    check(parsed.module, after)
    return time.perf_counter() - started


def measure(lines: int, rounds: int) -> dict[str, float]:
    """Median seconds and ratios for a ``lines``-line spec, over ``rounds`` interleaved rounds."""
    text = generate(lines)
    before = SourceFile("bench.mce", text)
    after = SourceFile("bench.mce", edited(text))
    samples: dict[str, list[float]] = {"lark": [], "cold": [], "recheck": [], "cold_over_lark": [], "recheck_over_cold": []}
    for _ in range(rounds):
        lark_seconds = _time_lark(text)
        cold = _time_cold(after)
        recheck = _time_recheck(before, after)
        samples["lark"].append(lark_seconds)
        samples["cold"].append(cold)
        samples["recheck"].append(recheck)
        samples["cold_over_lark"].append(cold / lark_seconds)
        samples["recheck_over_cold"].append(recheck / cold)
    return {name: statistics.median(values) for name, values in samples.items()}


def main(quick: bool = False, sizes: list[int] | None = None) -> dict[str, object]:
    """Run the benchmark.

    Returns ``{"sizes": {lines: {...}}, "budgets": {...}, "meets_budgets": bool, "python": {...}}``.
    Per size: ``lark_seconds``, ``cold_seconds``, ``recheck_seconds`` (medians) and the
    ``cold_over_lark`` and ``recheck_over_cold`` ratios (medians of each round's ratio). The
    budgets apply at 1,000 lines. Rounds: 7, or 3 with ``quick``.
    """
    if sizes is None:
        sizes = [1_000] if quick else [1_000, 10_000]
    warm = SourceFile("warmup.mce", generate(100))
    _time_lark(warm.text)
    _time_cold(warm)
    rounds = 3 if quick else 7
    results: dict[int, dict[str, float]] = {}
    for lines in sizes:
        figures = measure(lines, rounds)
        results[lines] = {
            "lark_seconds": round(figures["lark"], 4),
            "cold_seconds": round(figures["cold"], 4),
            "recheck_seconds": round(figures["recheck"], 4),
            "cold_over_lark": round(figures["cold_over_lark"], 3),
            "recheck_over_cold": round(figures["recheck_over_cold"], 3),
        }
    budgeted = results.get(1_000)
    meets = budgeted is not None and (
        budgeted["cold_over_lark"] <= BUDGET_COLD_OVER_LARK and budgeted["recheck_over_cold"] <= BUDGET_RECHECK_OVER_COLD
    )
    return {
        "sizes": results,
        "budgets": {"cold_over_lark": BUDGET_COLD_OVER_LARK, "recheck_over_cold": BUDGET_RECHECK_OVER_COLD},
        "meets_budgets": meets,
        "python": {"version": platform.python_version(), "executable": sys.executable},
    }


if __name__ == "__main__":
    print(json.dumps(main(quick="--quick" in sys.argv[1:]), indent=2))
