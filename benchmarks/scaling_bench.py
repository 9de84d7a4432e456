"""Benchmark of how the front end and the code generator scale with the size of a spec (issue 36, items 2-3).

Two shapes, each at 1,000 and 10,000 (``--sizes`` to change):

- ``chain``: one pipeline of N steps in one flat chain, ``a >>= b >>= a >>= …``;
- ``decls``: N declarations, half ``fn`` s and half ``pipeline`` s that call them.

For each shape and size, in a fresh subprocess whose working directory holds the
Python module the spec names (``bench/impl.py``, so class knowledge is read as
``mcec check --fast`` reads it), best of a few rounds, CPU seconds of:

- ``parse`` and ``check``: :func:`mcec.syntax.parse` and :func:`mcec.check.check`
  called directly (no index);
- ``check_fast``: :func:`mcec.compiler.check_source`, what ``mcec check --fast`` runs;
- ``compile``: :func:`mcec.compiler.compile_source`, what ``mcec compile`` runs
  before mypy (parse, check, emit, format, compile and source map);
- ``emit`` and ``format``: the first two steps of :func:`mcec.codegen.generate`
  (building the libcst module, laying it out), as it runs them;

and the peak resident memory (``resource.getrusage``) of another fresh process
running nothing but compile (what it held after its imports: ``base_mb``).
``parse`` and ``check`` run with the cycle collector paused, as the facade runs them. Reported: the seconds per phase,
the peak memory, and the growth exponent of each from the smallest size to the
largest, ``log(t_big / t_small) / log(big / small)`` (memory: of peak minus base):
1.0 is linear; the targets of issue 36 are ≤ 1.1, and peak memory under 300 MB
for 10,000 declarations.

Run ``python benchmarks/scaling_bench.py [--quick] [--sizes=1000,10000] [--no-emit]``;
:func:`main` returns the figures.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEADER = """from bench.impl import S, E1
import bench.impl as impl
state S
error E1
step a : int -> str ! E1 = impl.a
fn   b : str -> int = impl.b
"""

#: The targets of issue 36: growth exponent from 1,000 to 10,000, and peak MB at 10,000 declarations.
TARGET_EXPONENT = 1.1
TARGET_PEAK_MB = 300


def chain(n: int) -> str:
    """One pipeline of ``n`` steps (``n`` even) in one flat chain."""
    parts = ["a" if i % 2 == 0 else "b" for i in range(n - n % 2)]
    return HEADER + f"pipeline p : int -> int ! E1 = {' >>= '.join(parts)};\n"


def decls(n: int) -> str:
    """``n`` declarations: ``n / 2`` fns and as many pipelines, each calling its fn and the previous one."""
    out = [HEADER]
    for i in range(n // 2):
        out.append(f"fn f{i} : int -> int = impl.f{i}\n")
        previous = f"f{i - 1}" if i else "b"
        glue = f"f{i} >>= {previous}" if i else "a >>= b >>= f0"
        out.append(f"pipeline p{i} : int -> int ! E1 = a >>= b >>= {glue};\n")
    return "".join(out)


SHAPES: dict[str, Callable[[int], str]] = {"chain": chain, "decls": decls}


def impl_module(n: int) -> str:
    """The Python module ``bench.impl`` the specs of size ``n`` name, for the class-knowledge reading of ``--fast``."""
    out = [
        "from agentmonad import Ok, Outcome\n\n",
        "class S: ...\n\n",
        "class E1(Exception): ...\n\n",
        "def a(state: S, value: int) -> Outcome[S, E1, str]:\n    return Ok(str(value), state)\n\n",
        "def b(value: str) -> int:\n    return len(value)\n\n",
    ]
    out += [f"def f{i}(value: int) -> int:\n    return value + {i}\n\n" for i in range(n // 2)]
    return "".join(out)


def workspace(n: int) -> Path:
    """A temporary folder holding ``bench/impl.py`` for size ``n``: the working directory of the measuring child."""
    folder = Path(tempfile.mkdtemp(prefix="mcec-scaling-"))
    (folder / "bench").mkdir()
    (folder / "bench" / "__init__.py").write_text("")
    (folder / "bench" / "impl.py").write_text(impl_module(n))
    return folder

#: The measuring child: argv = shape, size, repeat, mode ("compile": compile_source alone, and its peak
#: memory; "phases": the phases one by one); prints one JSON line.
CHILD = """
import json, resource, sys, time
from benchmarks.scaling_bench import SHAPES
from mcec.check import check
from mcec.codegen import header_lines
from mcec.codegen import layout as layout_module
from mcec.codegen.emitter import Emitter
from mcec.gcpause import without_cycle_collection
from mcec.compiler import check_source, compile_source
from mcec.span import SourceFile
from mcec.syntax import parse
shape, size, repeat, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lay = getattr(layout_module, "layout_lines", layout_module.layout)
text = SHAPES[shape](size)
compile_source(SourceFile("warm.mce", SHAPES[shape](10)), index=False)  # imports, the parser: before timing
def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = rss_mb()
best = {}
def keep(name, seconds):
    best[name] = min(best.get(name, float("inf")), seconds)
