"""Time to the first streamed token: a ``stream llm`` step against the openai SDK's own stream (issue 33).

Both sides ask the same local OpenAI-compatible server (``tests/llm_server.py`` in a
subprocess, so that it does not share this process's interpreter lock; it streams each
answer in pieces of 4 characters, 2 ms apart) for a streamed answer and read it to the end:

- **direct**: ``await client.chat.completions.create(…, stream=True,
  stream_options={"include_usage": True})`` on one ``AsyncOpenAI`` client, then
  ``async for chunk in stream``: the first token is the first chunk with content;
- **stream llm**: the step of ``stream llm bench : Question -> str = fast "…"`` (or
  ``-> Verdict``) inside one ``llm_scope`` with an event sink attached: render the
  template, resolve the model, call with ``stream=True``, read the server-sent events,
  emit a ``TextDelta`` (``PartialOutput`` for the object kind) per piece, count the
  tokens, validate. The first token is the first ``TextDelta`` (``PartialOutput``) the
  sink receives.

Time to first token is measured from just before the call. Calls run one after another,
in batches interleaved in one event loop (the order rotating); the figure is the median of
the per-batch ratios of the median first-token times (target ≤ 1.05×). A second direct
client (``direct_again``) is timed in the same rounds: its ratio to the first ("A/A") is
the noise of the run. The time to the whole answer is reported beside it.

    python -m benchmarks.stream_bench [--rounds 9] [--calls 100] [--smoke] [--json FILE]
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
#: Seconds between the server's streamed pieces.
CHUNK_DELAY = 0.002
TARGET = 1.05


class Question(BaseModel):
    question: str


class Verdict(BaseModel):
    label: str
    score: int


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--chunk-delay", str(CHUNK_DELAY)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise RuntimeError(f"the test server did not start: {url!r}")
    return proc, url


#: One call: (seconds to the first token, seconds to the whole answer).
Call = Callable[[int], Awaitable[tuple[float, float]]]


class _FirstToken:
    """An event sink noting when the first streamed piece of the current call arrived."""

    def __init__(self) -> None:
        self.first: float | None = None

    def emit(self, event: Any) -> None:
        from agentmonad.events import PartialOutput, TextDelta

        if self.first is None and isinstance(event, TextDelta | PartialOutput):
            self.first = time.perf_counter()


async def paired(url: str, kind: str, rounds: int, batch: int) -> dict[str, list[tuple[float, float]]]:
    """Per batch and per side, the median (first token, whole answer) seconds of ``batch`` calls."""
    from openai import AsyncOpenAI

    from agentmonad import Ok
    from agentmonad.context import hooks
    from agentmonad.llm import LLMConfig, Model, ModelSettings, llm_scope, llm_step
    from agentmonad.llm.output import output_shape

    output: object = str if kind == "text" else Verdict
    extra: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}}
    fmt = output_shape(output).response_format
    if fmt is not None:
        extra["response_format"] = fmt
    client = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)
    client_again = AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60)

    def direct_on(on: Any) -> Call:
        async def direct(i: int) -> tuple[float, float]:
            prompt = f"Question: what is {i}?\nAnswer briefly."
            t0 = time.perf_counter()
            first: float | None = None
            pieces: list[str] = []
            stream = await on.chat.completions.create(model="bench", messages=[{"role": "user", "content": prompt}], **extra)
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    if first is None:
                        first = time.perf_counter()
                    pieces.append(chunk.choices[0].delta.content)
            if kind == "object":
                Verdict.model_validate_json("".join(pieces))
            assert first is not None
            return first - t0, time.perf_counter() - t0

        return direct

    direct, direct_again = direct_on(client), direct_on(client_again)
    step: Any = llm_step(Model("fast", "bench"), TEMPLATE, output, name="bench", stream=True)
    config = LLMConfig(models={"fast": ModelSettings(base_url=url, api_key=KEY, max_retries=0, timeout=60)})
    sink = _FirstToken()

    async def stepped(i: int) -> tuple[float, float]:
        sink.first = None
        t0 = time.perf_counter()
        out = await step(None, Question(question=f"what is {i}?"))
        t1 = time.perf_counter()
        assert type(out) is Ok and sink.first is not None, out
        return sink.first - t0, t1 - t0

    async def timed(call: Call) -> tuple[float, float]:
        runs = [await call(i) for i in range(batch)]
        return statistics.median(f for f, _ in runs), statistics.median(w for _, w in runs)

    times: dict[str, list[tuple[float, float]]] = {"direct": [], "stream_llm": [], "direct_again": []}
    arms: list[tuple[str, Call]] = [("direct", direct), ("stream_llm", stepped), ("direct_again", direct_again)]
    try:
        with hooks(events=sink):
            async with llm_scope(config):
                for _, warm in arms:
                    await timed(warm)
                for n in range(rounds):
                    for name, call in arms[n % 3 :] + arms[: n % 3]:
                        times[name].append(await timed(call))
    finally:
        await client.close()
        await client_again.close()
    return times


def measure(url: str, *, rounds: int, calls: int, kinds: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for kind in kinds:
        batch = max(calls // 10, 1)
        times = asyncio.run(paired(url, kind, rounds * 10, batch))
        direct, stepped, again = times["direct"], times["stream_llm"], times["direct_again"]
        ratio = statistics.median(s[0] / d[0] for d, s in zip(direct, stepped))
        aa = statistics.median(a[0] / d[0] for d, a in zip(direct, again))
        whole = statistics.median(s[1] / d[1] for d, s in zip(direct, stepped))
        results[kind] = {
            "direct_first_ms": round(statistics.median(d[0] for d in direct) * 1e3, 3),
            "stream_llm_first_ms": round(statistics.median(s[0] for s in stepped) * 1e3, 3),
            "direct_again_first_ms": round(statistics.median(a[0] for a in again) * 1e3, 3),
            "ratio": round(ratio, 3),
            "aa_ratio": round(aa, 3),
            "target": TARGET,
            "target_met": ratio <= TARGET,
            "direct_whole_ms": round(statistics.median(d[1] for d in direct) * 1e3, 3),
            "stream_llm_whole_ms": round(statistics.median(s[1] for s in stepped) * 1e3, 3),
            "whole_ratio": round(whole, 3),
            "batches": len(direct),
            "calls_per_batch": batch,
        }
    return results


def run_all(*, rounds: int, calls: int, smoke: bool = False, kinds: tuple[str, ...] = ("text", "object")) -> dict[str, Any]:
    """The benchmark as ``benchmarks/run.py`` calls it (``smoke``: tiny sizes)."""
    if smoke:
        rounds, calls = 1, 10
    proc, url = start_server()
    try:
        results = measure(url, rounds=rounds, calls=calls, kinds=list(kinds))
    finally:
        proc.terminate()
        proc.wait(10)
    return {"cases": results, "rounds": rounds, "calls": calls, "chunk_delay": CHUNK_DELAY, "load_average": list(os.getloadavg())}


def print_detail(results: dict[str, Any]) -> None:
    print(f"{'kind':<8} {'direct first ms':>16} {'stream llm first ms':>20} {'ratio':>7} {'A/A':>7}"
          f" {'direct whole ms':>16} {'stream llm whole ms':>20} {'whole ratio':>12}")
    print("(ratio: median of per-batch ratios of the median time to the first streamed token; A/A: a second direct client's)")
    for kind, r in results.items():
        print(
            f"{kind:<8} {r['direct_first_ms']:>16} {r['stream_llm_first_ms']:>20} {r['ratio']:>7} {r['aa_ratio']:>7}"
            f" {r['direct_whole_ms']:>16} {r['stream_llm_whole_ms']:>20} {r['whole_ratio']:>12}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="time to the first streamed token: stream llm / the openai SDK's stream")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--kinds", default="text,object")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, to check that it runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = run_all(rounds=args.rounds, calls=args.calls, smoke=args.smoke, kinds=tuple(args.kinds.split(",")))
    print(f"load average after the run: {results['load_average']}")
    print_detail(results["cases"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
