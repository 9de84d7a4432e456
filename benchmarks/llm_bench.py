"""Overhead of an LLM step over a direct ``AsyncOpenAI`` call (issue 22).

Both sides send the same chat-completions request to the same local
OpenAI-compatible server (``tests/llm_server.py``, run in a subprocess so
that it does not share this process's interpreter lock) and read the answer:

- **direct**: ``await client.chat.completions.create(model=…, messages=[…])``
  on one ``AsyncOpenAI`` client, then the reply's text (or, for the object
  kind, ``Model.model_validate_json`` of it, with the same ``response_format``);
- **llm_step**: the step of ``llm bench : Question -> str = fast "…"`` (or
  ``-> Verdict``) inside one ``llm_scope``: render the template, resolve the
  model, call, count the tokens, parse.

Wall time per call at concurrency 1 (calls one after another) and at
concurrency 100 (batches of 100 concurrent calls), interleaved batch by batch
in one event loop (the order rotating), after each side has made its
client and warmed up; the figure is the median of the per-round ratios
(target ≤ 1.05×), with the ratio of the medians beside it. A second direct
client (``direct_again``) is timed in the same rounds: its ratio to the first
("A/A") is the noise of the run, what the step's ratio can be read against.

Each batch's CPU time in this process is taken too (the server's is not): its
ratio is steadier than wall time on a loaded machine, and the step's extra CPU
per call bounds what it adds to the wall time of a call on an idle one.

On a shared machine the end-to-end ratio is noisy (the round trip is a few
milliseconds and varies by more than the step's own work), so the step's own
work is also measured without I/O: the same step against a backend that
answers at once, minus that backend's own time (``own work``), and its ratio to
the direct call's median.

    python -m benchmarks.llm_bench [--rounds 9] [--calls 200] [--smoke] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
SERVER = ROOT / "tests" / "llm_server.py"
KEY = "sk-bench"
TEMPLATE = "Question: {{ question }}\nAnswer briefly."


class Question(BaseModel):
    question: str


class Verdict(BaseModel):
    label: str
    score: int


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise RuntimeError(f"the test server did not start: {url!r}")
    return proc, url


async def _batches(call: Callable[[int], Awaitable[Any]], calls: int, concurrency: int) -> tuple[float, float]:
    """Seconds per call for ``calls`` calls, ``concurrency`` at a time: wall time, and this
    process's CPU time (the server is another process, so not counted)."""
    t0, c0 = time.perf_counter(), time.process_time()
    if concurrency == 1:
        for i in range(calls):
            await call(i)
    else:
        for start in range(0, calls, concurrency):
            await asyncio.gather(*(call(i) for i in range(start, min(start + concurrency, calls))))
    return (time.perf_counter() - t0) / calls, (time.process_time() - c0) / calls


async def paired(
    url: str, kind: str, pairs: int, batch: int, concurrency: int
) -> tuple[list[tuple[float, float]], list[tuple[float, float]], list[tuple[float, float]]]:
    """Seconds per call of the direct path, of the step and of the direct path again (a second
    client), batch by batch: (wall, CPU) per call of each batch.

    All run in one event loop, each with its client made and warmed first;
    then ``pairs`` times one batch of ``batch`` calls on each (the order
    rotating), so that a change in the machine's load hits all alike.
    """
    from openai import AsyncOpenAI

    from agentmonad import Ok
    from agentmonad.llm import LLMConfig, Model, ModelSettings, llm_scope, llm_step
    from agentmonad.llm.output import output_shape

    output: object = str if kind == "text" else Verdict
    extra: dict[str, Any] = {}
    fmt = output_shape(output).response_format
    if fmt is not None:
        extra["response_format"] = fmt
    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)
    client_again = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)

    def direct_on(on: Any) -> Callable[[int], Awaitable[Any]]:
        async def direct(i: int) -> Any:
            prompt = f"Question: what is {i}?\nAnswer briefly."
            completion = await on.chat.completions.create(
                model="bench", messages=[{"role": "user", "content": prompt}], **extra
            )
            content = completion.choices[0].message.content
            return content if kind == "text" else Verdict.model_validate_json(content or "")

        return direct

    direct, direct_again = direct_on(client), direct_on(client_again)

    step: Any = llm_step(Model("fast", "bench"), TEMPLATE, output, name="bench")
    config = LLMConfig(models={"fast": ModelSettings(base_url=url, api_key=KEY, max_retries=0, timeout=60)})

    async def stepped(i: int) -> Any:
        out = await step(None, Question(question=f"what is {i}?"))
        assert type(out) is Ok, out
        return out.value

    direct_times: list[tuple[float, float]] = []
    step_times: list[tuple[float, float]] = []
    again_times: list[tuple[float, float]] = []
    try:
        async with llm_scope(config):
            for warm in (direct, stepped, direct_again):
                await _batches(warm, min(batch, 20), min(concurrency, 20))
            arms = [(direct, direct_times), (stepped, step_times), (direct_again, again_times)]
            for n in range(pairs):
                for call, times in arms[n % 3 :] + arms[: n % 3]:
                    times.append(await _batches(call, batch, concurrency))
    finally:
        await client.close()
        await client_again.close()
    return direct_times, step_times, again_times