for _ in range(repeat):
    if mode == "compile":
        t0 = time.process_time()
        compiled = compile_source(SourceFile("bench.mce", text))  # what `mcec compile` runs (without mypy)
        t1 = time.process_time()
        assert compiled.generated is not None, compiled.diagnostics[:3]
        del compiled
        keep("compile", t1 - t0)
        continue
    source = SourceFile("bench.mce", text)
    with without_cycle_collection():  # as the facade runs them
        t0 = time.process_time()
        parsed = parse(source)
        t1 = time.process_time()
        assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics[:3]
        checked = check(parsed.module, source, None)
        t2 = time.process_time()
    assert checked.program is not None, checked.diagnostics[:3]
    del parsed
    t2a = time.process_time()
    fast = check_source(SourceFile("bench.mce", text))  # what `mcec check --fast` runs, class knowledge and all
    t3 = time.process_time()
    assert fast.ok, fast.diagnostics[:3]
    del fast
    keep("parse", t1 - t0)
    keep("check", t2 - t1)
    keep("check_fast", t3 - t2a)
    if mode == "phases+emit":
        with without_cycle_collection():  # the first two steps of generate, as it runs them
            t4 = time.process_time()
            emitter = Emitter(checked.program)
            module = emitter.module(header_lines(checked.program))
            t5 = time.process_time()
            lay(module)
            t6 = time.process_time()
        del emitter, module
        keep("emit", t5 - t4)
        keep("format", t6 - t5)
    del checked
print(json.dumps({"seconds": best, "base_mb": base, "peak_mb": rss_mb()}))
"""


def _child(shape: str, size: int, repeat: int, mode: str, folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, shape, str(size), str(repeat), mode],
        capture_output=True, text=True, cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"{shape} {size} {mode}: {done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def measure(shape: str, size: int, *, repeat: int, emit: bool) -> dict[str, Any]:
    """One shape at one size: best seconds per phase (one fresh interpreter), and with ``emit``
    compile's seconds and peak memory (another, running nothing but compile)."""
    folder = workspace(size if shape == "decls" else 0)
    try:
        phases = _child(shape, size, repeat, "phases+emit" if emit else "phases", folder)
        if not emit:
            return phases
        compiled = _child(shape, size, repeat, "compile", folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    seconds = {**compiled["seconds"], **phases["seconds"]}
    return {"seconds": seconds, "base_mb": compiled["base_mb"], "peak_mb": compiled["peak_mb"]}


def exponent(small: float, big: float, ratio: float) -> float:
    """The growth exponent from ``small`` to ``big`` over a size ``ratio``: 1.0 is linear."""
    return round(math.log(max(big, 1e-9) / max(small, 1e-9)) / math.log(ratio), 2)


def main(quick: bool = False, sizes: list[int] | None = None, emit: bool = True) -> dict[str, object]:
    """Run the benchmark; returns, per shape, the figures per size and the growth exponents."""
    sizes = sizes or [1_000, 10_000]
    figures: dict[str, object] = {}
    for shape in SHAPES:
        rows = {size: measure(shape, size, repeat=2 if quick else 3, emit=emit) for size in sizes}
        small, big = sizes[0], sizes[-1]
        lo, hi = rows[small]["seconds"], rows[big]["seconds"]
        assert isinstance(lo, dict) and isinstance(hi, dict)
        exponents = {phase: exponent(lo[phase], hi[phase], big / small) for phase in hi}
        grown = [float(rows[s]["peak_mb"]) - float(rows[s]["base_mb"]) for s in (small, big)]
        if grown[0] >= 5:  # below a few MB the growth is noise (pages the allocator kept)
            exponents["memory"] = exponent(grown[0], grown[1], big / small)
        figures[shape] = {"sizes": {str(s): rows[s] for s in sizes}, "exponents": exponents}
    return figures


if __name__ == "__main__":
    args = sys.argv[1:]
    chosen = next((a.split("=", 1)[1] for a in args if a.startswith("--sizes=")), None)
    print(json.dumps(
        main(
            quick="--quick" in args,
            sizes=[int(s) for s in chosen.split(",")] if chosen else None,
            emit="--no-emit" not in args,
        ),
        indent=2,
    ))
