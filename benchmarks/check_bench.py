"""Benchmark of ``mcec check`` (issue 20): the whole build-time check, its ``--fast`` form, and mypy.

For each example of ``examples/`` (every folder holding a ``.mce`` spec), copied
into a temporary workspace that is the working directory of every run, warm
(each command run once before timing, so mypy's cache is filled), in
interleaved rounds (the order rotating per round), medians of wall-clock time:

- ``check``: ``mcec check SPEC`` as a user runs it, a real subprocess: parse,
  check (reading the Python modules the spec names), generate the module in
  memory, ``mypy --strict`` on it with the cache in ``.mcec/``;
- ``fast``: ``mcec check --fast SPEC``, a real subprocess;
- ``mypy``: plain ``python -m mypy --strict --follow-imports=silent`` (the
  flags mcec runs mypy with) on the generated module, written once with
  ``mcec compile --no-mypy``, with mcec's warm cache — the floor under ``check``;
- ``without``: the same ``mcec check --fast`` without class knowledge — the
  checker given no index (every question about the user's classes left to
  mypy, what ``--fast`` did before issue 20) and griffe never imported (a stub
  stands in for it), so neither the reading nor the reader's import is paid
  (:data:`WITHOUT_CLASSES`). The budget of issue 20 is this one: class
  knowledge must not make ``--fast`` slower than 1.5× (``fast_over_without``,
  the median of each round's ratio, per example);

and, in-process (this process's CPU time, so what differs is the check alone,
not the interpreter's start and imports), the front end as ``--fast`` runs it
(:func:`mcec.compiler.check_source` with the
:class:`~mcec.check.pyindex.PythonIndex` of the working directory, a fresh one
each run, as each ``mcec check`` builds its own) against the same check with
``index=False``. This ratio (``class_knowledge_ratio``) is the cost of reading
the user's modules against a check of a few milliseconds; it has no target.

And mypy's part at scale (issue 36, :func:`mypy_scaling`): for a chain of N steps (the
scaling benchmark's spec), the CPU seconds (this process's children: the command and the mypy
it starts) of ``mcec check`` against plain ``python -m mypy`` with mcec's flags on the same
generated module, each cold (a fresh cache), warm (run again), and after an edit (a pipeline
added to the spec: the generated module changes, everything it imports does not); plus
``mcec compile --no-mypy`` (mcec's own part of a check: the front end and the generation) and
``mcec check --fast``, for scale. CPU time, not wall clock: the machine is
shared, and what issue 36 measured (cold ``check`` at 1.6x the CPU of cold mypy) is CPU.

Run ``python benchmarks/check_bench.py [--quick]``; :func:`main` returns the figures.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import scaling_bench
from benchmarks.workloads import interleaved
from mcec.check.pyindex import PythonIndex, package_root
from mcec.codegen.mypy_check import CACHE_DIR
from mcec.compiler import CompileResult, check_source
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: The most class knowledge may slow the ``--fast`` check down (issue 20): ``fast_over_without``.
BUDGET_CLASS_KNOWLEDGE = 1.5
#: ``mcec check --fast ARGS`` without class knowledge (run as ``python -c``): griffe is not
#: imported (a stub module stands in for it) and the checker is given no index.
WITHOUT_CLASSES = """\
import sys, types
sys.modules["griffe"] = types.ModuleType("griffe")
from mcec.check.pyindex import PythonIndex, package_root
PythonIndex.for_directory = classmethod(lambda cls, directory=None, spec=None: False)
from mcec.cli import main
raise SystemExit(main(["check", "--fast", *sys.argv[1:]]))
"""
#: How mcec runs mypy on a generated module (mcec/codegen/mypy_check.py), less the output format.
MYPY_FLAGS = ("--strict", "--follow-imports=silent")


def example_specs() -> list[Path]:
    """One spec per example folder (the first in sorted order), relative to ``examples/``'s parent."""
    specs: dict[Path, Path] = {}
    for spec in sorted(EXAMPLES.rglob("*.mce")):
        folder = spec.relative_to(EXAMPLES).parts[0]
        specs.setdefault(EXAMPLES / folder, spec)
    return [spec.relative_to(ROOT) for spec in specs.values()]


