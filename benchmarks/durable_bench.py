"""Durable-run benchmark (issue 31): what recording a run costs, on the same database as bare DBOS.

Run ``python -m benchmarks.durable_bench [--quick|--smoke] [--db URL] [--baseline DIR]`` or call
:func:`main` (the harness, ``python -m benchmarks``, does).

The workload is a spec written to a temporary package (:data:`SPEC`, :data:`IMPL`): a
``loop(N)`` of one sync step, ``tick : Turn -> Turn | Done``, N turns. ``steady`` keeps a state
of constant size (a counter); ``growing`` appends one ~40-character note to its state per turn,
as a conversation does.

1. **A durable step against a bare DBOS step** doing the same work on the same database: the
   same ``tick`` function, its value and state written as the same pydantic JSON, one
   ``DBOS.run_step_async`` per turn inside one workflow. Both are timed end to end in this
   process (wall clock: the database's writes are most of the cost), each run from a cold
   start (DBOS launched for it) at two sizes, and the cost per step is the slope between them
   (so start-up, checking the spec and the fingerprint cancel out). Median of the rounds, the
   two candidates alternating. Target ≤ 1.1.
2. **Recorded bytes per effect** for 10, 100 and 1,000-turn runs of ``steady`` and
   ``growing``: the bytes of every step DBOS keeps for the run (its output as stored, JSON) over
   the number of effects. Linear growth is a constant per effect; a snapshot of a growing state
   at every effect grows with the turn number (O(N²) in all).
3. **Non-durable runs unchanged**: the same ``steady`` loop run without a journal, interpreted
   (``mcec run``'s reference interpreter with the effect seam hooked, the path the durable
   change touched) and compiled, µs per step, in this tree and, with ``--baseline DIR`` (a
   checkout of the commit before durable runs, e.g. ``git worktree add /tmp/base main``), in
   that one: each timed in a fresh interpreter, alternating, median. Target ≤ 1.02.

The database is an SQLite file in a temporary folder unless ``--db`` names one (a
``postgresql://`` URL: the same comparison on a server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The package the workload spec is written to (in a temporary folder put on ``sys.path``).
PACKAGE = "durable_bench_spec"

IMPL = '''"""The durable benchmark's workload: one step, N turns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Never

from agentmonad import Ok, Outcome


@dataclass(frozen=True)
class Turn:
    n: int
    left: int


@dataclass(frozen=True)
class Done:
    n: int


@dataclass(frozen=True)
class Tally:
    count: int = 0
    notes: tuple[str, ...] = ()


def advance(turn: Turn) -> Turn | Done:
    """The next turn, or Done after the last."""
    return Turn(turn.n + 1, turn.left - 1) if turn.left > 1 else Done(turn.n + 1)


def tick(state: Tally, turn: Turn) -> Outcome[Tally, Never, Turn | Done]:
    """One turn; the state keeps a count (constant size)."""
    return Ok(advance(turn), Tally(state.count + 1, state.notes))


def note(state: Tally, turn: Turn) -> Outcome[Tally, Never, Turn | Done]:
    """One turn; the state keeps a note per turn (it grows, as a conversation does)."""
    return Ok(advance(turn), Tally(state.count + 1, (*state.notes, f"turn {turn.n:06d}: the model said something")))
'''

SPEC = f'''# The durable benchmark's workload (benchmarks/durable_bench.py).
from {PACKAGE}.impl import Turn, Done, Tally
import {PACKAGE}.impl as impl

state Tally

step tick : Turn -> Turn | Done = impl.tick
step note : Turn -> Turn | Done = impl.note

