"""Durable runs side by side with LangGraph (issue 42, item 7): mcec on DBOS against a LangGraph
``StateGraph`` with its own durable checkpointer (``SqliteSaver`` / ``PostgresSaver``) and
``durability="sync"``, the same work, on the same disk and the same Postgres server.

Run ``python -m benchmarks.durable_peers_bench [--quick] [--db postgresql://…] [--json PATH]``.
SQLite: a file per side in one temporary folder. Postgres: ``--db``, else a server started for
the run as the tests start theirs (tests/pgserver.py: fsync off, for both sides alike); when
none can be started the Postgres rows are skipped and the figures say why.

The workload is written to a temporary package (:data:`IMPL`, :data:`SPEC`, :data:`LANGGRAPH`):
a loop of one trivial sync step, ``tick`` (a counter; ``note`` also appends a ~40-character note
to the state, as a conversation does), N turns. On LangGraph the same loop is one node whose
conditional edge goes back to itself until the turns are done (a superstep, so a checkpoint, per
turn), the notes a list channel with ``operator.add`` (each step adds only its note).

Rows (targets from the issue):

mcec's side is the product's run path (issue 42, item 1): the spec compiled ahead (``mcec
compile``, as a deployment does) and its module run by the runtime — ``agentmonad.durable.runs``
in-process, ``python -m agentmonad`` as a command, no compiler on the run path. The spec form (the
sugar that checks and compiles the spec in the calling process: ``mcec.durable``, ``mcec run
SPEC --durable``, ``mcec runs resume``) is timed beside it in rows 2 and 3 ("mcec spec form").

1. **per durable step** (≤ 1.0× LangGraph): ``runs.run(module, "steady", …)`` against
   ``graph.invoke(…, durability="sync")``, each call as a program makes it (the process keeps
   DBOS launched between calls, as DBOS is made to be; LangGraph opens its saver and compiles
   its graph for the call), wall ms per step as the slope between two sizes (so start-up
   cancels), median of the rounds.
2. **resume** of a 200-step run killed (``os._exit`` inside the step) at step 150 (≤ 1.0×):
   in-process, the wall of the call that finishes the run (``runs.resume`` / ``invoke(None)``
   on the same thread); and as a command (``python -m agentmonad runs resume ID`` / a script that
   invokes the graph again with the thread id). The killed runs are made by subprocesses, outside
   the clock (so an in-process resume comes after its process was idle: DBOS launched anew).
3. **ask → waiting → answer → finished** in-process (≤ 1.0×): ``prepare >>= approve >>= close``
   with an ``ask``, ``runs.run`` then ``runs.answer``, against the same three nodes with
   ``interrupt()`` and ``Command(resume=…)``.
4. **recorded bytes per step** (≤ 1/10 of LangGraph's): mcec's records as
   benchmarks/durable_bench.py counts them (each step's output as stored, JSON) against the bytes
   of LangGraph's rows for the thread (its checkpoints' and metadata's blobs, its writes, and on
   Postgres its channel blobs), a constant and a growing state.
5. **fixed costs**, mcec only: ``mcec.durable.queues.enqueue`` per call (≤ 5 ms), ``mcec runs
   list`` wall (≤ 0.6 s), ``mcec run --durable`` of a one-step spec against the same run not
   durable (≤ 1.2× plus DBOS's import, measured as ``import dbos`` after mcec's CLI is imported);
   a worker's own CPU per run beyond the run's work (≤ 5 ms): the CPU of ``python -m agentmonad
   worker`` per run of ``once`` (its idle polling taken off) less this process's CPU per run of the
   same pipeline in-process; an ``each`` element handed to a queue beyond its work (≤ 10 ms): wall
   per element of ``batch`` run with ``elements=True`` (each element enqueued, taken from its queue
   by this process, run as a workflow of its own, its result read back) less the same run without.

Every comparison alternates the sides round by round (the order rotating), and LangGraph (the
baseline) is timed twice per round: the ratio of its two copies is the run's A/A noise.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.durable_bench import recorded_bytes

ROOT = Path(__file__).resolve().parent.parent
#: The package the workload is written to (in a temporary folder put on ``sys.path``).
PACKAGE = "durable_peers_spec"
#: The spec's module, compiled ahead by :func:`write_workload`.
MODULE = f"{PACKAGE}.loop_mce"
#: The environment variable that makes a step kill its process (``os._exit``) at that turn.
KILL_ENV = "PEERS_BENCH_KILL_AT"
#: Row 2: the run's length and the turn it is killed at.
RESUME_TURNS, KILLED_AT = 200, 150

IMPL = f'''"""The durable peers benchmark's workload, mcec's side: one step, N turns."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Never