def _workspace(folder: Path) -> Path:
    """A copy of ``examples/`` (sources only) in ``folder``, the working directory of every run."""
    shutil.copytree(EXAMPLES, folder / "examples", ignore=shutil.ignore_patterns("__pycache__", "*_mce.py", ".mcec"))
    return folder


def _run(workspace: Path, *args: str, mypypath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    if mypypath is not None:  # where the spec's package starts, as mcec tells mypy
        env["MYPYPATH"] = str(mypypath)
    done = subprocess.run([sys.executable, *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} exited {done.returncode}: {(done.stdout + done.stderr).strip()[-500:]}")
    return done


def _front_end(workspace: Path, spec: Path, *, classes: bool) -> CompileResult:
    """``check --fast``'s work on ``spec``, in this process: parse and check, with or without class knowledge."""
    source = SourceFile(str(workspace / spec), (workspace / spec).read_text(encoding="utf-8"))
    index = PythonIndex.for_directory(workspace, spec=workspace / spec) if classes else False
    result = check_source(source, index=index)
    if not result.ok:
        raise RuntimeError(f"{spec} does not check: {[d.message for d in result.diagnostics if d.is_error][:3]}")
    return result


def _generate_used(workspace: Path, spec: Path) -> None:
    """Write the generated module of every spec ``spec`` uses (§11) beside it, as a user's build
    would: plain mypy on ``spec``'s module imports them (``mcec check`` gives mypy its own copies),
    and without them the floor fails (examples/meta/meta.mce imports ``specialists_mce``)."""
    result = _front_end(workspace, spec, classes=True)
    assert result.program is not None
    stack, seen = list(result.program.uses), set()
    while stack:
        used = stack.pop()
        path = os.path.abspath(used.spec)
        if path in seen:
            continue
        seen.add(path)
        _run(workspace, "-m", "mcec", "compile", "--no-mypy", path)
        stack.extend(used.program.uses)


def class_knowledge(workspace: Path, spec: Path, rounds: int) -> dict[str, float]:
    """In-process CPU seconds of the front end with and without class knowledge, and their ratio
    (the median of each round's ratio: a ratio within one round cancels the machine's swings)."""

    def with_classes() -> None:
        _front_end(workspace, spec, classes=True)

    def without() -> None:
        _front_end(workspace, spec, classes=False)

    samples: dict[str, list[float]] = {}
    medians = interleaved({"with": with_classes, "without": without}, rounds=max(rounds, 5), inner=20, warmup=3, samples=samples)
    ratios = [w / wo for w, wo in zip(samples["with"], samples["without"])]
    return {
        "with_classes_ms": round(medians["with"] * 1000, 2),
        "without_classes_ms": round(medians["without"] * 1000, 2),
        "class_knowledge_ratio": round(statistics.median(ratios), 3),
    }


def _check_cache(workspace: Path) -> Path:
    """The mypy cache ``mcec check`` uses in ``workspace``: ``MYPY_CACHE_DIR`` when set, as mypy's own."""
    configured = os.environ.get("MYPY_CACHE_DIR")
    return Path(configured) if configured else workspace / CACHE_DIR


def measure(workspace: Path, spec: Path, rounds: int, warmup: int = 1) -> dict[str, Any]:
    """The figures of one example (see the module docstring); ``warmup`` untimed runs of each command first."""
    generated = workspace / "generated" / spec.parent.name
    _run(workspace, "-m", "mcec", "compile", "--no-mypy", "-o", str(generated), str(spec))
    [module] = generated.glob("*_mce.py")
    _generate_used(workspace, spec)
    cache = _check_cache(workspace)  # the one `mcec check` fills: both warm alike
    root = package_root(workspace / spec)
    commands = {
        "check": lambda: _run(workspace, "-m", "mcec", "check", str(spec)),
        "fast": lambda: _run(workspace, "-m", "mcec", "check", "--fast", str(spec)),
        "without": lambda: _run(workspace, "-c", WITHOUT_CLASSES, str(spec)),
        "mypy": lambda: _run(workspace, "-m", "mypy", *MYPY_FLAGS, "--cache-dir", str(cache), str(module), mypypath=root),
    }
    samples: dict[str, list[float]] = {}
    wall = interleaved(commands, rounds=rounds, warmup=warmup, clock=time.perf_counter, samples=samples)
    figures: dict[str, Any] = {f"{name}_seconds": round(seconds, 3) for name, seconds in wall.items()}
    figures["check_over_mypy"] = round(wall["check"] / wall["mypy"], 2)
    figures["check_over_fast"] = round(wall["check"] / wall["fast"], 2)
    figures["fast_over_without"] = round(statistics.median(f / w for f, w in zip(samples["fast"], samples["without"])), 3)
    figures.update(class_knowledge(workspace, spec, rounds))
    return figures


def _cpu(workspace: Path, *args: str, mypypath: Path | None = None) -> float:
    """CPU seconds (user and system) of ``python ARGS`` in ``workspace`` and every process it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _run(workspace, *args, mypypath=mypypath)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2)


#: What the edit of :func:`mypy_scaling` adds to the spec: the generated module changes, its imports do not.
EDIT = "pipeline edited : int -> int ! E1 = a >>= b;\n"


def mypy_scaling(size: int, plain_cache: str = "plain-cache") -> dict[str, Any]:
    """The CPU seconds of ``mcec check`` and of plain mypy on a chain of ``size`` steps, cold, warm
    and after an edit (module docstring), and the ``mypy_started`` / ``mypy_reused`` counts
    of ``check``'s JSON summary, which say whether the warm check started mypy. Plain mypy
    starts cold in ``plain_cache`` (a folder of its own, unless the smoke run gives it a warm one)."""
    folder = scaling_bench.workspace(size)
    try:
        spec = folder / "bench" / "flow.mce"
        spec.write_text(scaling_bench.chain(size), encoding="utf-8")
        compile_cpu = _cpu(folder, "-m", "mcec", "compile", "--no-mypy", "-o", "plain", "bench/flow.mce")
        spec.write_text(scaling_bench.chain(size) + EDIT, encoding="utf-8")
        _run(folder, "-m", "mcec", "compile", "--no-mypy", "-o", "edited", "bench/flow.mce")
        spec.write_text(scaling_bench.chain(size), encoding="utf-8")
        plain = ("-m", "mypy", *MYPY_FLAGS, "--cache-dir", plain_cache)
        figures: dict[str, Any] = {
            "compile_cpu": compile_cpu,
            "mypy_cold_cpu": _cpu(folder, *plain, "plain/flow_mce.py", mypypath=folder),
            "mypy_warm_cpu": _cpu(folder, *plain, "plain/flow_mce.py", mypypath=folder),
            "mypy_edited_cpu": _cpu(folder, *plain, "edited/flow_mce.py", mypypath=folder),
            "fast_cpu": _cpu(folder, "-m", "mcec", "check", "--fast", "bench/flow.mce"),
            "check_cold_cpu": _cpu(folder, "-m", "mcec", "check", "bench/flow.mce"),
        }
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        warm = _run(folder, "-m", "mcec", "check", "--format", "json", "bench/flow.mce")
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        figures["check_warm_cpu"] = round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2)
        summary = json.loads(warm.stdout.splitlines()[-1])["summary"]
        figures["warm_mypy_started"], figures["warm_mypy_reused"] = summary["mypy_started"], summary["mypy_reused"]
        spec.write_text(scaling_bench.chain(size) + EDIT, encoding="utf-8")
        figures["check_edited_cpu"] = _cpu(folder, "-m", "mcec", "check", "bench/flow.mce")
        figures["cold_check_over_mypy"] = round(figures["check_cold_cpu"] / figures["mypy_cold_cpu"], 2)
        # mcec's own part of a check is the compile (front end and generation) without mypy
        figures["cold_check_less_compile_over_mypy"] = round(
            (figures["check_cold_cpu"] - compile_cpu) / figures["mypy_cold_cpu"], 2
        )
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(quick: bool = False, smoke: bool = False) -> dict[str, Any]:
    """Run the benchmark: every example (``smoke``: the smallest, greeter, not warmed up: its figures mean
    nothing), 7 rounds (``quick``: 3; ``smoke``: 1); and mypy's part at 1,000 and 10,000 steps
    (``quick``: 100 and 1,000; ``smoke``: 10), once each.

    Returns ``{"examples": {spec: figures}, "rounds": …, "budget": …, "worst_fast_over_without": …, "meets_budget": …,
    "mypy_scaling": {steps: figures}}``.
    """
    specs = [s for s in example_specs() if s.parent.name == "greeter"] if smoke else example_specs()
    rounds = 1 if smoke else 3 if quick else 7
    examples: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcec-check-bench-") as folder:
        workspace = _workspace(Path(folder))
        for spec in specs:
            examples[spec.as_posix()] = measure(workspace, spec, rounds, warmup=0 if smoke else 1)
    worst = max(e["fast_over_without"] for e in examples.values())
    sizes = [10] if smoke else [100, 1_000] if quick else [1_000, 10_000]
    # a smoke run's figures mean nothing: under the test suite (which sets MYPY_CACHE_DIR) its plain
    # mypy shares the session's warm cache instead of starting cold (~20 s each)
    plain_cache = (os.environ.get("MYPY_CACHE_DIR") if smoke else None) or "plain-cache"
    return {
        "examples": examples,
        "rounds": rounds,
        "budget": BUDGET_CLASS_KNOWLEDGE,
        "worst_fast_over_without": worst,
        "meets_budget": worst <= BUDGET_CLASS_KNOWLEDGE,
        "mypy_scaling": {str(size): mypy_scaling(size, plain_cache) for size in sizes},
    }


def print_detail(figures: dict[str, Any]) -> None:
    """One table row per example."""
    print(f"{figures['rounds']} interleaved rounds, medians; wall clock, front end CPU time\n")
    print(
        "| example | check s | --fast s | --fast without classes s | mypy s | check / mypy | --fast / without "
        "| front end ms: classes / none (ratio) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for spec, e in figures["examples"].items():
        print(
            f"| {spec} | {e['check_seconds']:.2f} | {e['fast_seconds']:.2f} | {e['without_seconds']:.2f} | "
            f"{e['mypy_seconds']:.2f} | {e['check_over_mypy']:.2f} | {e['fast_over_without']:.2f} | "
            f"{e['with_classes_ms']:.1f} / {e['without_classes_ms']:.1f} ({e['class_knowledge_ratio']:.2f}) |"
        )
    print("\nmypy's part at scale (issue 36), CPU seconds of the command and the mypy it starts, one run each\n")
    print(
        "| steps | check cold / plain mypy cold | check warm / mypy warm (mypy started, reused) "
        "| check / mypy after an edit | compile --no-mypy | check --fast | (cold check - compile) / cold mypy |"
    )
    print("|---|---|---|---|---|---|---|")
    for steps, m in figures["mypy_scaling"].items():
        print(
            f"| {int(steps):,} | {m['check_cold_cpu']:.2f} / {m['mypy_cold_cpu']:.2f} | "
            f"{m['check_warm_cpu']:.2f} / {m['mypy_warm_cpu']:.2f} ({m['warm_mypy_started']}, {m['warm_mypy_reused']}) | "
            f"{m['check_edited_cpu']:.2f} / {m['mypy_edited_cpu']:.2f} | {m['compile_cpu']:.2f} | {m['fast_cpu']:.2f} | "
            f"{m['cold_check_less_compile_over_mypy']:.2f} |"
        )


if __name__ == "__main__":
    out = main(quick="--quick" in sys.argv[1:], smoke="--smoke" in sys.argv[1:])
    print_detail(out)
    print(json.dumps(out, indent=2))
