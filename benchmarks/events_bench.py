"""The run's events (issue 33): what an event stream costs a run with no consumer, and with one.

Run ``python -m benchmarks.events_bench [--quick|--smoke]`` or call :func:`main` (the harness,
``python -m benchmarks``, does).

Every comparison is one interleaved run (CPU time, the candidates' order rotating per round,
median of the rounds; the no-sink ones with the cycle collector run before each sample and
paused during it, see :func:`_collected`), with an A/A pair as the run's noise floor.

1. **No consumer, per step** (target ≤ 1.02): a chain of N sync steps run by
   ``AgentMonad.run`` — which now looks once per run whether an event sink is attached — against
   the interpreter's loop called directly (``_interpret``, what ``run`` did before: no look at
   all). With no sink each step costs what it did: the steps make plain calls (one attribute
   test, ``RunContext.hooked``, read once per run).
2. **No consumer, per ``each`` element** (target ≤ 1.02): ``each`` over N elements through
   ``run_group`` — which now looks once per group whether a sink is attached, and then runs the
   group one ``await`` deeper — against the group's loop called directly (``_run_group`` with no
   group span: what ``run_group`` was).
3. **With a consumer, per step** (reported): the same chain with a sink that keeps every event
   in a list (what ``mcec run --trace`` attaches), and with :class:`agentmonad.otel.SpanSink`
   exporting to the OpenTelemetry SDK's ``InMemorySpanExporter`` through a
   ``SimpleSpanProcessor`` (a span per step), against no sink: µs per step.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
from typing import Any

from agentmonad import AgentMonad, Ok, Site, lift_step
from agentmonad.concurrency import _run_group, run_group
from agentmonad.context import hooks
from agentmonad.events import Event
from agentmonad.monad import _interpret

from benchmarks import workloads as w

#: No consumer: with events / before them, per step and per ``each`` element.
TARGET_NO_CONSUMER = 1.02


def _step(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state)


async def _element(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state)


def chain(n: int) -> AgentMonad[int, KeyError, int]:
    """``s0 >>= s1 >>= … `` of ``n`` sync steps, each with its site (as a spec's)."""
    arrows = [
        lift_step(_step, name=f"s{i}", errors=(KeyError,), site=Site(f"s{i}", "bench.mce", i + 1, 1))
        for i in range(n)
    ]
    program: AgentMonad[int, KeyError, int] = arrows[0](0)
    for arrow in arrows[1:]:
        program = program.then(arrow)
    return program


class ListSink:
    """Keeps every event (what ``mcec run --trace`` attaches)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


async def _collected(candidates: dict[str, Any], rounds: int, inner: int) -> dict[str, float]:
    """:func:`benchmarks.workloads.ainterleaved` with the cycle collector run before every
    timed sample and paused during it: a group's tasks leave cycles, and the collection they
    set off would otherwise land in whichever candidate comes next in the rotation (two
    timings of the same code came out 17 % apart at load 9)."""
    names = list(candidates)
    for name in names:
        await candidates[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            gc.collect()
            gc.disable()
            try:
                t0 = w.CPU_CLOCK()
                for _ in range(inner):
                    await candidates[name]()
                samples[name].append((w.CPU_CLOCK() - t0) / inner)
            finally:
                gc.enable()
    return {name: statistics.median(values) for name, values in samples.items()}


def _ratios(us: dict[str, float], base: str) -> dict[str, float]:
    return {name: value / us[base] for name, value in us.items()}


def bench_chain(n: int, rounds: int, inner: int) -> dict[str, Any]:
    """1 and 3: a chain of ``n`` steps, no sink (``run`` / ``_interpret``) and with sinks."""
    program = chain(n)
    kept = ListSink()
    otel = _otel_sink()

    async def run() -> None:
        await program.run(0)

    async def loop_alone() -> None:
        await _interpret(program, 0)

    async def with_list() -> None:
        kept.events.clear()
        with hooks(events=kept):
            await program.run(0)

    # Two measurements: the sinks make garbage, and the cycle collector it wakes would be
    # charged to whichever candidate follows them in the rotation (``run``, in one run).
    bare: dict[str, Any] = {"run": run, "interpret": loop_alone, "run_again": run}
    sinks: dict[str, Any] = {"no_sink": run, "list_sink": with_list}
    if otel is not None:
        sink, exporter = otel

        async def with_otel() -> None:
            exporter.clear()
            with hooks(events=sink):
                await program.run(0)

        sinks["otel_in_memory"] = with_otel

    async def measure() -> dict[str, float]:
        assert await program.run(0) == Ok(n, 0)
        seconds = await _collected(bare, rounds, inner)
        seconds |= await w.ainterleaved(sinks, max(3, rounds // 4), inner=inner)
        return seconds

    seconds = asyncio.run(measure())
    us = {name: s / n * 1e6 for name, s in seconds.items()}
    ratio = _ratios({k: us[k] for k in bare}, "interpret")
    return {
        "steps": n,
        "us_per_step": us,
        "ratio": ratio,
        "with_sink_over_none": {k: us[k] / us["no_sink"] for k in ("list_sink", "otel_in_memory") if k in us},
        "value": ratio["run"],
        "target": TARGET_NO_CONSUMER,
        "target_met": ratio["run"] <= TARGET_NO_CONSUMER,
        "otel": otel is not None,
    }


def bench_each(n: int, rounds: int, inner: int) -> dict[str, Any]:
    """2: ``each`` over ``n`` elements through ``run_group`` / its loop alone."""
    values = list(range(n))
    site = Site("each", "bench.mce", 1, 1)

    async def grouped() -> None:
        await run_group(0, n, lambda i: _element(0, values[i]), None, None, site)

    async def loop_alone() -> None:
        await _run_group(0, n, lambda i: _element(0, values[i]), None, None, site, None)

    candidates: dict[str, Any] = {"run_group": grouped, "loop_alone": loop_alone, "run_group_again": grouped}
    seconds = asyncio.run(_collected(candidates, rounds, inner))
    us = {name: s / n * 1e6 for name, s in seconds.items()}
    ratio = _ratios(us, "loop_alone")
    return {
        "elements": n,
        "us_per_element": us,
        "ratio": ratio,
        "value": ratio["run_group"],
        "target": TARGET_NO_CONSUMER,
        "target_met": ratio["run_group"] <= TARGET_NO_CONSUMER,
    }


def _otel_sink() -> tuple[Any, Any] | None:
    """A SpanSink exporting to an in-memory exporter, or None without the OTel SDK."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        return None
    from agentmonad.otel import SpanSink

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return SpanSink(provider), exporter


def main(quick: bool = False, smoke: bool = False) -> dict[str, Any]:
    """Run every comparison; return the figures. Full: 1,000 steps / elements, 101 rounds;
    ``quick``: 21 rounds; ``smoke`` (the test suite's): 50, 3 rounds."""
    n = 50 if smoke else 1_000
    rounds = 3 if smoke else 21 if quick else 101
    inner = 1 if smoke else 3
    return {"rounds": rounds, "chain": bench_chain(n, rounds, inner), "each": bench_each(n, rounds, inner)}


def print_detail(results: dict[str, Any]) -> None:
    """The figures as markdown tables."""
    n = results["rounds"]
    c = results["chain"]
    print(f"\n### events: a {c['steps']:,}-step interpreted chain, µs per step (CPU time, median of {n} rounds)\n")
    print("| candidate | µs/step | / loop alone | / no sink |")
    print("|---|---|---|---|")
    for name, us in c["us_per_step"].items():
        alone = f"{c['ratio'][name]:.3f}" if name in c["ratio"] else ""
        sunk = f"{c['with_sink_over_none'][name]:.1f}" if name in c["with_sink_over_none"] else ""
        print(f"| {name} | {us:.4f} | {alone} | {sunk} |")
    e = results["each"]
    print(f"\n### events: each over {e['elements']:,} elements, µs per element (CPU time, median of {n} rounds)\n")
    print("| candidate | µs/element | / loop alone |")
    print("|---|---|---|")
    for name, us in e["us_per_element"].items():
        print(f"| {name} | {us:.4f} | {e['ratio'][name]:.3f} |")


if __name__ == "__main__":
    figures = main(quick="--quick" in sys.argv[1:], smoke="--smoke" in sys.argv[1:])
    print_detail(figures)
