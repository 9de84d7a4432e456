"""Pure fns at the floor (issue 48 item 1): a compiled chain of fns against the same calls by hand.

Run ``python -m benchmarks.fn_bench [--quick] [--baseline TREE]``.

1. **fn chain**: a pipeline of 1,000 ``fn inc : int -> int`` (``x + 1``), compiled, against
   hand-written ``value = inc(value)`` a thousand times in one ``async def`` returning
   ``Ok(value, state)``; target ≤ 1.1×.
2. **step chain**: the compiled 1,000-step chain of trivial sync steps against the
   hand-written floor (``workloads.straight_line``), the codegen benchmark's comparison;
   target ≤ 1.05× (what the steps cost must not move when fns change).

Both sides run interleaved in one process (:func:`benchmarks.workloads.ainterleaved`, CPU
time, median of the rounds), the hand-written side twice for the A/A (``hand_again``,
``floor_again``). ``--baseline TREE`` (a checkout, e.g. ``git worktree add --detach /tmp/main
main``) also compiles both specs with that tree's compiler (a subprocess with the tree on
``PYTHONPATH``) and times its generated code in the same rounds, on this process's runtime:
the A/B of the code generator, without process-to-process noise.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from typing import Any

from agentmonad import Ok
from benchmarks import workloads as w

TARGET_FN = 1.1
TARGET_STEP = 1.05
LENGTH = 1_000


#: The fn's module, written to a folder of its own (:func:`impl_folder`) so that a baseline
#: checkout's compiler, whose ``benchmarks`` package does not have it, finds it too.
IMPL_MODULE = "mcec_fn_bench_impl"
IMPL = "def inc(value: int) -> int:\n    return value + 1\n"


def impl_folder() -> str:
    """A folder holding :data:`IMPL_MODULE`, put on ``sys.path`` (made once per process)."""
    folder = os.path.join(tempfile.gettempdir(), "mcec-fn-bench")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{IMPL_MODULE}.py")
    if not os.path.exists(path) or open(path, encoding="utf-8").read() != IMPL:
        with open(path, "w", encoding="utf-8") as out:
            out.write(IMPL)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return folder


def fn_chain_spec(n: int) -> str:
    """One pipeline ``p : int -> int`` of ``n`` fns ``inc`` (``x + 1``)."""
    chain = " >>= ".join(["inc"] * n)
    return f"import {IMPL_MODULE} as impl\nstate int\nfn inc : int -> int = impl.inc\npipeline p : int -> int = {chain};\n"


def hand_written(n: int) -> Any:
    """``async def`` with ``value = inc(value)`` ``n`` times, returning ``Ok(value, state)``."""
    lines = ["async def hand(state, value):", *["    value = inc(value)"] * n, "    return Ok(value, state)"]
    impl_folder()
    import mcec_fn_bench_impl as impl

    namespace: dict[str, Any] = {"Ok": Ok, "inc": impl.inc}
    exec(compile("\n".join(lines), f"<hand-written {n} fns>", "exec"), namespace)
    return namespace["hand"]


#: What the baseline's subprocess runs: its compiler on the spec read from stdin.
_COMPILE = "import sys\nfrom benchmarks import workloads as w\nsys.stdout.write(w.compile_text(sys.stdin.read()))\n"


def compiled_by(tree: str, text: str) -> str:
    """``text`` compiled by the compiler of the checkout ``tree``."""
    env = dict(os.environ, PYTHONPATH=f"{tree}:{tree}/runtime:{impl_folder()}")
    done = subprocess.run(
        [sys.executable, "-c", _COMPILE], input=text, env=env, cwd=tree, capture_output=True, text=True, check=True
    )
    return done.stdout


def _time(candidates: dict[str, Any], rounds: int, calls: int, baseline: str) -> dict[str, Any]:
    """Each candidate ``calls`` times per sample, interleaved; µs per call and ratios to ``baseline``."""

    def batch(fn: Any) -> Any:
        async def run() -> None:
            for _ in range(calls):
                await fn(7, 0)

        return run

    async def measure() -> dict[str, float]:
        expected = await candidates[baseline](7, 0)
        for name, fn in candidates.items():
            got = await fn(7, 0)
            assert got == expected, (name, got, expected)
        timed = {name: batch(fn) for name, fn in candidates.items()}
        timed[f"{baseline}_again"] = batch(candidates[baseline])
        return await w.ainterleaved(timed, rounds=rounds)

    times = asyncio.run(measure())
    return {
        "us_per_call": {k: round(v / calls * 1e6, 3) for k, v in times.items()},
        "ratio": {k: round(v / times[baseline], 3) for k, v in times.items()},
    }


def main(quick: bool = False, smoke: bool = False, baseline: str | None = None) -> dict[str, Any]:
    """Both comparisons; ``smoke`` (the test suite's) at 20 parts and 3 rounds."""
    n = 20 if smoke else LENGTH
    rounds = 3 if smoke else 21 if quick else 101
    impl_folder()
    specs = {"fn": fn_chain_spec(n), "step": w.chain_spec(n, False)}
    mine = {k: w.load(w.compile_text(text), f"fn_bench_{k}") for k, text in specs.items()}
    theirs = {k: w.load(compiled_by(baseline, text), f"fn_bench_base_{k}") for k, text in specs.items()} if baseline else {}
    fns: dict[str, Any] = {"hand": hand_written(n), "mcec": mine["fn"].p}
    steps: dict[str, Any] = {"floor": w.straight_line(n, False), "mcec": mine["step"].p}
    if theirs:
        fns["baseline"], steps["baseline"] = theirs["fn"].p, theirs["step"].p
    out: dict[str, Any] = {"length": n, "rounds": rounds, "load": os.getloadavg()[0], "baseline": baseline}
    out["fn"] = _time(fns, rounds, calls=5, baseline="hand")
    out["step"] = _time(steps, rounds, calls=2, baseline="floor")
    out["fn"]["us_per_fn"] = {k: round(v / n, 4) for k, v in out["fn"]["us_per_call"].items()}
    out["fn_target"], out["step_target"] = TARGET_FN, TARGET_STEP
    out["fn_target_met"] = out["fn"]["ratio"]["mcec"] <= TARGET_FN
    out["step_target_met"] = out["step"]["ratio"]["mcec"] <= TARGET_STEP
    return out


def print_detail(results: dict[str, Any]) -> None:
    """Markdown tables of :func:`main`'s figures."""
    n = results["length"]
    print(f"\n### a chain of {n:,} fns / hand-written `value = inc(value)` (CPU, median of {results['rounds']} rounds, load {results['load']:.1f})\n")
    print("| candidate | µs per fn | ratio |")
    print("|---|---|---|")
    for name, us in results["fn"]["us_per_fn"].items():
        print(f"| {name} | {us:.4f} | {results['fn']['ratio'][name]:.3f} |")
    print(f"\n### a chain of {n:,} sync steps / the hand-written floor\n")
    print("| candidate | µs per call | ratio |")
    print("|---|---|---|")
    for name, us in results["step"]["us_per_call"].items():
        print(f"| {name} | {us:.1f} | {results['step']['ratio'][name]:.3f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    tree = args[args.index("--baseline") + 1] if "--baseline" in args else None
    print_detail(main(quick="--quick" in args, smoke="--smoke" in args, baseline=tree))
