"""Counting the Python calls a run makes (the per-step cost tests of issue 36, item 4).

A cost a test can hold exactly, where a timing on a shared machine cannot be:
``per_step`` is the difference between the calls of a run of 2N steps and of N
(what a run costs once — ``asyncio.run``, the first step — cancels out), divided by N.
"""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from collections.abc import Awaitable, Callable
from types import FrameType

#: Runs of ``per_step``: N and 2N steps.
N = 200


def python_calls(run: Callable[[], Awaitable[object]]) -> Counter[str]:
    """The Python functions called while ``run()`` is awaited, by ``file:name`` (file without
    its folder; ``<string>`` for generated code such as a dataclass's ``__init__``)."""
    calls: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code
            calls[f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_name}"] += 1

    async def profiled() -> None:
        sys.setprofile(hook)
        try:
            await run()
        finally:
            sys.setprofile(None)

    asyncio.run(profiled())
    return calls


def per_step(calls_of: Callable[[int], Counter[str]]) -> dict[str, float]:
    """Calls per step, by function: (``calls_of(2N)`` − ``calls_of(N)``) / N, where they differ."""
    small, large = calls_of(N), calls_of(2 * N)
    return {name: (large[name] - small[name]) / N for name in large.keys() | small.keys() if large[name] != small[name]}
