"""The web console's benchmark (issue 46): its pages over a run database of 10,000 runs.

Run ``python -m benchmarks.console_bench [--runs 10000] [--effects 1000] [--rounds 15] [--db URL]``.

The database (an SQLite file in a temporary folder unless ``--db`` names one) gets:

* ``--runs`` runs in all. The newest 50 are real durable runs of durable_bench's workload
  (``steady``: a ``loop`` of one step, 3 turns each: 3 recorded effects), run by
  :func:`mcec.durable.run`, so that the list's first page is of runs with records; one of them
  has ``--effects`` effects (``loop`` of 1,000 turns). The rest are enqueued with the request a
  real :func:`mcec.durable.enqueue` made (through :meth:`agentmonad.durable.dbos.Engine.enqueue`,
  DBOS's client, one insert each: running 10,000 runs would take most of an hour) on a queue no
  worker listens to: they are runs in DBOS's tables like any other, ``enqueued``.
* Then ``mcec console`` is started as a subprocess (uvicorn) and each page is fetched
  ``--rounds`` times after one warm-up; the figure is the server's own time over the request,
  which the console reports in its ``Server-Timing`` header (the median; the request's time at
  the client is shown beside it).

Side by side, the same reads as the commands make them, in this process: ``mcec runs list``'s
(:func:`mcec.durable.list_runs`, every run) and ``mcec runs show --format json``'s
(:func:`mcec.durable.show`) of the long run. Targets (issue 46): the runs page ≤ 200 ms, the
page of a run of 1,000 effects ≤ 300 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.durable_bench import write_workload

ROOT = Path(__file__).resolve().parent.parent
#: Real durable runs among the newest (the first page of the list is of these).
REAL = 50


def populate(spec: Path, db: str, runs: int, effects: int, real: int = REAL) -> None:
    """The database's runs (see the module)."""
    from agentmonad.durable.dbos import Engine

    from mcec import durable

    durable.enqueue(spec, "steady", json.dumps({"n": 0, "left": 1}), queue="console-bench-idle", run_id="template",
                    db=db)
    engine = Engine(durable.database_url(db))
    try:
        info = engine.run("template")
        assert info is not None
        started = time.perf_counter()
        for i in range(runs - real - 1):
            run_id = f"idle-{i:05d}"
            engine.enqueue(run_id, {**info.request, "run_id": run_id}, str(info.request["queue"]))
        print(f"  {runs - real - 1:,} runs enqueued in {time.perf_counter() - started:.1f} s", flush=True)
    finally:
        engine.close()
    started = time.perf_counter()
    report = durable.run(spec, "steady", json.dumps({"n": 0, "left": effects}), run_id="long", db=db)
    assert report["ok"], report
    for i in range(real - 1):
        assert durable.run(spec, "steady", json.dumps({"n": 0, "left": 3}), run_id=f"real-{i:02d}", db=db)["ok"]
    print(f"  {real} real runs (one of {effects:,} effects) in {time.perf_counter() - started:.1f} s", flush=True)


def start_console(db: str, cwd: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-m", "mcec", "console", "--db", db, "--port", "0"], cwd=cwd, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"on (http://[^/\s]+)/", line)
    if found is None:
        process.kill()
        raise SystemExit(f"mcec console did not start: {line!r}")
    return process, found.group(1)


def fetch(url: str) -> tuple[float, float, int]:
    """The server's time (ms, its Server-Timing), the client's (ms), and the body's size."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
        timing = response.headers.get("Server-Timing", "")
    client = (time.perf_counter() - started) * 1000
    found = re.search(r"dur=([0-9.]+)", timing)
    return (float(found.group(1)) if found else float("nan")), client, len(body)


def timed(label: str, rounds: int, measure: Callable[[], tuple[float, float, int]]) -> dict[str, Any]:
    measure()  # warm-up
    results = [measure() for _ in range(rounds)]
    server = statistics.median(r[0] for r in results)
    client = statistics.median(r[1] for r in results)
    row = {"page": label, "server_ms": round(server, 1), "client_ms": round(client, 1), "bytes": results[-1][2]}
    print(f"  {label:<44} server {server:8.1f} ms   client {client:8.1f} ms   {results[-1][2]:>9,} bytes", flush=True)
    return row


def in_process(function: Callable[[], object]) -> tuple[float, float, int]:
    started = time.perf_counter()
    function()
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, elapsed, 0


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--effects", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--real", type=int, default=REAL, help="how many of the newest runs are real durable runs")
    parser.add_argument("--db", default=None, help="a run database URL (default: an SQLite file in a temporary folder)")
    args = parser.parse_args(argv)
    from mcec import durable

    with tempfile.TemporaryDirectory(prefix="console-bench-") as folder_name:
        folder = Path(folder_name)
        spec = write_workload(folder)
        db = args.db or f"sqlite:///{folder / 'runs.sqlite'}"
        print(f"console bench: {args.runs:,} runs in {db.split('@')[-1]}", flush=True)
        populate(spec, db, args.runs, args.effects, args.real)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        process, url = start_console(db, folder, env)
        try:
            rows = [
                timed("runs page (newest 50)", args.rounds, lambda: fetch(url + "/runs")),
                timed("runs page, refreshed part", args.rounds, lambda: fetch(url + "/runs?partial=1")),
                timed("runs page, status=finished", args.rounds, lambda: fetch(url + "/runs?status=finished")),
                timed("runs page, offset 5,000", args.rounds, lambda: fetch(url + "/runs?offset=5000")),
                timed(f"run page, {args.effects:,} effects", args.rounds, lambda: fetch(url + "/runs/long")),
                timed(f"run page, {args.effects:,} effects, refreshed part", args.rounds,
                      lambda: fetch(url + "/runs/long?partial=1")),
                timed("open questions (none)", args.rounds, lambda: fetch(url + "/questions")),
            ]
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
        print("  side by side, in this process (the commands' reads):", flush=True)
        rounds = max(3, args.rounds // 5)
        rows.append(timed(f"durable.list_runs() ({args.runs:,} runs)", rounds,
                          lambda: in_process(lambda: durable.list_runs(db=db))))
        rows.append(timed(f"durable.show(long) ({args.effects:,} effects)", args.rounds,
                          lambda: in_process(lambda: durable.show("long", db=db))))
    by = {row["page"]: row for row in rows}
    runs_page = by["runs page (newest 50)"]["server_ms"]
    run_page = by[f"run page, {args.effects:,} effects"]["server_ms"]
    show = by[f"durable.show(long) ({args.effects:,} effects)"]["server_ms"]
    listing = by[f"durable.list_runs() ({args.runs:,} runs)"]["server_ms"]
    print(f"  runs page {runs_page:.0f} ms (target ≤ 200; list_runs of every run: {listing:.0f} ms, "
          f"{listing / runs_page:.0f}× the page)")
    print(f"  run page {run_page:.0f} ms (target ≤ 300; durable.show alone: {show:.0f} ms, page/show "
          f"{run_page / show:.2f})")
    return {"rows": rows, "runs": args.runs, "effects": args.effects}


if __name__ == "__main__":
    main()