from agentmonad import Ok, Outcome

KILL_AT = int(os.environ.get("{KILL_ENV}", "0"))


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


def _advance(turn: Turn) -> Turn | Done:
    if KILL_AT and turn.n == KILL_AT:
        os._exit(9)  # killed in the middle of the run (row 2)
    return Turn(turn.n + 1, turn.left - 1) if turn.left > 1 else Done(turn.n + 1)


def tick(state: Tally, turn: Turn) -> Outcome[Tally, Never, Turn | Done]:
    """One turn; the state keeps a count (constant size)."""
    return Ok(_advance(turn), Tally(state.count + 1, state.notes))


def note(state: Tally, turn: Turn) -> Outcome[Tally, Never, Turn | Done]:
    """One turn; the state keeps a note per turn (it grows, as a conversation does)."""
    return Ok(_advance(turn), Tally(state.count + 1, (*state.notes, f"turn {{turn.n:06d}}: the model said something")))


def bump(state: Tally, n: int) -> Outcome[Tally, Never, int]:
    """One element of a batch (row 5: an element handed to a queue)."""
    return Ok(n + 1, state)


def prepare(state: Tally, turn: Turn) -> Outcome[Tally, Never, Turn]:
    """The step before the question."""
    return Ok(Turn(turn.n + 1, turn.left), state)


def close(state: Tally, approved: bool) -> Outcome[Tally, Never, Done]:
    """The step after the answer."""
    return Ok(Done(1 if approved else 0), state)
'''

SPEC = f'''# The durable peers benchmark's workload (benchmarks/durable_peers_bench.py).
from {PACKAGE}.impl import Turn, Done, Tally
import {PACKAGE}.impl as impl

state Tally

step tick    : Turn -> Turn | Done = impl.tick
step note    : Turn -> Turn | Done = impl.note
step prepare : Turn -> Turn        = impl.prepare
step close   : bool -> Done        = impl.close
step bump    : int -> int          = impl.bump
ask approve  : Turn -> bool

pipeline steady  : Turn -> Done ! LoopExhausted = loop(1000000) tick;
pipeline growing : Turn -> Done ! LoopExhausted = loop(1000000) note;
pipeline asking  : Turn -> Done ! NoOneToAsk | NoAnswer | BadAnswer = prepare >>= approve >>= close;
pipeline once    : Turn -> Turn = prepare;
pipeline batch   : list[int] -> list[int] ! MergeConflict = each(limit=8) bump;
'''

LANGGRAPH = f'''"""The durable peers benchmark's workload, LangGraph's side: the same loop as one node going
back to itself (a superstep, so a checkpoint, per turn), and the same ask as interrupt().

As a command: ``python -m {PACKAGE}.lg run DB THREAD N`` / ``resume DB THREAD`` (DB: an SQLite
file or a postgresql:// URL)."""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

KILL_AT = int(os.environ.get("{KILL_ENV}", "0"))
#: No limit on the supersteps of one invocation in practice (LangGraph's default is 25).
LIMIT = 10_000_000


class Loop(TypedDict):
    n: int
    left: int
    count: int
    notes: Annotated[list[str], operator.add]


class Asking(TypedDict):
    n: int
    approved: bool
    done: int


def _advance(state: Loop) -> dict[str, Any]:
    if KILL_AT and state["n"] == KILL_AT:
        os._exit(9)  # killed in the middle of the run (row 2)
    return {{"n": state["n"] + 1, "left": state["left"] - 1, "count": state["count"] + 1}}


def tick(state: Loop) -> dict[str, Any]:
    return _advance(state)


def note(state: Loop) -> dict[str, Any]:
    return {{**_advance(state), "notes": [f"turn {{state['n']:06d}}: the model said something"]}}


def _again(state: Loop) -> str:
    return END if state["left"] <= 0 else "step"


def _loop(step: Any) -> StateGraph:
    graph = StateGraph(Loop)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", _again, ["step", END])
    return graph


def _prepare(state: Asking) -> dict[str, Any]:
    return {{"n": state["n"] + 1}}


def _approve(state: Asking) -> dict[str, Any]:
    return {{"approved": bool(interrupt({{"n": state["n"]}}))}}


def _close(state: Asking) -> dict[str, Any]:
    return {{"done": 1 if state["approved"] else 0}}


def _asking() -> StateGraph:
    graph = StateGraph(Asking)
    graph.add_node("prepare", _prepare)
    graph.add_node("approve", _approve)
    graph.add_node("close", _close)
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "approve")
    graph.add_edge("approve", "close")
    graph.add_edge("close", END)
    return graph


GRAPHS = {{"steady": _loop(tick), "growing": _loop(note), "asking": _asking()}}


