"""Peer comparison (issue #6): mcec-compiled pipelines against hand-written
Python, the ``agentmonad`` interpreter, a nested-closure monad, LangChain
(LCEL), ``returns`` and LangGraph.

Run ``python -m benchmarks.peers [--quick]`` or call :func:`main`. Peers that
are not installed (``pip install -e '.[bench]'``) are skipped and reported as
such. Every ratio compares figures measured in the same process run.

Workloads (see ``benchmarks/README.md``):

1. ``chain``: N = 10, 100, 1,000 trivial steps (``value + 1``, state passed
   through), sync and async steps; µs per step, CPU time, median of
   interleaved rounds after warm-up.
2. ``depth``: the longest chain (1k, 10k, 100k) each system runs, each attempt
   in a subprocess with a timeout.
3. ``fanout``: 1,000 branches sleeping 50 ms; wall time / 50 ms.
4. ``failfast``: 50 branches, one fails after 10 ms, the rest sleep 1 s; time
   to the result and how many siblings were cancelled by then.
5. ``compiler``: per-step compile time at 1,000 and 10,000 steps and mypy time
   (taken from ``codegen_bench`` when it ran in the same harness run).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentmonad import AgentMonad, Err, Ok, Site, lift_step

from benchmarks import workloads as w

ROOT = Path(__file__).resolve().parent.parent

#: Display names of the systems, in table order.
SYSTEMS = {
    "floor": "(a) hand-written straight-line Python (floor)",
    "mcec": "(b) mcec-compiled pipeline",
    "agentmonad": "(c) agentmonad AgentMonad.then",
    "closure": "(d) nested-closure monad as in the paper (our re-implementation)",
    "lcel": "(e) langchain-core RunnableSequence of RunnableLambda",
    "returns": "(f) returns Result.bind / FutureResult.bind",
    "langgraph": "(g) langgraph StateGraph, N sequential nodes",
}


def installed(module: str) -> bool:
    """Whether an optional peer is importable."""
    return importlib.util.find_spec(module) is not None


PEERS_AVAILABLE = {
    "lcel": installed("langchain_core"),
    "returns": installed("returns"),
    "langgraph": installed("langgraph"),
}


def versions() -> dict[str, str]:
    """Versions of the peers (and mcec's own dependencies) that are installed."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("mcec", "langchain-core", "langgraph", "returns", "black", "libcst", "lark", "mypy"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


# ======================================================================
# Chain builders: each returns a zero-argument callable running the chain once
# on (state=7, value=0) and returning (state, value) — or an awaitable of it.
# ======================================================================


def build_floor(n: int, is_async: bool) -> Callable[[], Any]:
    """(a) Hand-written straight-line code with an explicit check per step."""
    fn = w.straight_line(n, is_async)
    return lambda: _ok_pair(fn(7, 0))


def build_mcec(n: int, is_async: bool) -> Callable[[], Any]:
    """(b) The mcec-compiled pipeline (spec generated, compiled in memory; cached module reused)."""
    text = w.chain_spec(n, is_async)
    code = w.compile_text(text) if n <= 100 else w.compiled_code(text)
    pipeline = w.load(code, f"chain_{n}").p
    return lambda: _ok_pair(pipeline(7, 0))


async def _pair(aw: Awaitable[Any]) -> tuple[int, int]:
    out = await aw
    return (out.state, out.value)


def _ok_pair(aw: Awaitable[Any]) -> Awaitable[tuple[int, int]]:
    return _pair(aw)


def build_agentmonad(n: int, is_async: bool) -> Callable[[], Any]:
    """(c) ``lift_step`` arrows joined with ``AgentMonad.then`` (built once, run repeatedly)."""
    impl: Any = w.ainc if is_async else w.inc
    arrows = [
        lift_step(impl, name="inc", errors=(), is_async=is_async, site=Site("inc", "bench.mce", i + 1, 1))
        for i in range(n)
    ]
    prog: AgentMonad[int, Any, int] = arrows[0](0)
    for arrow in arrows[1:]:
        prog = prog.then(arrow)
    return lambda: _ok_pair(prog.run(7))


# -- (d) the paper's shape: ``then`` wraps the previous run in a new closure


class ClosureMonad:
    """A state + error monad the way the paper's listing builds it: ``run`` is a
    closure ``state -> (Ok | Err)``, and ``then`` returns a new monad whose
    ``run`` calls the previous ``run`` and then the continuation's. A chain of
    N binds is N nested closures, so running it recurses N deep."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[[Any], Any]) -> None:
        self.run = run

    @staticmethod
    def pure(value: Any) -> ClosureMonad:
        """Succeed with ``value``."""
        return ClosureMonad(lambda state: Ok(value, state))

    def then(self, k: Callable[[Any], ClosureMonad]) -> ClosureMonad:
        """Bind: run self; on ``Ok`` run ``k(value)`` on the new state."""
        previous = self.run

        def run(state: Any) -> Any:
            out = previous(state)
            if not isinstance(out, Ok):
                return out
            return k(out.value).run(out.state)

        return ClosureMonad(run)


class AsyncClosureMonad:
    """:class:`ClosureMonad` with ``async`` runs (each bind awaits the previous run)."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[[Any], Awaitable[Any]]) -> None:
        self.run = run

    @staticmethod
    def pure(value: Any) -> AsyncClosureMonad:
        """Succeed with ``value``."""

        async def run(state: Any) -> Any:
            return Ok(value, state)

        return AsyncClosureMonad(run)

    def then(self, k: Callable[[Any], AsyncClosureMonad]) -> AsyncClosureMonad:
        """Bind: await self; on ``Ok`` await ``k(value)`` on the new state."""
        previous = self.run

        async def run(state: Any) -> Any:
            out = await previous(state)
            if not isinstance(out, Ok):
                return out
            return await k(out.value).run(out.state)

        return AsyncClosureMonad(run)


def build_closure(n: int, is_async: bool) -> Callable[[], Any]:
    """(d) Our re-implementation of the paper's nested-closure monad."""
    if is_async:

        def astep(value: int) -> AsyncClosureMonad:
            async def run(state: int) -> Any:
                return await w.ainc(state, value)

            return AsyncClosureMonad(run)

        aprog = AsyncClosureMonad.pure(0)
        for _ in range(n):
            aprog = aprog.then(astep)
        return lambda: _ok_pair(aprog.run(7))

    def step(value: int) -> ClosureMonad:
        return ClosureMonad(lambda state: w.inc(state, value))

    prog = ClosureMonad.pure(0)
    for _ in range(n):
        prog = prog.then(step)

    def once() -> tuple[int, int]:
        out = prog.run(7)
        return (out.state, out.value)

    return once


def build_lcel(n: int, is_async: bool) -> Callable[[], Any]:
    """(e) ``RunnableSequence`` of ``RunnableLambda``; ``invoke`` / ``ainvoke``."""
    from langchain_core.runnables import RunnableLambda, RunnableSequence

    if is_async:

        async def astep(sv: tuple[int, int]) -> tuple[int, int]:
            return (sv[0], sv[1] + 1)

        aseq = RunnableSequence(*[RunnableLambda(astep) for _ in range(n)]) if n > 1 else RunnableLambda(astep)
        return lambda: aseq.ainvoke((7, 0))

    def step(sv: tuple[int, int]) -> tuple[int, int]:
        return (sv[0], sv[1] + 1)

    seq = RunnableSequence(*[RunnableLambda(step) for _ in range(n)]) if n > 1 else RunnableLambda(step)
    return lambda: seq.invoke((7, 0))


def build_returns(n: int, is_async: bool) -> Callable[[], Any]:
    """(f) ``Success(...).bind(step)`` × N (sync) / ``FutureSuccess(...).bind`` × N (async)."""
    if is_async:
        from returns.future import FutureSuccess
        from returns.io import IOSuccess
        from returns.unsafe import unsafe_perform_io

        def fstep(sv: tuple[int, int]) -> Any:
            return FutureSuccess((sv[0], sv[1] + 1))

        async def arun() -> tuple[int, int]:
            future = FutureSuccess((7, 0))
            for _ in range(n):
                future = future.bind(fstep)
            out = await future
            assert isinstance(out, IOSuccess)
            pair: tuple[int, int] = unsafe_perform_io(out.unwrap())
            return pair

        return arun

    from returns.result import Success

    def step(sv: tuple[int, int]) -> Any:
        return Success((sv[0], sv[1] + 1))

    def run() -> tuple[int, int]:
        result = Success((7, 0))
        for _ in range(n):
            result = result.bind(step)
        pair: tuple[int, int] = result.unwrap()
        return pair

    return run


def build_langgraph(n: int, is_async: bool) -> Callable[[], Any]:
    """(g) ``StateGraph`` with N sequential nodes, ``recursion_limit`` raised to fit."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class ChainState(TypedDict):
        state: int
        value: int

    def node(s: ChainState) -> dict[str, int]:
        return {"value": s["value"] + 1}

    async def anode(s: ChainState) -> dict[str, int]:
        return {"value": s["value"] + 1}

    graph = StateGraph(ChainState)
    for i in range(n):
        graph.add_node(f"n{i}", anode if is_async else node)
    graph.add_edge(START, "n0")
    for i in range(n - 1):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge(f"n{n - 1}", END)
    app = graph.compile()
    config: Any = {"recursion_limit": n + 10}

    def pair(out: dict[str, int]) -> tuple[int, int]:
        return (out["state"], out["value"])

    if is_async:

        async def arun() -> tuple[int, int]:
            return pair(await app.ainvoke({"state": 7, "value": 0}, config))

        return arun
    return lambda: pair(app.invoke({"state": 7, "value": 0}, config))


BUILDERS: dict[str, Callable[[int, bool], Callable[[], Any]]] = {
    "floor": build_floor,
    "mcec": build_mcec,
    "agentmonad": build_agentmonad,
    "closure": build_closure,
    "lcel": build_lcel,
    "returns": build_returns,
    "langgraph": build_langgraph,
}


def available(system: str) -> bool:
    """Whether a system can run here (peers may be missing)."""
    return PEERS_AVAILABLE.get(system, True)


async def _call(fn: Callable[[], Any]) -> Any:
    out = fn()
    if isinstance(out, Awaitable):
        out = await out
    return out


def _describe(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:120]


# ======================================================================
# 1. chain
# ======================================================================


async def _chain_case(n: int, is_async: bool, rounds: int) -> dict[str, Any]:
    candidates: dict[str, Callable[[], Any]] = {}
    errors: dict[str, str] = {}
    for system, build in BUILDERS.items():
        if not available(system):
            errors[system] = "not installed"
            continue
        try:
            fn = build(n, is_async)
            out = await _call(fn)
            assert tuple(out) == (7, n), out
        except (Exception, RecursionError) as exc:  # a crash is a result here
            errors[system] = _describe(exc)
            continue
        candidates[system] = fn
    inner = max(1, 1_000 // n)
    times = await w.ainterleaved(candidates, rounds=rounds, inner=inner)
    us = {k: round(v / n * 1e6, 4) for k, v in times.items()}
    floor = times["floor"]
    return {
        "us_per_step": us,
        "ratio_to_floor": {k: round(v / floor, 3) for k, v in times.items()},
        "errors": errors,
    }


def bench_chain(sizes: list[int], rounds: int) -> dict[str, Any]:
    """Workload 1: µs/step for every system, N in ``sizes``, sync and async."""
    out: dict[str, Any] = {}
    for is_async in (False, True):
        for n in sizes:
            out[f"{'async' if is_async else 'sync'}_{n}"] = asyncio.run(_chain_case(n, is_async, rounds))
    return out


def lcel_profile(n: int = 100) -> str:
    """cProfile top entries of LCEL ``invoke`` over ``n`` steps (where its time goes)."""
    fn = build_lcel(n, False)
    return w.profile_top(lambda: [fn() for _ in range(20)], limit=12)


# ======================================================================
# 2. depth (each attempt in a child process)
# ======================================================================

DEPTH_SYSTEMS = ["mcec", "agentmonad", "closure", "lcel", "returns", "langgraph"]


def depth_attempt(system: str, n: int) -> dict[str, Any]:
    """Build and run an ``n``-step chain of ``system`` once (sync steps; mcec's
    pipeline is a coroutine). Runs in the child process."""
    t0 = time.perf_counter()
    fn = BUILDERS[system](n, False)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = asyncio.run(_call(fn))
    t_run = time.perf_counter() - t0
    assert tuple(out) == (7, n), out
    return {"ok": True, "build_seconds": round(t_build, 3), "run_seconds": round(t_run, 3)}


def _depth_in_subprocess(system: str, n: int, timeout: float) -> dict[str, Any]:
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.peers", "--depth", system, str(n)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout:.0f} s"}
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        result: dict[str, Any] = json.loads(lines[-1])
        return result
    err = [line for line in proc.stderr.strip().splitlines() if line.strip()]
    last = err[-1] if err else f"exit status {proc.returncode}"
    if proc.returncode < 0:
        last = f"killed by signal {-proc.returncode} (crash)"
    return {"ok": False, "error": last[:160]}


def bench_depth(
    sizes: list[int], timeout: float, mcec_timeout: float, systems: list[str] = DEPTH_SYSTEMS
) -> dict[str, Any]:
    """Workload 2: for each system, attempt each size until one fails."""
    out: dict[str, Any] = {}
    for system in systems:
        if not available(system):
            out[system] = {"skipped": "not installed"}
            continue
        attempts: dict[str, Any] = {}
        deepest = 0
        for n in sizes:
            limit = mcec_timeout if system == "mcec" else timeout
            result = _depth_in_subprocess(system, n, limit)
            attempts[str(n)] = result
            if not result.get("ok"):
                break
            deepest = n
        out[system] = {"attempts": attempts, "deepest_ok": deepest}
    return out


# ======================================================================
# 3. fan-out and 4. fail-fast
# ======================================================================


#: Branches of the fan-out workload (``par`` of that many ``nap``s, ``each`` over that many values).
FANOUT_BRANCHES = 1_000
#: Branches of the fail-fast workload.
FAILFAST_BRANCHES = 50


def _mcec_groups(branches: int, failing: int) -> dict[str, Any]:
    """The compiled fan-out / fail-fast pipelines (``each`` and literal ``par``)."""
    each_mod = w.load(w.compile_text(w.FANOUT_SPEC), "fanout_each")
    par_mod = w.load(w.compiled_code(w.par_spec(branches)), "fanout_par")
    fail_mod = w.load(w.compiled_code(w.par_failfast_spec(failing)), "failfast_par")
    return {"each": each_mod, "par": par_mod, "parfail": fail_mod}


async def _fanout(branches: int, repeats: int, mods: dict[str, Any]) -> dict[str, Any]:
    from_lcel: dict[str, Callable[[], Awaitable[Any]]] = {}
    if available("lcel"):
        from langchain_core.runnables import RunnableLambda, RunnableParallel

        async def lnap(x: int) -> int:
            await asyncio.sleep(0.05)
            return x

        parallel = RunnableParallel({f"b{i}": RunnableLambda(lnap) for i in range(branches)})
        from_lcel["lcel_parallel"] = lambda: parallel.ainvoke(0)

    values = list(range(branches))

    async def gather() -> Any:
        return await asyncio.gather(*[w.nap(0, v) for v in values])

    candidates: dict[str, Callable[[], Awaitable[Any]]] = {
        "mcec_each": lambda: mods["each"].fan(0, values),
        "mcec_par": lambda: mods["par"].fanpar(0, 0),
        "asyncio_gather": gather,
        **from_lcel,
    }
    for name, fn in candidates.items():
        out = await fn()
        if name.startswith("mcec"):
            assert isinstance(out, Ok) and len(out.value) == branches, out
    times = await w.ainterleaved(candidates, rounds=repeats, inner=1, warmup=1, clock=time.perf_counter)
    return {
        "branches": branches,
        "wall_ms": {k: round(v * 1e3, 1) for k, v in times.items()},
        "ratio_to_50ms": {k: round(v / 0.05, 3) for k, v in times.items()},
    }


async def _failfast_once(name: str, fn: Callable[[], Awaitable[Any]], siblings: int) -> dict[str, Any]:
    w.FAILFAST_LOG.update(cancelled=0, finished=0)
    before = asyncio.all_tasks()
    t0 = time.perf_counter()
    try:
        out: Any = await fn()
    except w.Boom as exc:
        out = exc
    elapsed = time.perf_counter() - t0
    cancelled, finished = w.FAILFAST_LOG["cancelled"], w.FAILFAST_LOG["finished"]
    failed = isinstance(out, w.Boom) or (isinstance(out, Err) and isinstance(out.error, w.Boom))
    # clean up what the system left running, so the next trial starts clean
    leftovers = [t for t in asyncio.all_tasks() - before if not t.done()]
    for task in leftovers:
        task.cancel()
    await asyncio.gather(*leftovers, return_exceptions=True)
    return {
        "ms": elapsed * 1e3,
        "failed_with_boom": failed,
        "cancelled": cancelled,
        "still_running": siblings - cancelled - finished,
    }


async def _failfast(branches: int, repeats: int, mods: dict[str, Any]) -> dict[str, Any]:
    values = list(range(branches))
    siblings = branches - 1

    async def gather() -> Any:
        return await asyncio.gather(*[w.slow_or_fail(0, v) for v in values])

    async def taskgroup() -> Any:
        async with asyncio.TaskGroup() as group:
            for v in values:
                group.create_task(w.slow_or_fail(0, v))

    async def taskgroup_unwrapped() -> Any:
        try:
            return await taskgroup()
        except* w.Boom as eg:
            raise eg.exceptions[0] from None

    candidates: dict[str, Callable[[], Awaitable[Any]]] = {
        "mcec_each": lambda: mods["each"].failfast(0, values),
        "mcec_par": lambda: mods["parfail"].parfail(0, 0),
        "asyncio_gather": gather,
        "asyncio_taskgroup": taskgroup_unwrapped,
    }
    if available("lcel"):
        from langchain_core.runnables import RunnableLambda, RunnableParallel

        def branch(i: int) -> Any:
            async def run(x: int) -> int:
                out = await w.slow_or_fail(0, i)
                return out.value

            return RunnableLambda(run)

        parallel = RunnableParallel({f"b{i}": branch(i) for i in range(branches)})
        candidates["lcel_parallel"] = lambda: parallel.ainvoke(0)
    trials: dict[str, list[dict[str, Any]]] = {name: [] for name in candidates}
    for r in range(repeats):
        names = list(candidates)
        for name in names[r % len(names):] + names[: r % len(names)]:
            trials[name].append(await _failfast_once(name, candidates[name], siblings))
    out: dict[str, Any] = {}
    for name, runs in trials.items():
        out[name] = {
            "ms": round(statistics.median(t["ms"] for t in runs), 1),
            "failed_with_boom": all(t["failed_with_boom"] for t in runs),
            "cancelled_at_result": min(t["cancelled"] for t in runs),
            "still_running_at_result": max(t["still_running"] for t in runs),
            "siblings": siblings,
        }
        out[name]["all_cancelled"] = out[name]["cancelled_at_result"] == siblings
    return out


def bench_groups(branches: int, failing: int, repeats: int) -> dict[str, Any]:
    """Workloads 3 and 4."""
    mods = _mcec_groups(branches, failing)

    async def both() -> dict[str, Any]:
        return {
            "fanout": await _fanout(branches, repeats, mods),
            "failfast": await _failfast(failing, repeats, mods),
        }

    return asyncio.run(both())


# ======================================================================
# 5. compiler, and main
# ======================================================================


def compiler_figures(codegen: dict[str, Any] | None, sizes: list[int]) -> dict[str, Any]:
    """Per-step compile figures; from ``codegen_bench`` when it already ran."""
    from benchmarks import codegen_bench

    if codegen is not None and all(str(n) in codegen["compile"]["sizes"] for n in sizes):
        source = codegen["compile"]
        measured_here = False
    else:
        source = codegen_bench.bench_compile(sizes, mypy=True, repeats={})
        measured_here = True
    rows = {}
    for n in sizes:
        row = source["sizes"][str(n)]
        rows[str(n)] = {
            "us_per_step": row["us_per_step"],
            "mypy_seconds": row.get("mypy_seconds"),
            "mypy_us_per_step": round(row["mypy_seconds"] / n * 1e6, 1) if row.get("mypy_seconds") else None,
        }
    return {"sizes": rows, "source": "measured here" if measured_here else "codegen_bench (same run)"}


def main(quick: bool = False, codegen: dict[str, Any] | None = None, smoke: bool = False) -> dict[str, Any]:
    """Run every peer workload; return the figures.

    ``quick``: small N; ``smoke`` (the test suite's): tiny N, only the
    checks that the harness works; ``codegen``: ``codegen_bench.main``'s
    figures from the same run, reused for the compiler workload.
    """
    quick = quick or smoke
    t0 = time.perf_counter()
    results: dict[str, Any] = {"versions": versions(), "peers_available": PEERS_AVAILABLE}
    sizes = [10] if smoke else [10, 100] if quick else [10, 100, 1_000]
    results["chain"] = bench_chain(sizes, rounds=3 if quick else 21)
    results["lcel_profile"] = lcel_profile(10 if quick else 100) if available("lcel") else None
    results["depth"] = bench_depth(
        [50] if smoke else [1_000] if quick else [1_000, 10_000, 100_000],
        timeout=60 if quick else 300,
        mcec_timeout=120 if quick else 3600,
        systems=["mcec", "closure"] if smoke else DEPTH_SYSTEMS,
    )
    # Every level compiles and runs the groups at their full width: a smaller smoke run once hid
    # that a 1,000-branch `par` did not compile (issue 36); only the repeats shrink.
    results["groups"] = bench_groups(
        branches=FANOUT_BRANCHES, failing=FAILFAST_BRANCHES, repeats=1 if smoke else 2 if quick else 7
    )
    if not quick:
        results["compiler"] = compiler_figures(codegen, [1_000, 10_000])
    results["seconds"] = round(time.perf_counter() - t0, 1)
    return results


def print_detail(results: dict[str, Any]) -> None:
    """Human-readable detail of :func:`main`'s figures."""
    print("\n### chain: µs per step (CPU time, median of interleaved rounds; ratio to the floor)\n")
    cases = list(results["chain"])
    print("| system | " + " | ".join(cases) + " |")
    print("|---|" + "---|" * len(cases))
    for system, label in SYSTEMS.items():
        cells = []
        for case in cases:
            c = results["chain"][case]
            if system in c["us_per_step"]:
                cells.append(f"{c['us_per_step'][system]:.3f} ({c['ratio_to_floor'][system]:.2f}×)")
            else:
                cells.append(c["errors"].get(system, "—"))
        print(f"| {label} | " + " | ".join(cells) + " |")
    if results.get("lcel_profile"):
        print(f"\nLCEL invoke profile (tottime):\n```\n{results['lcel_profile']}\n```")
    print("\n### depth: deepest chain that runs (each attempt in a subprocess)\n")
    for system, r in results["depth"].items():
        print(f"- {system}: {json.dumps(r)}")
    g = results["groups"]
    print(f"\n### fan-out: {g['fanout']['branches']} branches × sleep 50 ms (wall clock, median)\n")
    for name, ms in g["fanout"]["wall_ms"].items():
        print(f"- {name}: {ms} ms = {g['fanout']['ratio_to_50ms'][name]:.3f} × 50 ms")
    print("\n### fail-fast: one branch fails after 10 ms, siblings sleep 1 s\n")
    for name, r in g["failfast"].items():
        print(f"- {name}: {json.dumps(r)}")
    if "compiler" in results:
        print(f"\n### compiler per step\n\n{json.dumps(results['compiler'], indent=2)}")


if __name__ == "__main__":
    if "--depth" in sys.argv:
        i = sys.argv.index("--depth")
        print(json.dumps(depth_attempt(sys.argv[i + 1], int(sys.argv[i + 2]))))
    else:
        figures = main(quick="--quick" in sys.argv[1:])
        print_detail(figures)