pipeline steady  : Turn -> Done ! LoopExhausted = loop(1000000) tick;
pipeline growing : Turn -> Done ! LoopExhausted = loop(1000000) note;
'''


def write_workload(folder: Path) -> Path:
    """Write the workload package into ``folder`` (put on ``sys.path``); the spec's path."""
    package = folder / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "impl.py").write_text(IMPL)
    (package / "loop.mce").write_text(SPEC)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return package / "loop.mce"


# ------------------------------------------------------------ bare DBOS: the same work, one step per turn

_bare_registered: list[Any] = []


def _bare_workflow() -> Any:
    """The bare DBOS workflow (registered once): N turns of ``tick``, each one
    ``DBOS.run_step_async`` returning the value and state as pydantic JSON, as a record does."""
    if _bare_registered:
        return _bare_registered[0]
    from dbos import DBOS
    from pydantic import TypeAdapter

    impl = __import__(f"{PACKAGE}.impl", fromlist=["impl"])
    values: TypeAdapter[Any] = TypeAdapter(impl.Turn | impl.Done)
    states: TypeAdapter[Any] = TypeAdapter(impl.Tally)

    @DBOS.workflow(name="durable_bench_bare")
    async def bare(turns: int, growing: bool) -> dict[str, Any]:
        turn: Any = impl.Turn(0, turns)
        state = impl.Tally()
        step = impl.note if growing else impl.tick
        while isinstance(turn, impl.Turn):
            current, before = turn, state

            async def body(current: Any = current, before: Any = before) -> dict[str, Any]:
                outcome = step(before, current)
                return {"ok": values.dump_python(outcome.value, mode="json"), "state": states.dump_python(outcome.state, mode="json")}

            record = await DBOS.run_step_async({"name": "tick"}, body)
            turn, state = values.validate_python(record["ok"]), states.validate_python(record["state"])
        return {"ok": values.dump_python(turn, mode="json")}

    _bare_registered.append(bare)
    return bare


def run_bare(url: str, turns: int, growing: bool = False) -> tuple[float, str]:
    """One bare run from a cold start (DBOS launched for it): its wall seconds and workflow id."""
    from dbos import DBOS, SetWorkflowID

    from agentmonad.durable.dbos import Engine

    bare = _bare_workflow()
    run_id = f"bare-{uuid.uuid4().hex[:10]}"
    started = time.perf_counter()
    engine = Engine(url)
    try:
        engine.launch(_no_runner)

        async def go() -> Any:
            with SetWorkflowID(run_id):
                handle = await DBOS.start_workflow_async(bare, turns, growing)
            return await handle.get_result()

        asyncio.run(go())
    finally:
        engine.close()
    return time.perf_counter() - started, run_id


async def _no_runner(request: dict[str, Any], store: Any, records: Any) -> dict[str, Any]:
    raise AssertionError("the bare benchmark starts no mcec run")


def run_durable(url: str, spec: Path, turns: int, pipeline: str = "steady") -> tuple[float, str]:
    """One durable run (``mcec.durable.run``, as ``mcec run --durable`` makes it): wall seconds
    and run id."""
    from mcec import durable

    run_id = f"mcec-{uuid.uuid4().hex[:10]}"
    started = time.perf_counter()
    report = durable.run(spec, pipeline, json.dumps({"n": 0, "left": turns}), run_id=run_id, db=url)
    elapsed = time.perf_counter() - started
    assert report.get("ok") is True, report
    return elapsed, run_id


def bench_step(url: str, spec: Path, sizes: tuple[int, int], rounds: int, warm_up: bool = True) -> dict[str, Any]:
    """Durable step / bare DBOS step: per-step wall ms as the slope between two sizes, median of
    ``rounds`` (the candidates alternate, the small and large runs of each adjacent)."""
    small, large = sizes
    slopes: dict[str, list[float]] = {"mcec": [], "dbos": []}
    if warm_up:  # the first run imports DBOS, pydantic's schemas, the spec
        run_durable(url, spec, small)
        run_bare(url, small)
    for _ in range(rounds):
        for name, run in (("mcec", lambda n: run_durable(url, spec, n)), ("dbos", lambda n: run_bare(url, n))):
            low, _ = run(small)
            high, _ = run(large)
            slopes[name].append((high - low) / (large - small))
    mcec_ms = statistics.median(slopes["mcec"]) * 1000
    dbos_ms = statistics.median(slopes["dbos"]) * 1000
    ratio = mcec_ms / dbos_ms if dbos_ms > 0 else float("inf")
    return {
        "sizes": list(sizes),
        "rounds": rounds,
        "mcec_ms_per_step": round(mcec_ms, 4),
        "dbos_ms_per_step": round(dbos_ms, 4),
        "ratio": round(ratio, 3),
        "target": 1.1,
        "target_met": ratio <= 1.1,
        "slopes_ms": {k: [round(v * 1000, 4) for v in vs] for k, vs in slopes.items()},
    }


def recorded_bytes(url: str, run_id: str) -> tuple[int, int]:
    """The bytes DBOS keeps for ``run_id``'s steps (each output as stored: JSON) and their number."""
    from agentmonad.durable.dbos import Engine, JsonSerializer

    serializer = JsonSerializer()
    engine = Engine(url)
    try:
        steps = engine.client.list_workflow_steps(run_id)
    finally:
        engine.close()
    return sum(len(serializer.serialize(s["output"]).encode("utf-8")) for s in steps), len(steps)


def bench_bytes(url: str, spec: Path, turns: list[int], with_dbos: bool = True) -> dict[str, Any]:
    """Recorded bytes per effect of ``steady`` and ``growing`` at each number of turns, and the
    growth exponent of the total between the smallest and largest run (1: linear; 2: quadratic)."""
    import math

    out: dict[str, Any] = {}
    for pipeline in ("steady", "growing"):
        rows: dict[str, Any] = {}
        for n in turns:
            _, run_id = run_durable(url, spec, n, pipeline)
            total, effects = recorded_bytes(url, run_id)
            rows[str(n)] = {"effects": effects, "bytes": total, "bytes_per_effect": round(total / max(effects, 1), 1)}
        first, last = rows[str(turns[0])], rows[str(turns[-1])]
        exponent = math.log(last["bytes"] / first["bytes"]) / math.log(turns[-1] / turns[0])
        out[pipeline] = {"turns": rows, "exponent": round(exponent, 3), "linear": exponent <= 1.1}
    # the same for the bare DBOS workflow (it records each turn's value and state too)
    bare: dict[str, Any] = {}
    for n in (turns[0], turns[-1]) if with_dbos else ():
        _, run_id = run_bare(url, n, growing=True)
        total, effects = recorded_bytes(url, run_id)
        bare[str(n)] = {"effects": effects, "bytes": total, "bytes_per_effect": round(total / max(effects, 1), 1)}
    out["dbos_growing"] = {"turns": bare}
    return out


# ------------------------------------------------------------ non-durable runs, this tree against a baseline

_NONDURABLE = r'''
import asyncio, json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from mcec.compiler import compile_source
from mcec.span import SourceFile
from mcec.run.runner import load_module
from mcec.run.interpret import interpret
from agentmonad.context import hooks
import durable_bench_spec.impl as impl
spec = Path(sys.argv[1]) / "durable_bench_spec" / "loop.mce"
result = compile_source(SourceFile(str(spec), spec.read_text()))
module = load_module(result.program, result.generated)
turns, reps = int(sys.argv[2]), int(sys.argv[3])
def timed(make):
    best = float("inf")
    for _ in range(reps):
        started = time.process_time()
        asyncio.run(make())
        best = min(best, time.process_time() - started)
    return best / turns * 1e6