@contextmanager
def saver(db: str) -> Iterator[Any]:
    """LangGraph's durable checkpointer on ``db``: Postgres for a URL, else an SQLite file."""
    if db.startswith("postgres"):
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(db) as found:
            yield found
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(db) as found:
            yield found


def setup(db: str) -> None:
    """Make LangGraph's tables (PostgresSaver needs it called once; SqliteSaver does it itself)."""
    with saver(db) as checkpointer:
        checkpointer.setup()


def _config(thread: str) -> dict[str, Any]:
    return {{"configurable": {{"thread_id": thread}}, "recursion_limit": LIMIT}}


def run(db: str, thread: str, turns: int, graph: str = "steady") -> dict[str, Any]:
    """A run of the loop from a cold start (the saver opened, the graph compiled): its final state."""
    with saver(db) as checkpointer:
        app = GRAPHS[graph].compile(checkpointer=checkpointer)
        return dict(app.invoke({{"n": 0, "left": turns, "count": 0, "notes": []}}, _config(thread), durability="sync"))


def resume(db: str, thread: str, graph: str = "steady") -> dict[str, Any]:
    """Go on with the thread from its last checkpoint (LangGraph's resume: invoke with no input)."""
    with saver(db) as checkpointer:
        app = GRAPHS[graph].compile(checkpointer=checkpointer)
        return dict(app.invoke(None, _config(thread), durability="sync"))


def ask(db: str, thread: str) -> dict[str, Any]:
    """Start the asking graph: it stops at the interrupt (the result holds ``__interrupt__``)."""
    with saver(db) as checkpointer:
        app = GRAPHS["asking"].compile(checkpointer=checkpointer)
        return dict(app.invoke({{"n": 0, "approved": False, "done": 0}}, _config(thread), durability="sync"))


def answer(db: str, thread: str, value: bool) -> dict[str, Any]:
    """Answer the interrupt; the run goes on to its end."""
    with saver(db) as checkpointer:
        app = GRAPHS["asking"].compile(checkpointer=checkpointer)
        return dict(app.invoke(Command(resume=value), _config(thread), durability="sync"))


def recorded_bytes(db: str, thread: str) -> int:
    """The bytes of LangGraph's rows for ``thread``: checkpoints and their metadata, the writes,
    and on Postgres the channel blobs (as stored: SQLite's blobs, Postgres's JSONB as text)."""
    if db.startswith("postgres"):
        import psycopg

        with psycopg.connect(db) as conn:
            total = 0
            for query in (
                "select coalesce(sum(octet_length(checkpoint::text) + octet_length(metadata::text)), 0) from checkpoints where thread_id = %s",
                "select coalesce(sum(octet_length(blob)), 0) from checkpoint_blobs where thread_id = %s",
                "select coalesce(sum(octet_length(blob)), 0) from checkpoint_writes where thread_id = %s",
            ):
                row = conn.execute(query, (thread,)).fetchone()
                total += int(row[0]) if row else 0
            return total
    import sqlite3

    with sqlite3.connect(db) as conn:
        a = conn.execute("select coalesce(sum(length(checkpoint) + length(metadata)), 0) from checkpoints where thread_id = ?", (thread,)).fetchone()[0]
        b = conn.execute("select coalesce(sum(length(value)), 0) from writes where thread_id = ?", (thread,)).fetchone()[0]
        return int(a) + int(b)


if __name__ == "__main__":
    command, database, thread_id = sys.argv[1:4]
    if command == "run":
        out = run(database, thread_id, int(sys.argv[4]))
    else:
        out = resume(database, thread_id)
    print(out["n"])
