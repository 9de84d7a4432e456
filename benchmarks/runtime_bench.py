"""Benchmark of the agentmonad runtime.

Run ``python benchmarks/runtime_bench.py [--quick]``; prints a markdown table.

- **chain**: a 1,000-step ``AgentMonad`` chain (``lift_step`` arrows joined with
  ``then``; the program is built once, as a value, and run repeatedly) against a
  hand-written straight-line ``async def`` doing the same 1,000 calls with the
  same checks generated code does (``isinstance(r, Ok)``, ``stop``/``raised``
  slow paths, ``try``/``except Exception``). Sync steps and async steps. Ratio =
  median time of the chain / median time of the straight-line code, measured in
  the same run after a warm-up. Target ≤ 1.6 (issue 36: the figure it had before the
  interpreter was rewritten around one loop, and has again).
- **par**: ``AgentMonad.par`` of 1,000 branches each sleeping 50 ms; ratio =
  wall time / 50 ms. Target ≤ 1.5.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from agentmonad import AgentMonad, Ok, Site, lift_step
from agentmonad.compiled import raised, stop

N_STEPS = 1_000


def sync_step(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state)


async def async_step(state: int, value: int) -> Ok[int, int]:
    return Ok(value + 1, state)


def _straight_line(is_async: bool) -> Callable[[int, int], Awaitable[Any]]:
    """Build the straight-line equivalent, as the code generator would."""
    call = "await step(state, v)" if is_async else "step(state, v)"
    lines = ["async def run(state, v):", "    i = 0", "    try:"]
    for i in range(N_STEPS):
        lines += [
            f"        i = {i}",
            f"        r = {call}",
            "        if not isinstance(r, Ok):",
            "            return stop(r, SITES[i], ERRORS)",
            "        state, v = r.state, r.value",
        ]
    lines += [
        "    except Exception as exc:",
        "        return raised(exc, SITES[i], state, ERRORS)",
        "    return Ok(v, state)",
    ]
    namespace: dict[str, Any] = {
        "Ok": Ok,
        "stop": stop,
        "raised": raised,
        "step": async_step if is_async else sync_step,
        "SITES": [Site(f"s{i}", "bench.mce", i + 1, 1) for i in range(N_STEPS)],
        "ERRORS": (KeyError,),
    }
    exec(compile("\n".join(lines), "<straight-line>", "exec"), namespace)
    fn: Callable[[int, int], Awaitable[Any]] = namespace["run"]
    return fn


def _chain(is_async: bool) -> AgentMonad[int, KeyError, int]:
    impl: Any = async_step if is_async else sync_step
    arrows = [
        lift_step(impl, name=f"s{i}", errors=(KeyError,), is_async=is_async,
                  site=Site(f"s{i}", "bench.mce", i + 1, 1))
        for i in range(N_STEPS)
    ]
    prog: AgentMonad[int, KeyError, int] = arrows[0](0)
    for k in arrows[1:]:
        prog = prog.then(k)
    return prog


async def _median(fn: Callable[[], Awaitable[Any]], repeats: int) -> float:
    for _ in range(2):  # warm-up
        await fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def _bench_chain(is_async: bool, repeats: int) -> dict[str, float]:
    prog = _chain(is_async)
    straight = _straight_line(is_async)
    expected = Ok(N_STEPS, 7)
    assert await prog.run(7) == expected
    assert await straight(7, 0) == expected
    # interleave the two so that load from other processes hits both alike
    monad_times: list[float] = []
    line_times: list[float] = []
    for _ in range(repeats):
        monad_times.append(await _median(lambda: prog.run(7), 3))
        line_times.append(await _median(lambda: straight(7, 0), 3))
    t_monad = statistics.median(monad_times)
    t_line = statistics.median(line_times)
    return {
        "monad_us_per_step": t_monad / N_STEPS * 1e6,
        "straight_us_per_step": t_line / N_STEPS * 1e6,
        "ratio": t_monad / t_line,
    }


async def _bench_par(branches: int, repeats: int) -> dict[str, float]:
    async def nap(state: int, value: None) -> Ok[int, None]:
        await asyncio.sleep(0.05)
        return Ok(None, state)

    arrow = lift_step(nap, name="nap", errors=(), is_async=True)
    prog = AgentMonad.par([arrow(None) for _ in range(branches)])

    async def once() -> None:
        out = await prog.run(0)
        assert isinstance(out, Ok)

    async def baseline() -> None:  # plain asyncio.gather of the same coroutines
        await asyncio.gather(*[nap(0, None) for _ in range(branches)])

    t = await _median(once, repeats)
    t_gather = await _median(baseline, repeats)
    return {"wall_ms": t * 1e3, "ratio": t / 0.05, "gather_ratio": t_gather / 0.05}


def main(quick: bool = False) -> dict[str, dict[str, float]]:
    """Run the benchmarks; return the figures (and print a markdown table)."""
    repeats = 5 if quick else 15

    async def all_() -> dict[str, dict[str, float]]:
        return {
            "chain_sync": await _bench_chain(False, repeats),
            "chain_async": await _bench_chain(True, repeats),
            "par_1000x50ms": await _bench_par(1_000, 3 if quick else 7),
        }

    results = asyncio.run(all_())
    print("| benchmark | measure | value | target |")
    print("|---|---|---|---|")
    for name in ("chain_sync", "chain_async"):
        r = results[name]
        print(f"| {name} (1,000 steps) | AgentMonad µs/step | {r['monad_us_per_step']:.3f} | |")
        print(f"| {name} (1,000 steps) | straight-line µs/step | {r['straight_us_per_step']:.3f} | |")
        print(f"| {name} (1,000 steps) | ratio | {r['ratio']:.2f} | ≤ 1.6 |")
    p = results["par_1000x50ms"]
    print(f"| par 1,000 × sleep 50 ms | wall ms | {p['wall_ms']:.1f} | |")
    print(f"| par 1,000 × sleep 50 ms | wall / 50 ms | {p['ratio']:.2f} | ≤ 1.5 |")
    print(f"| (baseline) asyncio.gather 1,000 × 50 ms | wall / 50 ms | {p['gather_ratio']:.2f} | |")
    return results


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
