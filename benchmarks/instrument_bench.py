"""``agentmonad.otel.instrument()`` with the SDK not configured (issue 48, item 5): what it costs a
compiled pipeline's steps.

Run ``python -m benchmarks.instrument_bench [--quick|--smoke]`` or call :func:`main`.

A compiled chain of N sync steps (N = 10 and 100, the codegen benchmark's spec) is called
plainly, in one process, interleaved (CPU time, the order rotating per round, the cycle
collector run before each sample and paused during it; median of the rounds):

- ``bare``: nothing instrumented (what every process that never calls ``instrument`` runs);
- ``bare_again``: the same, the run's A/A noise;
- ``instrumented``: after ``instrument()`` with no provider, the OpenTelemetry SDK not
  configured (the API's proxy provider): each run looks once whether the SDK is configured
  (the pipeline's entry asks the process-wide run sink) and, finding it is not, runs exactly
  as ``bare`` does.

Figures: µs per call of each, the ratios per call over ``bare``, and the **per-step** ratio,
``(t(100) − t(10)) / 90`` of ``instrumented`` over the same of ``bare`` (target ≤ 1.02): the
per-run look cancels out of it, as it should — the target is per step; the per-call ratios say
what the look costs a run. What the pipeline's entry costs with nothing instrumented at all is
the generated code's, measured with ``benchmarks.side_by_side`` against the code before it.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
from typing import Any

from agentmonad.observe import RUN_SINKS
from agentmonad.otel import instrument, uninstrument

from benchmarks import workloads as w

#: ``instrument()`` with the SDK not configured, per step / not instrumented.
TARGET_PER_STEP = 1.02
SIZES = (10, 100)


def _module(n: int) -> Any:
    return w.load(w.compiled_code(w.chain_spec(n, False)), f"instrument_chain_{n}")


async def _sample(pipeline: Any, calls: int, instrumented: bool) -> float:
    """CPU seconds per call of ``calls`` calls, instrumented or not, the collector paused."""
    if instrumented:
        instrument()
    else:
        uninstrument()
    gc.collect()
    gc.disable()
    try:
        t0 = w.CPU_CLOCK()
        for _ in range(calls):
            await pipeline(0, 0)
        return (w.CPU_CLOCK() - t0) / calls
    finally:
        gc.enable()
        uninstrument()


async def _measure(rounds: int, calls: int) -> dict[str, dict[int, float]]:
    modules = {n: _module(n) for n in SIZES}
    for n, module in modules.items():  # the code does what it says, instrumented or not
        assert (await module.p(0, 0)).value == n
        instrument()
        assert RUN_SINKS and (await module.p(0, 0)).value == n
        uninstrument()
    plan = [("bare", False), ("instrumented", True), ("bare_again", False)]
    samples: dict[str, dict[int, list[float]]] = {name: {n: [] for n in SIZES} for name, _ in plan}
    for r in range(rounds):
        for n in SIZES:
            for name, on in plan[r % 3:] + plan[: r % 3]:
                samples[name][n].append(await _sample(modules[n].p, calls, on))
    return {name: {n: statistics.median(values) for n, values in by_n.items()} for name, by_n in samples.items()}


def main(quick: bool = False, smoke: bool = False) -> dict[str, Any]:
    """Every figure (see the module docstring). Full: 101 rounds of 200 calls; ``quick``: 31;
    ``smoke``: 3 rounds of 5 calls."""
    rounds = 3 if smoke else 31 if quick else 101
    calls = 5 if smoke else 200
    seconds = asyncio.run(_measure(rounds, calls))
    us = {name: {n: s * 1e6 for n, s in by_n.items()} for name, by_n in seconds.items()}
    low, high = SIZES

    def per_step(name: str) -> float:
        return (us[name][high] - us[name][low]) / (high - low)

    per_step_us = {name: per_step(name) for name in us}
    per_step_ratio = per_step_us["instrumented"] / per_step_us["bare"]
    return {
        "rounds": rounds,
        "calls": calls,
        "us_per_call": us,
        "per_call_ratio": {n: us["instrumented"][n] / us["bare"][n] for n in SIZES},
        "per_call_aa": {n: us["bare_again"][n] / us["bare"][n] for n in SIZES},
        "us_per_step": per_step_us,
        "per_step_aa": per_step_us["bare_again"] / per_step_us["bare"],
        "value": per_step_ratio,
        "target": TARGET_PER_STEP,
        "target_met": per_step_ratio <= TARGET_PER_STEP,
    }


def print_detail(out: dict[str, Any]) -> None:
    """The figures, one line each."""
    print(f"instrument() with the SDK not configured ({out['rounds']} rounds of {out['calls']} calls, CPU, median)")
    for n in SIZES:
        row = ", ".join(f"{name} {by_n[n]:.3f}" for name, by_n in out["us_per_call"].items())
        print(f"  {n} sync steps, µs per call: {row}; instrumented/bare {out['per_call_ratio'][n]:.3f}"
              f" (A/A {out['per_call_aa'][n]:.3f})")
    steps = ", ".join(f"{name} {value:.4f}" for name, value in out["us_per_step"].items())
    print(f"  per step (t(100) − t(10)) / 90, µs: {steps}")
    print(f"  per step instrumented/bare {out['value']:.3f} (A/A {out['per_step_aa']:.3f}), target ≤ {out['target']}")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    smoke = "--smoke" in sys.argv
    print_detail(main(quick=quick, smoke=smoke))
