"""Worker benchmark (issue 35): throughput of an ``each(limit=L)`` whose elements run on 1, 2 and
3 ``mcec worker`` processes, against the same ``each`` in-process.

Run ``python -m benchmarks.worker_bench [--elements 1000] [--limit 32] [--sleep 0.02] [--db URL]``
(without ``--db`` a PostgreSQL server is started for the run, as the tests start theirs:
``tests/pgserver.py``).

The workload is a spec written to a temporary package: ``each(limit=L) nap`` over ``0..n-1``,
where ``nap`` is an async step that sleeps a fixed time (I/O-bound: the workers' CPU is not the
limit). Timed end to end, wall clock:

1. **in-process**: the compiled pipeline called in this process (no journal, no database);
2. **in-process durable**: ``mcec.durable.run`` (one DBOS workflow recording every step), less
   the time of the same run over one element (DBOS's launch, the spec's check: the workers are
   timed once they are up);
3. **1, 2, 3 workers**: that many ``mcec worker`` subprocesses (``--poll-seconds 0.05``) serving
   the spec, started and ready before the clock starts; the run is enqueued
   (:func:`mcec.durable.queues.enqueue`) and the clock stops when its result is read
   (:func:`mcec.durable.queues.result`, polling every 20 ms). The run itself goes to one worker;
   its elements go on the ``each``'s queue, at most L at once across the workers.

Reported: elements/s; the scaling ratio of 2 and 3 workers over 1; and the overhead per element
against in-process: ``(T − T_in_process) × L / n``, the time each of the L element slots spends
per element beyond the in-process run (the sleep itself is in both).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "worker_bench_spec"

IMPL = '''"""The worker benchmark's workload: an I/O-bound step (a fixed sleep)."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from agentmonad import Ok, Outcome

SLEEP = float(os.environ.get("WORKER_BENCH_SLEEP", "0.02"))


@dataclass(frozen=True)
class Empty:
    """No state to speak of (a step has one)."""


async def nap(state: Empty, n: int) -> Outcome[Empty, None, int]:
    await asyncio.sleep(SLEEP)
    return Ok(n, state)
'''

SPEC = '''# The worker benchmark's workload (benchmarks/worker_bench.py).
from worker_bench_spec.impl import Empty
import worker_bench_spec.impl as impl

state Empty

async step nap : int -> int = impl.nap

pipeline fan : list[int] -> list[int] ! MergeConflict = each(limit={limit}) nap;
'''


def _write(folder: Path, limit: int) -> Path:
    package = folder / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "impl.py").write_text(IMPL)
    spec = package / "fan.mce"
    spec.write_text(SPEC.format(limit=limit))
    return spec


def _in_process(spec: Path, values: list[int]) -> float:
    import asyncio

    from mcec.compiler import compile_source
    from mcec.run.runner import load_module
    from mcec.span import SourceFile

    result = compile_source(SourceFile(str(spec), spec.read_text()))
    assert result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    started = time.perf_counter()
    empty = sys.modules[f"{PACKAGE}.impl"].Empty()
    out = asyncio.run(module.fan(empty, values))
    elapsed = time.perf_counter() - started
    assert out.value == values, out
    return elapsed


def _durable(spec: Path, values: list[int], db: str) -> float:
    from mcec import durable

    started = time.perf_counter()
    out = durable.run(spec, "fan", json.dumps(values), db=db, run_id=f"bench-inline-{uuid.uuid4().hex[:8]}")
    elapsed = time.perf_counter() - started
    assert out["ok"] and out["value"] == values, out
    return elapsed


def _workers(spec: Path, values: list[int], db: str, count: int, env: dict[str, str], cwd: Path) -> float:
    from mcec.durable.queues import enqueue, result

    logs = [cwd / f"worker-{count}-{i}.log" for i in range(count)]
    workers = [subprocess.Popen([sys.executable, "-m", "mcec", "worker", str(spec), "--db", db, "--poll-seconds", "0.05"],
                                stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env, cwd=cwd)
               for log in logs]
    try:
        deadline = time.monotonic() + 120
        while not all("serving" in log.read_text() for log in logs):
            if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                raise RuntimeError("the workers did not start: " + " | ".join(log.read_text() for log in logs))
            time.sleep(0.05)
        run_id = f"bench-{count}w-{uuid.uuid4().hex[:8]}"
        started = time.perf_counter()
        enqueue(str(spec), "fan", json.dumps(values), run_id=run_id, db=db)
        out = result(run_id, db=db, poll_seconds=0.02, timeout=1800)
        elapsed = time.perf_counter() - started
        assert out is not None and out["ok"] and out["value"] == values, out
        return elapsed
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=60)
            except subprocess.TimeoutExpired:
                w.kill()


def main(elements: int = 1000, limit: int = 32, sleep: float = 0.02, db: str | None = None,
         workers: tuple[int, ...] = (1, 2, 3)) -> dict[str, Any]:
    """Run the benchmark; the figures (seconds, elements/s, ratios, ms of overhead per element)."""
    server = None
    out_startup = 0.0
    if db is None:
        sys.path.insert(0, str(ROOT / "tests"))
        from pgserver import PgServer

        server = PgServer.start()
        db = server.url
    os.environ["WORKER_BENCH_SLEEP"] = str(sleep)
    try:
        with tempfile.TemporaryDirectory(prefix="worker-bench-") as tmp:
            folder = Path(tmp)
            spec = _write(folder, limit)
            sys.path.insert(0, str(folder))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]), WORKER_BENCH_SLEEP=str(sleep))
            env.pop("MCEC_DB", None)
            values = list(range(elements))
            seconds: dict[str, float] = {"in-process": _in_process(spec, values)}
            # a durable run's fixed cost (DBOS's launch, the spec's check) is measured on one element
            # and taken off: the workers are timed once they are up, too
            startup = _durable(spec, values[:1], db)
            seconds["in-process durable"] = _durable(spec, values, db) - startup
            out_startup = round(startup, 3)
            for count in workers:
                seconds[f"{count} worker{'s' if count > 1 else ''}"] = _workers(spec, values, db, count, env, folder)
    finally:
        if server is not None:
            server.stop()
    base = seconds["in-process"]
    out: dict[str, Any] = {
        "elements": elements, "limit": limit, "sleep": sleep, "durable_startup_seconds": out_startup,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "elements_per_second": {k: round(elements / v, 1) for k, v in seconds.items()},
        "overhead_ms_per_element": {k: round((v - base) * limit / elements * 1000, 1) for k, v in seconds.items()
                                    if k != "in-process"},
    }
    one = seconds.get("1 worker")
    if one is not None:
        out["scaling"] = {k: round(one / v, 3) for k, v in seconds.items() if k.endswith(("workers",))}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=1000)
    parser.add_argument("--limit", type=int, default=32)
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--db", default=None, help="a postgresql:// URL (default: a server started for the run)")
    parser.add_argument("--workers", default="1,2,3", help="worker counts, comma-separated (default: 1,2,3)")
    args = parser.parse_args()
    figures = main(args.elements, args.limit, args.sleep, args.db, tuple(int(n) for n in args.workers.split(",")))
    print(json.dumps(figures, indent=2))
