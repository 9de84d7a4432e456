"""Recorded runs (issue 45, part 1): what recording a run costs, and how fast its replay is.

The ReAct agent of ``react_bench`` (``benchmarks/react/react.mce`` compiled: eight model turns on
``tests/llm_server.py`` in a subprocess, each answered after ``--model-delay``, seven MCP tool
calls on a real stdio server, each ``--tool-delay``), run four ways in one process, interleaved
(the order rotating every round, after warm-up rounds):

- **plain**: the run with nothing attached (``mcec run``);
- **recorded**: the same run with a :class:`agentmonad.record.Recorder` attached, then its
  recording made and written to a file (``mcec run --record``): every effect encoded as typed
  JSON, the secrets masked, the JSON written;
- **plain_again**: the plain run once more (the A/A: the noise of this run);
- **replay**: the recording of a recorded run replayed (``mcec replay``): every effect answered
  from it, no model server or tool server asked.

Per run, this process's CPU time (``process_time``: the servers' processes are not counted) and
wall time, each run started from a clean heap (``gc.collect()`` before it, untimed: a run that
keeps more objects must not make the next one pay for its collection). The figures are medians over the rounds: ``record_cpu_ratio`` (recorded / plain CPU:
the target is ≤ 1.05), its A/A (plain_again / plain), and ``replay_speedup`` (the recorded run's
wall time over the replay's: the target is ≥ 10).

    python -m benchmarks.replay_bench [--rounds 21] [--model-delay 0.02] [--tool-delay 0.005] [--smoke] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.react_bench import KEY, QUESTION, SPEC, ModelServer

SYSTEMS = ("plain", "recorded", "plain_again", "replay")


async def measure(server: ModelServer, *, rounds: int, warmup: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, cpu) of each system per round, after ``warmup`` untimed rounds."""
    from agentmonad import Ok
    from agentmonad.context import hooks
    from agentmonad.llm import LLMConfig, ModelSettings, llm_config, llm_scope
    from agentmonad.mcp import tool_scope
    from agentmonad.record import Recorder, Recording, Replayer, encode_outcome
    from agentmonad.spec import spec_info
    from benchmarks.react.impl import Notes
    from mcec.compiler import compile_source
    from mcec.run.runner import load_module
    from mcec.span import SourceFile

    result = compile_source(SourceFile(str(SPEC), SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    module = load_module(result.program, result.generated)
    info = spec_info(module)
    pipeline = info.pipeline("react")
    assert pipeline is not None
    types = info.type_table()
    config = LLMConfig(models={"*": ModelSettings(base_url=server.url, api_key=KEY, max_retries=0, timeout=60)})
    folder = Path(tempfile.mkdtemp(prefix="mcec-replay-bench-"))
    kept: list[Recording] = []

    async def plain() -> None:
        server.load()
        out = await module.react(Notes(), QUESTION)
        assert type(out) is Ok, out

    async def recorded() -> None:
        server.load()
        recorder = Recorder(types)
        with hooks(journal=recorder.journal):
            out = await module.react(Notes(), QUESTION)
        assert type(out) is Ok, out
        recording = recorder.recording(
            spec=str(SPEC), spec_sha256=info.source_sha256, pipeline="react", runner="compiled", input=QUESTION,
            state={"notes": []}, outcome=encode_outcome(out, pipeline.output, info.state, pipeline.errors),
            secrets=(KEY,),
        )
        recording.write(folder / "react.mcerun.json")
        kept[:] = [recording]

    async def replay() -> None:
        replayer = Replayer(Recording.read(folder / "react.mcerun.json"), types)  # as `mcec replay` reads it
        with hooks(journal=replayer):
            out = await module.react(Notes(), QUESTION)
        assert type(out) is Ok and replayer.performed == 0, out
        assert encode_outcome(out, pipeline.output, info.state, pipeline.errors) == kept[0].outcome

    runs = {"plain": plain, "recorded": recorded, "plain_again": plain, "replay": replay}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in SYSTEMS}
    with llm_config(config):
        async with tool_scope(), llm_scope():
            await recorded()  # a recording to replay from the first round
            for number in range(warmup + rounds):
                order = SYSTEMS[number % len(SYSTEMS):] + SYSTEMS[: number % len(SYSTEMS)]
                for name in order:
                    gc.collect()  # each run starts from a clean heap: no run pays for another's garbage
                    t0, c0 = time.perf_counter(), time.process_time()
                    await runs[name]()
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    if number >= warmup:
                        times[name].append((wall, cpu))
                    if name != "replay":
                        assert server.pending() == 0  # the run used up exactly its scripted replies
    return times


def summarise(times: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """Medians per system, and the ratios (per round, then the median)."""
    out: dict[str, Any] = {}
    for name, pairs in times.items():
        out[name] = {"wall_ms": round(statistics.median(w for w, _ in pairs) * 1000, 2),
                     "cpu_ms": round(statistics.median(c for _, c in pairs) * 1000, 2)}

    def ratio(a: str, b: str, index: int) -> float:
        return round(statistics.median(x[index] / y[index] for x, y in zip(times[a], times[b])), 3)

    out["record_cpu_ratio"] = ratio("recorded", "plain", 1)
    out["record_cpu_ratio_aa"] = ratio("plain_again", "plain", 1)
    out["record_wall_ratio"] = ratio("recorded", "plain", 0)
    out["replay_speedup"] = round(statistics.median(r[0] / p[0] for r, p in zip(times["recorded"], times["replay"])), 1)
    out["record_within_5pct"] = out["record_cpu_ratio"] <= 1.05
    out["replay_10x"] = out["replay_speedup"] >= 10
    return out


def run_all(*, rounds: int, warmup: int, model_delay: float, tool_delay: float) -> dict[str, Any]:
    """Every figure, with the settings it was taken with."""
    os.environ["MCEC_BENCH_TOOL_DELAY"] = repr(tool_delay)  # read by the tool server when it starts
    server = ModelServer(model_delay)
    try:
        times = asyncio.run(measure(server, rounds=rounds, warmup=warmup))
    finally:
        server.close()
    return {"rounds": rounds, "model_delay_s": model_delay, "tool_delay_s": tool_delay, **summarise(times)}


def print_detail(results: dict[str, Any]) -> None:
    """The figures side by side."""
    print(f"ReAct agent, {results['rounds']} rounds, model delay {results['model_delay_s'] * 1000:.0f} ms")
    print(f"{'system':<12} {'wall ms':>9} {'cpu ms':>9}")
    for name in SYSTEMS:
        print(f"{name:<12} {results[name]['wall_ms']:>9} {results[name]['cpu_ms']:>9}")
    print(f"recorded / plain CPU: {results['record_cpu_ratio']} (A/A {results['record_cpu_ratio_aa']}; target <= 1.05)")
    print(f"recorded run / replay wall: {results['replay_speedup']}x (target >= 10)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Recording a ReAct run: its CPU cost, and its replay's speed")
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--model-delay", type=float, default=0.02)
    parser.add_argument("--tool-delay", type=float, default=0.005)
    parser.add_argument("--smoke", action="store_true", help="one round after one warm-up, 1 ms delays: to check that it runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.smoke:
        args.rounds, args.warmup, args.model_delay, args.tool_delay = 1, 1, 0.001, 0.001
    results = run_all(rounds=args.rounds, warmup=args.warmup, model_delay=args.model_delay, tool_delay=args.tool_delay)
    print_detail(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
