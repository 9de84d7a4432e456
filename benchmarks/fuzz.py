"""A long fuzzing run of the compiler (issue #7): ``python benchmarks/fuzz.py [--seconds N]``.

The test suite runs a quick version of the same input classes
(tests/test_7_compiler_inputs.py); this script runs them for as long as you
like and reports executions and findings. Input classes, drawn in rotation:

- ``mutated``: valid specs from the grammar-aware generator (tests/spec_gen.py)
  with 1–6 token mutations (delete, duplicate, swap, insert, replace);
- ``valid``: the generated specs themselves (must compile, and the output must
  have only the expected kinds of top-level statement);
- ``text``: random Unicode text; ``bytes``: random bytes decoded as the CLI does
  (invalid UTF-8 becomes a diagnostic);
- ``deep``: nesting of parentheses / ``par`` / ``each`` / ``local`` 500 to
  3,000 deep (the test suite compiles 20,000–100,000-deep specs).

A finding is any exception escaping ``compile_source``, a generated module that
does not parse or has an unexpected top-level statement, or a valid spec that
fails to compile. Findings are written to ``benchmarks/fuzz-findings/``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from spec_gen import mutate, specs  # noqa: E402
from test_compiler_inputs import shape_problems  # noqa: E402

from mcec.compiler import compile_source  # noqa: E402
from mcec.span import SourceFile  # noqa: E402

FINDINGS = ROOT / "benchmarks" / "fuzz-findings"


def deep(rng: random.Random) -> str:
    """A spec nested 500–3,000 deep in one of four ways."""
    depth = rng.choice([500, 1_000, 3_000])
    kind = rng.choice(["parens", "par", "each", "local"])
    head = "import m\nfn a : int -> int = m.a\nfn l : int -> list[int] = m.l\n"
    if kind == "parens":
        body = "(" * depth + "a" + ")" * depth
    elif kind == "par":
        body = "par <" * depth + "a, a" + ">, a" * (depth - 1) + ">"
    elif kind == "each":
        body = "each " * depth + "a"
        return head + f"pipeline p : {'list[' * depth}int{']' * depth} -> int = {body};\n"
    else:
        body = "local " * depth + "a"
    return head + f"pipeline p : int -> int = {body};\n"


def run_one(kind: str, text: str, stats: dict[str, int], findings: list[dict[str, str]]) -> None:
    """Compile one input; record a finding if the compiler misbehaves."""
    stats[kind] = stats.get(kind, 0) + 1
    try:
        result = compile_source(SourceFile("fuzz.mce", text))
        problem = None
        if result.generated is not None:
            shape = shape_problems(result.generated.code)
            if shape:
                problem = f"unexpected top-level statements: {shape[:2]}"
        elif result.ok:
            problem = "no code and no error"
        elif kind == "valid":
            problem = "a generated well-typed spec did not compile: " + "; ".join(d.message for d in result.diagnostics[:3])
    except BaseException as exc:  # a crash is exactly what we are looking for
        if isinstance(exc, KeyboardInterrupt):
            raise
        problem = "".join(traceback.format_exception(exc))[-3000:]
    if problem is not None:
        findings.append({"kind": kind, "problem": problem, "input": text[:20_000]})


def main(seconds: float = 300.0, seed: int = 0) -> dict[str, object]:
    """Fuzz for ``seconds``; return executions per input class and the findings."""
    rng = random.Random(seed)
    stats: dict[str, int] = {}
    findings: list[dict[str, str]] = []
    pool: list[str] = []

    @settings(max_examples=200, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(spec=specs(max_depth=3))
    def collect(spec: str) -> None:
        pool.append(spec)

    started = time.monotonic()
    while time.monotonic() - started < seconds:
        if len(pool) < 50:
            collect()
        kind = rng.choice(["mutated", "mutated", "mutated", "valid", "text", "bytes", "deep"])
        if kind in ("mutated", "valid"):
            spec = pool.pop(rng.randrange(len(pool)))
            run_one(kind, mutate(spec, rng, max_mutations=6) if kind == "mutated" else spec, stats, findings)
        elif kind == "text":
            run_one(kind, "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(rng.randint(0, 400))), stats, findings)
        elif kind == "bytes":
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 2000)))
            run_one(kind, data.decode("utf-8", errors="replace"), stats, findings)
        else:
            run_one(kind, deep(rng), stats, findings)
    elapsed = time.monotonic() - started
    if findings:
        FINDINGS.mkdir(exist_ok=True)
        for index, finding in enumerate(findings):
            (FINDINGS / f"finding-{index}.json").write_text(json.dumps(finding, indent=1))
    return {"seconds": round(elapsed, 1), "executions": stats, "total": sum(stats.values()), "findings": len(findings)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    print(json.dumps(main(arguments.seconds, arguments.seed), indent=2))