'''


def write_workload(folder: Path) -> Path:
    """Write the workload package into ``folder`` (put on ``sys.path``); the spec's path."""
    package = folder / PACKAGE
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "impl.py").write_text(IMPL)
    (package / "lg.py").write_text(LANGGRAPH)
    (package / "loop.mce").write_text(SPEC)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    from mcec.cli import main as mcec

    if mcec(["compile", str(package / "loop.mce")]) != 0:  # the module runs are made of, as a deployment compiles it
        raise RuntimeError(f"mcec compile {package / 'loop.mce'} failed")
    return package / "loop.mce"


def _lg() -> Any:
    return __import__(f"{PACKAGE}.lg", fromlist=["lg"])


class Sides:
    """One database, both sides: mcec's URL and LangGraph's (an SQLite file each in the same
    folder, or the same Postgres database), the spec, and what a subprocess needs."""

    def __init__(self, folder: Path, spec: Path, postgres: str | None) -> None:
        self.folder, self.spec = folder, spec
        self.kind = "postgresql" if postgres else "sqlite"
        self.mcec_db = postgres or f"sqlite:///{folder / 'mcec.sqlite'}"
        self.lg_db = postgres or str(folder / "langgraph.sqlite")
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(spec.parent.parent), str(ROOT), str(ROOT / "runtime")]))
        self.env.pop("MCEC_DB", None)
        self.env.pop(KILL_ENV, None)
        _lg().setup(self.lg_db)

    def command(self, args: list[str], kill_at: int = 0, check: bool = True) -> tuple[float, subprocess.CompletedProcess[str]]:
        """``python ARGS`` in the workload's folder: its wall seconds and what it printed."""
        env = dict(self.env, **({KILL_ENV: str(kill_at)} if kill_at else {}))
        started = time.perf_counter()
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=self.folder, timeout=600)
        elapsed = time.perf_counter() - started
        if check and done.returncode != 0:
            raise RuntimeError(f"`{' '.join(args)}` exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        return elapsed, done

    # ---- mcec

    def mcec_run(self, turns: int, pipeline: str = "steady") -> tuple[float, str]:
        from agentmonad.durable import runs

        run_id = f"m{uuid.uuid4().hex[:10]}"
        started = time.perf_counter()
        report = runs.run(MODULE, pipeline, json.dumps({"n": 0, "left": turns}), run_id=run_id, db=self.mcec_db)
        elapsed = time.perf_counter() - started
        assert report.get("ok") is True and report["value"] == {"n": turns}, report
        return elapsed, run_id

    def mcec_killed(self, spec_form: bool = False) -> str:
        """A run of :data:`RESUME_TURNS` turns killed at :data:`KILLED_AT` by its own process,
        started from the compiled module (``python -m agentmonad run``) or the spec (``mcec run``)."""
        run_id = f"k{uuid.uuid4().hex[:10]}"
        start = ["mcec", "run", str(self.spec), "steady"] if spec_form else ["agentmonad", "run", f"{MODULE}:steady"]
        _, done = self.command(["-m", *start, "--input", json.dumps({"n": 0, "left": RESUME_TURNS}), "--durable",
                                "--run-id", run_id, "--db", self.mcec_db], kill_at=KILLED_AT, check=False)
        assert done.returncode == 9, (done.returncode, done.stderr[-2000:])
        return run_id

    def mcec_resume(self, run_id: str) -> float:
        from agentmonad.durable import runs

        started = time.perf_counter()
        report = runs.resume(run_id, db=self.mcec_db)
        elapsed = time.perf_counter() - started
        assert report.get("ok") is True and report["value"] == {"n": RESUME_TURNS}, report
        return elapsed

    def mcec_resume_command(self, run_id: str, spec_form: bool = False) -> float:
        elapsed, done = self.command(["-m", "mcec" if spec_form else "agentmonad", "runs", "resume", run_id,
                                      "--db", self.mcec_db])
        assert json.loads(done.stdout)["value"] == {"n": RESUME_TURNS}, done.stdout
        return elapsed

    def mcec_ask(self, spec_form: bool = False) -> float:
        from agentmonad.durable import runs
        from mcec import durable

        run_id = f"a{uuid.uuid4().hex[:10]}"
        started = time.perf_counter()
        if spec_form:
            waiting = durable.run(self.spec, "asking", json.dumps({"n": 0, "left": 1}), run_id=run_id, db=self.mcec_db)
        else:
            waiting = runs.run(MODULE, "asking", json.dumps({"n": 0, "left": 1}), run_id=run_id, db=self.mcec_db)
        finished = runs.answer(run_id, "approve", "true", db=self.mcec_db)
        elapsed = time.perf_counter() - started
        assert waiting.get("status") == "waiting", waiting
        assert finished.get("ok") is True and finished["value"] == {"n": 1}, finished
        return elapsed

    # ---- LangGraph

    def lg_run(self, turns: int, graph: str = "steady") -> tuple[float, str]:
        thread = f"t{uuid.uuid4().hex[:10]}"
        started = time.perf_counter()
        out = _lg().run(self.lg_db, thread, turns, graph)
        elapsed = time.perf_counter() - started
        assert out["n"] == turns and out["left"] == 0, {k: v for k, v in out.items() if k != "notes"}
        return elapsed, thread

    def lg_killed(self) -> str:
        thread = f"k{uuid.uuid4().hex[:10]}"
        _, done = self.command(["-m", f"{PACKAGE}.lg", "run", self.lg_db, thread, str(RESUME_TURNS)], kill_at=KILLED_AT, check=False)
        assert done.returncode == 9, (done.returncode, done.stderr[-2000:])
        return thread

    def lg_resume(self, thread: str) -> float:
        started = time.perf_counter()
        out = _lg().resume(self.lg_db, thread)
        elapsed = time.perf_counter() - started
        assert out["n"] == RESUME_TURNS and out["count"] == RESUME_TURNS, out
        return elapsed

    def lg_resume_command(self, thread: str) -> float:
        elapsed, done = self.command(["-m", f"{PACKAGE}.lg", "resume", self.lg_db, thread])
        assert done.stdout.strip() == str(RESUME_TURNS), done.stdout
        return elapsed

    def lg_ask(self) -> float:
        lg = _lg()
        thread = f"a{uuid.uuid4().hex[:10]}"
        started = time.perf_counter()
        waiting = lg.ask(self.lg_db, thread)
        finished = lg.answer(self.lg_db, thread, True)
        elapsed = time.perf_counter() - started
        assert "__interrupt__" in waiting, waiting
        assert finished["done"] == 1, finished
        return elapsed


def interleaved(candidates: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Each candidate once per round, the order rotating round by round: every sample."""
    names = list(candidates)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            samples[name].append(candidates[name]())
    return samples


def _compare(samples: dict[str, list[float]], scale: float, target: float, unit: str) -> dict[str, Any]:
    """mcec's median over LangGraph's (its A/A: LangGraph's second copy over its first)."""
    medians = {name: statistics.median(values) * scale for name, values in samples.items()}
    ratio = medians["mcec"] / medians["langgraph"] if medians["langgraph"] > 0 else float("inf")
    spec_form = {"spec_form_ratio": round(medians["mcec_spec"] / medians["langgraph"], 3)} if "mcec_spec" in medians else {}
    return {
        unit: {name: round(value, 3) for name, value in medians.items()},
        "ratio": round(ratio, 3),
        **spec_form,
        "aa": round(medians["langgraph_again"] / medians["langgraph"], 3) if medians["langgraph"] > 0 else None,
        "target": target,
        "target_met": ratio <= target,
        "samples": {name: [round(v * scale, 3) for v in values] for name, values in samples.items()},
    }


def bench_step(sides: Sides, sizes: tuple[int, int], rounds: int) -> dict[str, Any]:
    """Row 1: wall ms per durable step, the slope between ``sizes`` (cold starts cancel out)."""
    small, large = sizes

    def slope(run: Callable[[int], tuple[float, str]]) -> Callable[[], float]:
        return lambda: (run(large)[0] - run(small)[0]) / (large - small)

    sides.mcec_run(small)  # warm-up: the imports, pydantic's schemas, the spec's check
    sides.lg_run(small)
    samples = interleaved({"mcec": slope(sides.mcec_run), "langgraph": slope(sides.lg_run),
                           "langgraph_again": slope(sides.lg_run)}, rounds)
    return {"sizes": list(sizes), "rounds": rounds, **_compare(samples, 1000, 1.0, "ms_per_step")}


def _after(kill: Callable[[], str], resume: Callable[[str], float]) -> Callable[[], float]:
    """A candidate that kills a run, then times its resume: the kill is outside the clock."""
    return lambda: resume(kill())


def bench_resume(sides: Sides, rounds: int) -> dict[str, Any]:
    """Row 2: the resume of a run killed at step :data:`KILLED_AT` of :data:`RESUME_TURNS`, in
    process and as a command, wall ms (the killed runs are made outside the clock). Run after
    :func:`bench_step`, whose warm-up imported both sides in this process."""
    killed = {"mcec": sides.mcec_killed, "langgraph": sides.lg_killed, "langgraph_again": sides.lg_killed,
              "mcec_spec": lambda: sides.mcec_killed(spec_form=True)}
    resumes = {"mcec": sides.mcec_resume, "langgraph": sides.lg_resume, "langgraph_again": sides.lg_resume}
    commands = {"mcec": sides.mcec_resume_command, "langgraph": sides.lg_resume_command,
                "langgraph_again": sides.lg_resume_command,
                "mcec_spec": lambda run_id: sides.mcec_resume_command(run_id, spec_form=True)}
    in_process = interleaved({name: _after(killed[name], resumes[name]) for name in resumes}, rounds)
    as_command = interleaved({name: _after(killed[name], commands[name]) for name in commands}, rounds)
    return {"turns": RESUME_TURNS, "killed_at": KILLED_AT, "rounds": rounds,
            "in_process": _compare(in_process, 1000, 1.0, "ms"), "command": _compare(as_command, 1000, 1.0, "ms")}


def bench_ask(sides: Sides, rounds: int) -> dict[str, Any]:
    """Row 3: ask → waiting → answer → finished, in-process, wall ms."""
    sides.mcec_ask()  # warm-up
    sides.mcec_ask(spec_form=True)
    sides.lg_ask()
    samples = interleaved({"mcec": sides.mcec_ask, "langgraph": sides.lg_ask, "langgraph_again": sides.lg_ask,
                           "mcec_spec": lambda: sides.mcec_ask(spec_form=True)}, rounds)
    return {"rounds": rounds, **_compare(samples, 1000, 1.0, "ms")}


def bench_bytes(sides: Sides, turns: int) -> dict[str, Any]:
    """Row 4: recorded bytes per step of a ``turns``-turn run, constant and growing state."""
    out: dict[str, Any] = {"turns": turns}
    for pipeline in ("steady", "growing"):
        _, run_id = sides.mcec_run(turns, pipeline)
        mcec_bytes, effects = recorded_bytes(sides.mcec_db, run_id)
        _, thread = sides.lg_run(turns, pipeline)
        lg_bytes = _lg().recorded_bytes(sides.lg_db, thread)
        ratio = mcec_bytes / lg_bytes if lg_bytes else float("inf")
        out[pipeline] = {
            "mcec_bytes": mcec_bytes, "mcec_effects": effects, "langgraph_bytes": lg_bytes,
            "mcec_per_step": round(mcec_bytes / turns, 1), "langgraph_per_step": round(lg_bytes / turns, 1),
            "ratio": round(ratio, 4), "target": 0.1, "target_met": ratio <= 0.1,
        }
    return out


_IMPORT_MCEC = "import mcec.cli"
_IMPORT_DBOS = "import mcec.cli, dbos"


def bench_fixed(sides: Sides, rounds: int) -> dict[str, Any]:
    """Row 5 (mcec only): enqueue per call, ``mcec runs list``, ``mcec run --durable`` of one
    step against the same run not durable (and DBOS's import, which the target allows for)."""
    from mcec.durable.queues import enqueue

    calls: list[float] = []
    for _ in range(max(5, rounds * 3)):
        started = time.perf_counter()
        got = enqueue(str(sides.spec), "once", json.dumps({"n": 0, "left": 1}), db=sides.mcec_db)
        calls.append(time.perf_counter() - started)
        assert got["status"] == "enqueued", got
    one_step = [str(sides.spec), "once", "--input", json.dumps({"n": 0, "left": 1})]
    walls = interleaved({
        "runs_list": lambda: sides.command(["-m", "mcec", "runs", "list", "--db", sides.mcec_db])[0],
        "run_durable": lambda: sides.command(["-m", "mcec", "run", *one_step, "--durable", "--db", sides.mcec_db])[0],
        "run": lambda: sides.command(["-m", "mcec", "run", *one_step])[0],
        "run_again": lambda: sides.command(["-m", "mcec", "run", *one_step])[0],
        "import_mcec": lambda: sides.command(["-c", _IMPORT_MCEC])[0],
        "import_mcec_dbos": lambda: sides.command(["-c", _IMPORT_DBOS])[0],
    }, rounds)
    med = {name: statistics.median(values) for name, values in walls.items()}
    dbos_import = max(0.0, med["import_mcec_dbos"] - med["import_mcec"])
    allowed = 1.2 * med["run"] + dbos_import
    enqueue_ms = statistics.median(calls[1:]) * 1000
    return {
        "rounds": rounds,
        "enqueue_ms": {"first": round(calls[0] * 1000, 1), "median_after": round(enqueue_ms, 1), "calls": len(calls),
                       "target": 5.0, "target_met": enqueue_ms <= 5.0},
        "runs_list_s": {"median": round(med["runs_list"], 3), "target": 0.6, "target_met": med["runs_list"] <= 0.6},
        "run_durable_s": {
            "durable": round(med["run_durable"], 3), "not_durable": round(med["run"], 3),
            "not_durable_again": round(med["run_again"], 3), "aa": round(med["run_again"] / med["run"], 3),
            "dbos_import": round(dbos_import, 3), "ratio": round(med["run_durable"] / med["run"], 3),
            "allowed": round(allowed, 3), "target_met": med["run_durable"] <= allowed,
        },
        "samples_s": {name: [round(v, 3) for v in values] for name, values in walls.items()},
    }


def _cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used so far (Linux's /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_worker(sides: Sides, runs_count: int) -> dict[str, Any]:
    """Row 5: a worker's own CPU per run beyond the run's work (≤ 5 ms), and an ``each`` element's
    cost beyond its work when handed to a queue (≤ 10 ms)."""
    from agentmonad.durable import runs

    one = json.dumps({"n": 0, "left": 1})
    assert runs.run(MODULE, "once", one, db=sides.mcec_db)["ok"] is True  # DBOS launched, kept between calls
    cpu, wall = time.process_time(), time.monotonic()
    for _ in range(runs_count):
        assert runs.run(MODULE, "once", one, db=sides.mcec_db)["ok"] is True
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    idle_cpu, idle_from = time.process_time(), time.monotonic()  # its polling between calls, as the worker's is taken off
    time.sleep(1.0)
    idle_here = (time.process_time() - idle_cpu) / (time.monotonic() - idle_from)
    in_process_ms = (cpu - idle_here * wall) / runs_count * 1000
    queue = f"bench-{uuid.uuid4().hex[:8]}"
    worker = subprocess.Popen([sys.executable, "-m", "agentmonad", "worker", MODULE, "--db", sides.mcec_db, "--queue",
                               queue, "--poll-seconds", "0.05"], cwd=sides.folder, env=sides.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        warm = runs.enqueue(MODULE, "once", one, queue=queue, db=sides.mcec_db)["run_id"]
        assert runs.result(warm, db=sides.mcec_db, timeout=120) is not None, "the worker took no run"
        idle_from, idle_cpu = time.monotonic(), _cpu_seconds(worker.pid)
        time.sleep(3.0)
        idle_rate = (_cpu_seconds(worker.pid) - idle_cpu) / (time.monotonic() - idle_from)
        busy_from, busy_cpu = time.monotonic(), _cpu_seconds(worker.pid)
        ids = [runs.enqueue(MODULE, "once", one, queue=queue, db=sides.mcec_db)["run_id"] for _ in range(runs_count)]
        for run_id in ids:
            assert (runs.result(run_id, db=sides.mcec_db, timeout=300) or {}).get("ok") is True, run_id
        busy_wall = time.monotonic() - busy_from
        worker_ms = (_cpu_seconds(worker.pid) - busy_cpu - idle_rate * busy_wall) / runs_count * 1000
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    elements = list(range(40))

    def batch(handed: bool) -> float:
        started = time.perf_counter()
        done = runs.run(MODULE, "batch", json.dumps(elements), db=sides.mcec_db, elements=handed)
        assert done.get("value") == [n + 1 for n in elements], done
        return time.perf_counter() - started

    walls = interleaved({"handed": lambda: batch(True), "inline": lambda: batch(False)}, 3)
    per_element = (statistics.median(walls["handed"]) - statistics.median(walls["inline"])) / len(elements) * 1000
    over = worker_ms - in_process_ms
    return {
        "worker_cpu_ms_per_run": {"worker": round(worker_ms, 2), "in_process": round(in_process_ms, 2),
                                  "beyond": round(over, 2), "idle_cpu_share": round(idle_rate, 4), "runs": runs_count,
                                  "target": 5.0, "target_met": over <= 5.0},
        "element_ms": {"beyond": round(per_element, 2), "elements": len(elements), "limit": 8,
                       "handed_s": [round(v, 3) for v in walls["handed"]], "inline_s": [round(v, 3) for v in walls["inline"]],
                       "target": 10.0, "target_met": per_element <= 10.0},
    }


def bench_database(folder: Path, spec: Path, postgres: str | None, quick: bool) -> dict[str, Any]:
    """Every row on one database."""
    sides = Sides(folder, spec, postgres)
    rounds = 3 if quick else 5
    started = time.perf_counter()
    out: dict[str, Any] = {"database": sides.kind}
    out["step"] = bench_step(sides, (50, 300) if quick else (100, 1_000), rounds if quick else 7)
    out["resume"] = bench_resume(sides, rounds)
    out["ask"] = bench_ask(sides, rounds + 2)
    out["bytes"] = bench_bytes(sides, 300 if quick else 1_000)
    out["fixed"] = bench_fixed(sides, rounds)
    out["worker"] = bench_worker(sides, 20 if quick else 60)
    out["seconds"] = round(time.perf_counter() - started, 1)
    return out


def _server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("show server_version").fetchone()
        return str(row[0]) if row else "?"


def main(quick: bool = False, db: str | None = None, only: tuple[str, ...] = ("sqlite", "postgresql")) -> dict[str, Any]:
    """Every row on SQLite, then on Postgres (``db``, else a server started for the run)."""
    versions = {name: metadata.version(name) for name in
                ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite", "langgraph-checkpoint-postgres", "dbos")}
    results: dict[str, Any] = {"versions": versions, "load_average_before": os.getloadavg()[0], "quick": quick}
    with tempfile.TemporaryDirectory(prefix="mcec-durable-peers-") as scratch:
        folder = Path(scratch)
        spec = write_workload(folder)
        if "sqlite" in only:
            (folder / "sqlite").mkdir()
            results["sqlite"] = bench_database(folder / "sqlite", spec, None, quick)
        if "postgresql" in only:
            server = None
            url = db
            if url is None:
                sys.path.insert(0, str(ROOT / "tests"))
                try:
                    from pgserver import PgServer

                    server = PgServer.start()
                    url = server.url
                except Exception as exc:  # no server binaries, or it would not start: say so, skip the rows
                    results["postgresql"] = {"skipped": f"no PostgreSQL server could be started: {exc}"}
            try:
                if url is not None:
                    (folder / "pg").mkdir()
                    results["postgresql"] = {"server": _server_version(url), "started_here": server is not None,
                                             **bench_database(folder / "pg", spec, url, quick)}
            finally:
                if server is not None:
                    server.stop()
    results["load_average_after"] = os.getloadavg()[0]
    return results


def print_detail(results: dict[str, Any]) -> None:
    """The figures as markdown tables."""
    print(f"\nversions: {results['versions']}; load {results['load_average_before']:.1f} → {results['load_average_after']:.1f}")
    for kind in ("sqlite", "postgresql"):
        r = results.get(kind)
        if not r:
            continue
        if "skipped" in r:
            print(f"\n### {kind}: skipped — {r['skipped']}")
            continue
        print(f"\n### {kind}{' ' + r['server'] if 'server' in r else ''} ({r['seconds']} s)\n")
        print("| row | mcec | LangGraph | LangGraph again | mcec / LangGraph (A/A) | target | met | mcec spec form |\n|---|---|---|---|---|---|---|---|")
        s = r["step"]
        m = s["ms_per_step"]
        print(f"| ms per durable step (slope {s['sizes'][0]}→{s['sizes'][1]}) | {m['mcec']} | {m['langgraph']} | {m['langgraph_again']} | {s['ratio']} ({s['aa']}) | ≤ 1.0 | {'✓' if s['target_met'] else '✗'} | — |")
        for key, label in (("in_process", "resume 200 killed at 150, in-process, ms"), ("command", "resume as a command, ms")):
            c = r["resume"][key]
            print(f"| {label} | {c['ms']['mcec']} | {c['ms']['langgraph']} | {c['ms']['langgraph_again']} | {c['ratio']} ({c['aa']}) | ≤ 1.0 | {'✓' if c['target_met'] else '✗'} | {_spec_form(c)} |")
        a = r["ask"]
        print(f"| ask → waiting → answer → finished, ms | {a['ms']['mcec']} | {a['ms']['langgraph']} | {a['ms']['langgraph_again']} | {a['ratio']} ({a['aa']}) | ≤ 1.0 | {'✓' if a['target_met'] else '✗'} | {_spec_form(a)} |")
        for pipeline in ("steady", "growing"):
            b = r["bytes"][pipeline]
            print(f"| recorded bytes per step, {pipeline} ({r['bytes']['turns']} turns) | {b['mcec_per_step']} | {b['langgraph_per_step']} | — | {b['ratio']} | ≤ 0.1 | {'✓' if b['target_met'] else '✗'} | — |")
        f = r["fixed"]
        e, lst, d = f["enqueue_ms"], f["runs_list_s"], f["run_durable_s"]
        print(f"\nfixed costs: enqueue {e['median_after']} ms per call (first {e['first']}; ≤ 5: {'✓' if e['target_met'] else '✗'}); "
              f"`mcec runs list` {lst['median']} s (≤ 0.6: {'✓' if lst['target_met'] else '✗'}); "
              f"`mcec run --durable` one step {d['durable']} s / not durable {d['not_durable']} s (again {d['not_durable_again']}) = {d['ratio']}×, "
              f"DBOS import {d['dbos_import']} s, allowed {d['allowed']} s: {'✓' if d['target_met'] else '✗'}")
        w, el = r["worker"]["worker_cpu_ms_per_run"], r["worker"]["element_ms"]
        print(f"a worker's CPU per run {w['worker']} ms, the run's own work included (in-process the same run costs "
              f"its caller {w['in_process']} ms): {w['beyond']} ms beyond (≤ 5: {'✓' if w['target_met'] else '✗'}); "
              f"an element handed to a queue {el['beyond']} ms beyond its work (≤ 10: {'✓' if el['target_met'] else '✗'})")


def _spec_form(row: dict[str, Any]) -> str:
    """The spec form's figure and ratio of a row that timed it, else a dash."""
    return f"{row['ms']['mcec_spec']} ({row['spec_form_ratio']}×)" if "spec_form_ratio" in row else "—"


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, 3 rounds")
    parser.add_argument("--db", default=None, help="a postgresql:// URL (default: a server started for the run)")
    parser.add_argument("--only", default="sqlite,postgresql", help="databases, comma-separated (default: both)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = _arguments(None)
    figures = main(quick=args.quick, db=args.db, only=tuple(args.only.split(",")))
    print_detail(figures)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