class _Instant:
    """A backend that answers at once: what is left of a call is the step's own work."""

    async def complete(self, request: Any) -> Any:
        from agentmonad.llm import LLMReply

        content = '{"label": "x", "score": 1}' if request.response_format else "an answer"
        return LLMReply(content=content, prompt_tokens=5, completion_tokens=2)


async def _own_work(kind: str, calls: int) -> float:
    """Microseconds per call the step spends itself (render, request, usage, parse), without I/O."""
    from agentmonad.llm import LLMConfig, LLMRequest, Model, llm_scope, llm_step

    backend = _Instant()
    step: Any = llm_step(Model("fast", "bench"), TEMPLATE, str if kind == "text" else Verdict, name="bench")
    async with llm_scope(LLMConfig(models={"fast": backend})):
        question = Question(question="what?")
        await step(None, question)
        t0 = time.perf_counter()
        for _ in range(calls):
            await step(None, question)
        t1 = time.perf_counter()
        request = LLMRequest("fast", "bench", "bench", ({"role": "user", "content": "x"},))
        for _ in range(calls):
            await backend.complete(request)
        t2 = time.perf_counter()
    return ((t1 - t0) - (t2 - t1)) / calls * 1e6


def measure(url: str, *, rounds: int, calls: int, kinds: list[str], concurrencies: list[int]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for kind in kinds:
        for concurrency in concurrencies:
            batch = max(calls // 10, concurrency)
            timed = asyncio.run(paired(url, kind, rounds * 10, batch, concurrency))
            direct, stepped, again = ([w for w, _ in arm] for arm in timed)
            cpu_direct, cpu_stepped, cpu_again = ([c for _, c in arm] for arm in timed)
            d, s = statistics.median(direct), statistics.median(stepped)
            pair_ratio = statistics.median(b / a for a, b in zip(direct, stepped))
            aa_ratio = statistics.median(b / a for a, b in zip(direct, again))
            cpu_ratio = statistics.median(b / a for a, b in zip(cpu_direct, cpu_stepped) if a > 0)
            cpu_aa = statistics.median(b / a for a, b in zip(cpu_direct, cpu_again) if a > 0)
            own = statistics.median(asyncio.run(_own_work(kind, 2000)) for _ in range(3))
            results[f"{kind}_c{concurrency}"] = {
                "direct_us_per_call": round(d * 1e6, 1),
                "step_us_per_call": round(s * 1e6, 1),
                "ratio": round(pair_ratio, 3),
                "aa_ratio": round(aa_ratio, 3),
                "direct_again_us_per_call": round(statistics.median(again) * 1e6, 1),
                "cpu_direct_us_per_call": round(statistics.median(cpu_direct) * 1e6, 1),
                "cpu_step_us_per_call": round(statistics.median(cpu_stepped) * 1e6, 1),
                "cpu_ratio": round(cpu_ratio, 3),
                "cpu_aa_ratio": round(cpu_aa, 3),
                "ratio_of_medians": round(s / d, 3),
                "overhead_us_per_call": round((s - d) * 1e6, 1),
                "own_work_us_per_call": round(own, 1),
                "own_work_ratio": round((d * 1e6 + own) / (d * 1e6), 4),
                "pairs": len(direct),
                "calls_per_batch": batch,
            }
    return results


def run_all(*, rounds: int, calls: int, smoke: bool = False, kinds: tuple[str, ...] = ("text", "object")) -> dict[str, Any]:
    """The benchmark as ``benchmarks/run.py`` calls it (``smoke``: tiny sizes, concurrency 1 and 4)."""
    if smoke:
        rounds, calls = 1, 4
    concurrencies = [1, 4] if smoke else [1, 100]
    proc, url = start_server()
    try:
        results = measure(url, rounds=rounds, calls=calls, kinds=list(kinds), concurrencies=concurrencies)
    finally:
        proc.terminate()
        proc.wait(10)
    return {"cases": results, "rounds": rounds, "calls": calls, "load_average": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="LLM step overhead over a direct AsyncOpenAI call")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--kinds", default="text,object")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that it runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    # each round is ten batches of calls // 10 calls per side (at least one batch of `concurrency`)
    results = run_all(rounds=args.rounds, calls=args.calls, smoke=args.smoke, kinds=tuple(args.kinds.split(",")))
    print(f"load average after the run: {results['load_average']}")
    print_detail(results["cases"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


def print_detail(results: dict[str, Any]) -> None:
    print(f"{'case':<12} {'direct µs/call':>15} {'llm_step µs/call':>17} {'ratio':>7} {'A/A':>7}"
          f" {'CPU direct/step µs':>19} {'CPU ratio':>10} {'CPU A/A':>8} {'own work µs':>12} {'own ratio':>10}")
    print("(ratio: median of per-round wall ratios; A/A: a second direct client's; CPU: this process's;"
          " own work: the step's own µs per call without I/O)")
    for case, r in results.items():
        cpu = f"{r['cpu_direct_us_per_call']:.0f}/{r['cpu_step_us_per_call']:.0f}"
        print(
            f"{case:<12} {r['direct_us_per_call']:>15} {r['step_us_per_call']:>17} {r['ratio']:>7} {r['aa_ratio']:>7}"
            f" {cpu:>19} {r['cpu_ratio']:>10} {r['cpu_aa_ratio']:>8} {r['own_work_us_per_call']:>12} {r['own_work_ratio']:>10}"
        )


if __name__ == "__main__":
    raise SystemExit(main())