async def interpreted():
    with hooks():
        await interpret(result.program, "steady", impl.Tally(), impl.Turn(0, turns))
async def compiled():
    await module.steady(impl.Tally(), impl.Turn(0, turns))
print(json.dumps({"interpreted_us": timed(interpreted), "compiled_us": timed(compiled)}))
'''


def _nondurable_once(tree: Path, folder: Path, turns: int, reps: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree / "runtime"), str(tree)]))
    done = subprocess.run(
        [sys.executable, "-c", _NONDURABLE, str(folder), str(turns), str(reps)],
        capture_output=True, text=True, env=env, timeout=600, cwd=tree,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the non-durable run in {tree} failed: {done.stderr.strip()[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def bench_nondurable(folder: Path, baseline: Path | None, turns: int, rounds: int, reps: int) -> dict[str, Any]:
    """µs per step of the non-durable ``steady`` loop, interpreted (hooked) and compiled, in this
    tree and in ``baseline`` (alternating fresh interpreters; median of ``rounds``), and their ratios."""
    trees = {"this": ROOT, **({"baseline": baseline} if baseline is not None else {})}
    samples: dict[str, dict[str, list[float]]] = {name: {"interpreted_us": [], "compiled_us": []} for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            for key, value in _nondurable_once(tree, folder, turns, reps).items():
                samples[name][key].append(value)
    out: dict[str, Any] = {"turns": turns, "rounds": rounds}
    for name in trees:
        out[name] = {key: round(statistics.median(values), 3) for key, values in samples[name].items()}
    if baseline is not None:
        ratios = {key: round(out["this"][key] / out["baseline"][key], 3) for key in ("interpreted_us", "compiled_us")}
        out["ratio"] = ratios
        out["target"] = 1.02
        out["target_met"] = all(r <= 1.02 for r in ratios.values())
    return out


# ------------------------------------------------------------ the whole benchmark


def main(quick: bool = False, smoke: bool = False, db: str | None = None, baseline: Path | None = None) -> dict[str, Any]:
    """Every comparison; the figures. Full: the step slope between 100 and 1,000 turns, 5 rounds;
    bytes at 10, 100 and 1,000 turns; non-durable loops of 2,000 turns, 7 rounds. ``quick``: 50 and
    300 turns, 3 rounds. ``smoke`` (the test suite's): 5 and 20 turns, one round, no warm-up; bytes
    at 5 and 20, not of bare DBOS."""
    sizes = (5, 20) if smoke else (50, 300) if quick else (100, 1_000)
    rounds = 1 if smoke else 3 if quick else 5
    turns = [5, 20] if smoke else [10, 100, 1_000]
    with tempfile.TemporaryDirectory(prefix="mcec-durable-bench-") as scratch:
        folder = Path(scratch)
        spec = write_workload(folder)
        url = db or f"sqlite:///{folder / 'runs.sqlite'}"
        started = time.perf_counter()
        results: dict[str, Any] = {
            "database": "postgresql" if url.startswith("postgres") else "sqlite",
            "step": bench_step(url, spec, sizes, rounds, warm_up=not smoke),
            "bytes": bench_bytes(url, spec, turns, with_dbos=not smoke),
            "nondurable": bench_nondurable(folder, baseline, 200 if smoke else 2_000, 1 if smoke else 7, 1 if smoke else 3),
        }
        results["seconds"] = round(time.perf_counter() - started, 1)
        results["load_average"] = os.getloadavg()[0]
    return results


def print_detail(results: dict[str, Any]) -> None:
    """Human-readable detail of :func:`main`'s figures."""
    s = results["step"]
    print(f"\n### durable step / bare DBOS step ({results['database']}; slope {s['sizes'][0]}→{s['sizes'][1]} turns, median of {s['rounds']})\n")
    print("| candidate | ms per step |\n|---|---|")
    print(f"| mcec durable step | {s['mcec_ms_per_step']:.3f} |\n| bare DBOS step | {s['dbos_ms_per_step']:.3f} |")
    print(f"\nratio {s['ratio']:.3f} (target ≤ {s['target']})")
    print("\n### recorded bytes per effect\n")
    print("| pipeline | turns | effects | bytes | bytes/effect |\n|---|---|---|---|---|")
    for pipeline in ("steady", "growing", "dbos_growing"):
        for n, row in results["bytes"][pipeline]["turns"].items():
            print(f"| {pipeline} | {n} | {row['effects']} | {row['bytes']:,} | {row['bytes_per_effect']:,} |")
    nd = results["nondurable"]
    print(f"\n### non-durable steady loop, µs per step ({nd['turns']} turns, median of {nd['rounds']})\n")
    for name in ("this", "baseline"):
        if name in nd:
            print(f"- {name}: interpreted {nd[name]['interpreted_us']:.2f}, compiled {nd[name]['compiled_us']:.2f}")
    if "ratio" in nd:
        print(f"- this / baseline: interpreted {nd['ratio']['interpreted_us']:.3f}, compiled {nd['ratio']['compiled_us']:.3f} (target ≤ 1.02)")


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--db", default=None, help="the database (default: an SQLite file in a temporary folder)")
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout to compare non-durable runs with")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _arguments(None)
    figures = main(quick=args.quick, smoke=args.smoke, db=args.db, baseline=args.baseline)
    print_detail(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
