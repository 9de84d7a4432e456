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
in one event loop (the order alternating), after each side has made its
client and warmed up; the figure is the median of the per-pair ratios
(target ≤ 1.05×), with the ratio of the medians beside it.

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


async def _batches(call: Callable[[int], Awaitable[Any]], calls: int, concurrency: int) -> float:
    """Seconds per call for ``calls`` calls, ``concurrency`` at a time."""
    t0 = time.perf_counter()
    if concurrency == 1:
        for i in range(calls):
            await call(i)
    else:
        for start in range(0, calls, concurrency):
            await asyncio.gather(*(call(i) for i in range(start, min(start + concurrency, calls))))
    return (time.perf_counter() - t0) / calls


async def paired(url: str, kind: str, pairs: int, batch: int, concurrency: int) -> tuple[list[float], list[float]]:
    """Seconds per call of the direct path and of the step, batch by batch, alternating.

    Both run in one event loop, each with its client made and warmed first;
    then ``pairs`` times one batch of ``batch`` calls on each (the order
    alternating), so that a change in the machine's load hits both alike.
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

    async def direct(i: int) -> Any:
        prompt = f"Question: what is {i}?\nAnswer briefly."
        completion = await client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": prompt}], **extra
        )
        content = completion.choices[0].message.content
        return content if kind == "text" else Verdict.model_validate_json(content or "")

    step: Any = llm_step(Model("fast", "bench"), TEMPLATE, output, name="bench")
    config = LLMConfig(models={"fast": ModelSettings(base_url=url, api_key=KEY, max_retries=0, timeout=60)})

    async def stepped(i: int) -> Any:
        out = await step(None, Question(question=f"what is {i}?"))
        assert type(out) is Ok, out
        return out.value

    direct_times: list[float] = []
    step_times: list[float] = []
    try:
        async with llm_scope(config):
            for warm in (direct, stepped):
                await _batches(warm, min(batch, 20), min(concurrency, 20))
            for n in range(pairs):
                order = [(direct, direct_times), (stepped, step_times)]
                if n % 2:
                    order.reverse()
                for call, times in order:
                    times.append(await _batches(call, batch, concurrency))
    finally:
        await client.close()
    return direct_times, step_times


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
            direct, stepped = asyncio.run(paired(url, kind, rounds * 10, batch, concurrency))
            d, s = statistics.median(direct), statistics.median(stepped)
            pair_ratio = statistics.median(b / a for a, b in zip(direct, stepped))
            own = statistics.median(asyncio.run(_own_work(kind, 2000)) for _ in range(3))
            results[f"{kind}_c{concurrency}"] = {
                "direct_us_per_call": round(d * 1e6, 1),
                "step_us_per_call": round(s * 1e6, 1),
                "ratio": round(pair_ratio, 3),
                "ratio_of_medians": round(s / d, 3),
                "overhead_us_per_call": round((s - d) * 1e6, 1),
                "own_work_us_per_call": round(own, 1),
                "own_work_ratio": round((d * 1e6 + own) / (d * 1e6), 4),
                "pairs": len(direct),
                "calls_per_batch": batch,
            }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="LLM step overhead over a direct AsyncOpenAI call")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--kinds", default="text,object")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that it runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rounds, calls = (1, 4) if args.smoke else (args.rounds, args.calls)
    # each round is ten batch pairs of calls // 10 calls (at least one batch of `concurrency`)
    concurrencies = [1, 4] if args.smoke else [1, 100]
    proc, url = start_server()
    try:
        results = measure(url, rounds=rounds, calls=calls, kinds=args.kinds.split(","), concurrencies=concurrencies)
    finally:
        proc.terminate()
        proc.wait(10)
    print(f"{'case':<12} {'direct µs/call':>15} {'llm_step µs/call':>17} {'ratio':>7} {'own work µs':>12} {'own ratio':>10}")
    print("(ratio: median of per-batch-pair ratios; own work: the step's own µs per call without I/O)")
    for case, r in results.items():
        print(
            f"{case:<12} {r['direct_us_per_call']:>15} {r['step_us_per_call']:>17} {r['ratio']:>7}"
            f" {r['own_work_us_per_call']:>12} {r['own_work_ratio']:>10}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
