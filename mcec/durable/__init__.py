"""Durable runs from Python (docs/language.md §13): start, resume, inspect and cancel runs of a
spec's pipeline that survive a crash and resume from their last completed effect.

>>> from mcec import durable                                         # doctest: +SKIP
>>> report = durable.run("examples/batch/batch.mce", "extract", '["a.txt"]', run_id="nightly")
>>> report["run_id"], report["ok"]
('nightly', True)
>>> durable.resume("nightly")        # a finished run: its recorded outcome
>>> [r.run_id for r in durable.list_runs()]
>>> durable.show("nightly")["effects"][0]["step"]
>>> durable.cancel("nightly")

The runs are DBOS workflows (the ``mcec[durable]`` extra) in the database ``db``: by default
an SQLite file ``.mcec/runs.sqlite`` in the working directory; ``MCEC_DB`` or ``db=`` name
another (``postgresql://…`` for a server shared by many processes). Every function raises
:class:`DurableError` with a message for the user when it cannot do what was asked (an unknown
run, an unreachable database, a spec changed since the run started).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    import types as pytypes

    from agentmonad.concurrency import ElementsHook
    from agentmonad.durable.dbos import Engine, RunInfo, WorkerInfo
    from agentmonad.durable.journal import Record, Store
    from agentmonad.events import EventSink

    from mcec.check.typed import Program
    from mcec.codegen import Generated
    from mcec.compiler import CompileResult
    from mcec.durable.locks import HeldLock
    from mcec.run.timeline import Node

__all__ = [
    "DurableError", "RunSummary", "answer", "cancel", "database_url", "enqueue", "list_runs", "result", "resume",
    "resume_expired", "run", "serve_worker", "show", "show_tree", "waiting",
]

#: The database of ``mcec run --durable`` when neither ``--db`` nor ``MCEC_DB`` names one.
DEFAULT_DB = Path(".mcec") / "runs.sqlite"

#: How long a process waits for the lock of a run another process is running (starting,
#: resuming, answering, cancelling it), in seconds, before it gives up with a message.
LOCK_WAIT = 60.0


class DurableError(Exception):
    """A durable run cannot be started, resumed, shown or cancelled: the message says why."""


def database_url(db: str | None = None) -> str:
    """The database URL: ``db``, else ``$MCEC_DB``, else an SQLite file ``.mcec/runs.sqlite`` in the
    working directory (its folder made when missing). A bare path is an SQLite file."""
    from mcec.durable.urls import resolved

    chosen = db or os.environ.get("MCEC_DB")
    if not chosen:
        DEFAULT_DB.parent.mkdir(exist_ok=True)
        return f"sqlite:///{DEFAULT_DB.resolve()}"
    return resolved(chosen)


@contextmanager
def _engine(db: str | None) -> Iterator[Engine]:
    """DBOS on the run database (a clear :class:`DurableError` when it cannot be reached)."""
    try:
        from agentmonad.durable.dbos import Engine
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise DurableError(f"durable runs need DBOS: pip install 'mcec[durable]' ({exc})") from exc
    from agentmonad.durable.dbos import set_element_runner

    from mcec.durable.elements import execute_element

    set_element_runner(execute_element)  # this process may run `each` elements of queued runs
    url = database_url(db)
    try:
        engine = Engine(url)
    except Exception as exc:
        from mcec.durable.urls import redacted

        raise DurableError(f"cannot open the run database {_shown_url(url)}: {redacted(_first_line(exc), url)}") from None
    try:
        yield engine
    finally:
        engine.close()


def _shown_url(url: str) -> str:
    """``url`` without its secrets (:func:`mcec.durable.urls.shown`)."""
    from mcec.durable.urls import shown

    return shown(url)


def _first_line_of(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def _first_line(exc: BaseException) -> str:
    return _first_line_of(str(exc)) or type(exc).__name__


#: The longest run id accepted.
MAX_RUN_ID = 200


def check_run_id(run_id: str) -> str:
    """``run_id`` when it can name a new run: 1 to :data:`MAX_RUN_ID` printable characters, no
    spaces (a run id is printed on a line of its own in `runs list`, and typed in a shell)."""
    if not run_id or len(run_id) > MAX_RUN_ID or not run_id.isprintable() or any(c.isspace() for c in run_id):
        raise DurableError(f"bad run id {run_id!r}: 1 to {MAX_RUN_ID} printable characters, no spaces")
    return run_id


def _same_input(a: str, b: str) -> bool:
    """Whether two input JSON texts are the same input: the same JSON value, types included
    (``1``, ``1.0`` and ``true`` are three inputs, though Python's ``==`` takes them for one)."""
    try:
        return _canonical(json.loads(a)) == _canonical(json.loads(b))
    except (ValueError, RecursionError):
        return False


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# ----------------------------------------------------------------------------- the run itself


def _program(spec: str, *, generate: bool = False) -> Program:
    """The checked program of ``spec`` (DurableError with its first diagnostic when it does not check);
    ``generate`` when this process will run it compiled (so that it is compiled once)."""
    program = _compiled(spec, generate=generate).program
    assert program is not None
    return program


#: The specs this process checked or compiled, by path and text, so that a run checks and compiles
#: its spec once: before it is recorded, to refuse it early, and again where it runs.
_compiled_specs: dict[tuple[str, str], CompileResult] = {}


def _compiled(spec: str, *, generate: bool) -> CompileResult:
    """``spec`` checked (and, with ``generate``, compiled); DurableError when it does not check.
    Kept for the process while the spec's text stays the same."""
    from mcec.cli.common import load_source
    from mcec.compiler import check_source, compile_source

    source, problem = load_source(Path(spec))
    if problem is not None or source is None:
        raise DurableError(problem.message if problem is not None else f"cannot read {spec}")
    key = (str(Path(spec).resolve()), source.text)
    kept = _compiled_specs.get(key)
    if kept is not None and (kept.generated is not None or not generate):
        return kept
    result = compile_source(source) if generate else check_source(source)
    if result.program is None:
        first = next((d for d in result.diagnostics if d.is_error), None)
        detail = f"{first.code}: {first.message}" if first is not None else "it does not check"
        raise DurableError(f"{spec} does not check ({detail}); run `mcec check {spec}`")
    if len(_compiled_specs) >= 32:  # a long-lived process that runs many specs keeps the latest
        _compiled_specs.pop(next(iter(_compiled_specs)))
    _compiled_specs[key] = result
    return result


def _durable_problems(program: Program, pipeline: str) -> list[str]:
    """What stops ``pipeline`` from running durably, from the build-time check (values or state
    that cannot be recorded as typed JSON)."""
    from mcec.check.durable import check_durable

    return [f"{d.code}: {d.message} ({d.span.path}:{d.span.line})" for d in check_durable(program, pipeline)]


async def _execute(request: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
    """Run one durable run's pipeline with its journal (the workflow's body): the Outcome as JSON."""
    from agentmonad import Defect
    from agentmonad.concurrency import ElementsHook
    from agentmonad.context import current_run_context, hooks, reset_run_context, set_run_context
    from agentmonad.durable import DurableJournal, ReplayMismatch
    from agentmonad.durable.dbos import RunNotStarted, given_answers, stop_asked
    from agentmonad.durable.journal import StopAsked
    from agentmonad.llm import llm_config, usage

    from mcec.durable.types import type_table
    from mcec.durable.watch import sink_for, watched
    from mcec.run.interpret import interpret
    from agentmonad.spec import InputError, spec_info

    from mcec.run.runner import RunError, describe_error, llm_run_config, prepare, report, safe_text, shown

    run_id = str(request.get("run_id"))
    stop = _stop_check(run_id, stop_asked(run_id))
    if stop():  # cancelled while it waited (or before it started): record that, run nothing
        return {"ok": None, "status": "cancelled"}
    _importable_as_started(request)
    pipeline = request["pipeline"]
    sink = sink_for(run_id)  # `mcec run --durable --stream`: this process watches the run
    try:
        generate = not request.get("interpret")
        # a worker compiled its specs once when it started; a process of its own compiles the run's
        compiled = _served.get((request["spec"], generate)) or _compiled(request["spec"], generate=generate)
        program = compiled.program
        assert program is not None
        llm = llm_run_config(program, list(request.get("models", [])))
        module = _module_of(program, compiled.generated) if compiled.generated is not None else None
        if module is not None:  # a compiled run: its input and the types it records, from its module
            info = spec_info(module)
            value, state = info.prepare(pipeline, request["input"], request.get("state"))
            table = info.type_table()
        else:  # the interpreter's: from the checked program
            value, state = prepare(program, pipeline, request["input"], request.get("state"))
            table = type_table(program)
        journal = DurableJournal(store, table, records, given_answers(run_id), stop_asked=stop)
    except (DurableError, RunError, InputError) as exc:  # the cause is outside the run: it stays resumable
        raise RunNotStarted(str(exc)) from None
    elements = _elements(program, request)
    try:
        attached = watched(journal, program, sink)  # watched: a replayed streamed answer is told to the sink
        with hooks(journal=attached, events=sink), llm_config(llm) if llm is not None else _nothing(), usage() as used:
            token = set_run_context(current_run_context().with_part(ElementsHook, elements)) if elements else None
            try:
                if module is None:  # the reference interpreter
                    running = interpret(program, pipeline, state, value)
                else:  # the compiled pipeline: every effect goes through the seam too
                    running = getattr(module, pipeline)(state, value)
                ended = await journal.until_waiting(running)
            finally:
                if token is not None:
                    reset_run_context(token)
        await store.flush()
        if isinstance(ended, list):  # it waits for people: their open questions
            return {"ok": None, "status": "waiting", "questions": [q.as_json() for q in ended],
                    "refused": journal.refused}
        outcome = ended
    except LockLost:
        raise RunNotStarted("this process lost the run's lock (its database connection ended) and stopped it before "
                            "its next effect") from None
    except StopAsked:  # `mcec runs cancel`: every effect that completed is recorded; the run ends cancelled
        await store.flush()
        return {"ok": None, "status": "cancelled"}
    except Defect as defect:
        cause = defect.cause
        if isinstance(cause, ReplayMismatch):  # the spec changed under it: resumable under the one it started with
            raise RunNotStarted(str(cause)) from None
        return {
            "ok": False,
            "defect": {
                "message": safe_text(defect),
                "site": str(defect.site) if defect.site is not None else None,
                "cause": describe_error(cause) if cause is not None else None,
            },
            "state": shown(defect.state),
        }
    payload = report(outcome).payload
    if llm is not None:
        payload["usage"] = used.as_dict()
    return payload


#: The module of each compiled spec this process ran, executed once (a worker runs many runs of
#: one spec: executing the generated code again for each was most of a small run's CPU), by the
#: identity of the generated code (kept with it: :data:`_compiled_specs` keeps what it is made of).
_modules: dict[int, tuple[Generated, pytypes.ModuleType]] = {}


def _module_of(program: Program, generated: Generated) -> pytypes.ModuleType:
    """``generated`` executed as its module, once per process (:data:`_modules`)."""
    from mcec.run.runner import load_module

    kept = _modules.get(id(generated))
    if kept is not None and kept[0] is generated:
        return kept[1]
    module = load_module(program, generated)
    if len(_modules) >= 32:  # as _compiled_specs: a long-lived process keeps the latest
        _modules.pop(next(iter(_modules)))
    _modules[id(generated)] = (generated, module)
    return module


class LockLost(BaseException):
    """This process no longer holds the lock of the run it runs (on Postgres: the lock's connection
    ended), so another process may run the run now: it stops before its next effect."""


def _stop_check(run_id: str, asked: Callable[[], bool]) -> Callable[[], bool]:
    """What a run's journal consults before each effect: whether it was asked to stop (``asked``);
    and, while this process holds the run's lock, that it still does (:class:`LockLost` if not)."""
    held = _held.get(run_id)

    def check() -> bool:
        if held is not None and not held.held():
            raise LockLost()
        return asked()

    return check


def _elements(program: Program, request: dict[str, Any]) -> ElementsHook | None:
    """The element distributor of a run enqueued for workers (its request names its queue) or
    started with ``elements=True``: its ``each(limit=N)`` elements go on their queues. A run started
    in-process runs them itself, resumed or not (a resumed run is taken from DBOS's internal queue,
    so where a run was last taken from does not say which kind it is)."""
    from agentmonad.concurrency import ElementsHook

    from mcec.durable.elements import distributor, each_sites

    if not (request.get("elements") or request.get("queue")) or not each_sites(program):
        return None
    run_id = str(request.get("run_id"))
    return ElementsHook(distributor(program, request, run_id))


#: The specs a worker serves, compiled when it started: by (spec path, compiled or not).
_served: dict[tuple[str, bool], CompileResult] = {}


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _request(program: Program, spec: str, pipeline: str, input_json: str, state_json: str | None,
             models: Sequence[str]) -> dict[str, Any]:
    from mcec.durable.changes import declarations
    from mcec.fingerprint import fingerprint

    return {
        "spec": str(Path(spec).resolve()),
        "pipeline": pipeline,
        "input": input_json,
        "state": state_json,
        "models": list(models),
        "fingerprint": fingerprint(program).to_json(),
        "declarations": declarations(program),  # to name what changed, should the spec change
        "cwd": os.getcwd(),
    }


def _importable_as_started(request: dict[str, Any]) -> None:
    """Put the folder the run was started from on ``sys.path`` (``mcec run`` put it there): the
    spec's modules import as they did then, whichever folder resumes, answers or expires it."""
    cwd = request.get("cwd")
    if isinstance(cwd, str) and cwd not in sys.path:
        sys.path.insert(0, cwd)


def _refuse_changed(info: RunInfo, allow_changed_spec: bool) -> None:
    """A run resumes under the spec it started with, unless the user says otherwise."""
    from mcec.durable.changes import describe_changes
    from mcec.fingerprint import SpecFingerprint, fingerprint

    spec = info.request.get("spec")
    if not isinstance(spec, str):
        raise DurableError(f"run {info.run_id} is not a durable run of mcec")
    _importable_as_started(info.request)
    program = _program(spec, generate=not info.request.get("interpret"))
    recorded = SpecFingerprint.from_json(info.request["fingerprint"])
    try:  # it imports the modules of the types the run records: the user's code
        current = fingerprint(program)
    except Exception as exc:
        raise DurableError(f"run {info.run_id} cannot resume here: importing the modules of {os.path.basename(spec)} "
                           f"failed: {type(exc).__name__}: {_first_line(exc)} (the run is as it was)") from None
    if recorded.digest != current.digest and not allow_changed_spec:
        raise DurableError(
            f"run {info.run_id} cannot resume: {describe_changes(info.request, recorded, current, program)}\n"
            "  = help: pass --allow-changed-spec to resume it anyway (recorded values are still checked against today's types)"
        )


#: The run locks this process holds now, by run id: what its runs consult before each effect
#: (a process that lost a run's lock stops the run, see :func:`_execute`).
_held: dict[str, HeldLock] = {}


@contextmanager
def _locked(engine: Engine, run_id: str) -> Iterator[None]:
    """Hold the run's lock in its database (:mod:`mcec.durable.locks`): one process at a time
    starts, resumes, answers or cancels it. Another process's hold is waited for, up to
    :data:`LOCK_WAIT` seconds."""
    from mcec.durable.locks import LockBusy, run_lock

    try:
        with run_lock(engine.url, run_id, wait=LOCK_WAIT) as lock:
            _held[run_id] = lock
            try:
                yield
            finally:
                _held.pop(run_id, None)
    except LockBusy as exc:
        raise DurableError(str(exc)) from None


def _payload(run_id: str, result: dict[str, Any]) -> dict[str, Any]:
    if result.get("resumable"):
        raise DurableError(f"run {run_id} stopped: {_first_line_of(str(result['failed']))} (nothing of it is lost: "
                           f"fix that, then `mcec runs resume {run_id}`)")
    if "failed" in result:
        raise DurableError(f"run {run_id}: {result['failed']}")
    return {**result, "run_id": run_id}


def run(
    spec: str | Path,
    pipeline: str,
    input_json: str,
    *,
    state_json: str | None = None,
    run_id: str | None = None,
    db: str | None = None,
    allow_changed_spec: bool = False,
    models: Sequence[str] = (),
    interpret: bool = False,
    elements: bool = False,
    events: EventSink | None = None,
) -> dict[str, Any]:
    """Run ``pipeline`` of ``spec`` on ``input_json`` durably; the Outcome as ``mcec run`` prints
    it, plus ``run_id``. With the ``run_id`` of an earlier run: resume it (its own input), or give
    its recorded outcome when it finished. The run is the compiled pipeline; ``interpret``: the
    reference interpreter's (what ``mcec run --interpret`` runs). ``elements``: its ``each(limit=N)``
    elements go on their queues as in a queued run, and this process takes them from there itself
    (what a worker does; to see a run's elements as workers run them, in one process). ``events``:
    the sink the run tells what it does here (:mod:`agentmonad.events`: its effects, the streamed
    answers of its ``stream llm`` steps; :mod:`mcec.durable.watch`)."""
    from mcec.durable.watch import watching

    spec = str(spec)
    chosen = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12]
    with _engine(db) as engine, _locked(engine, chosen), watching(chosen, events):
        if run_id is not None:
            existing = engine.run(run_id)
            if existing is not None:
                _same_run(existing, spec, pipeline, input_json)
                return _resume(engine, run_id, allow_changed_spec)
        program = _program(spec, generate=not interpret)
        request = _new_request(program, _durable_problems(program, pipeline), spec, pipeline, input_json, state_json,
                               models, interpret=interpret, run_id=chosen)
        if elements:
            request["elements"] = True
        _launch(engine, program, request)
        return _payload(chosen, asyncio.run(engine.start(chosen, request)))


def _new_request(program: Program, problems: list[str], spec: str, pipeline: str, input_json: str,
                 state_json: str | None, models: Sequence[str], *, interpret: bool, run_id: str) -> dict[str, Any]:
    """The request of a new durable run (started here or enqueued): refused with a
    :class:`DurableError` when the pipeline cannot run durably (``problems``) or the input is bad,
    before anything is recorded or enqueued."""
    from mcec.run.runner import RunError, llm_run_config, prepare

    if problems:
        raise DurableError(f"{pipeline} cannot run durably:\n  " + "\n  ".join(problems))
    try:
        prepare(program, pipeline, input_json, state_json)
        llm_run_config(program, list(models))
    except RunError as exc:
        raise DurableError(str(exc)) from exc
    return {**_request(program, spec, pipeline, input_json, state_json, models), "interpret": interpret,
            "run_id": run_id}


def _launch(engine: Engine, program: Program | None, request: dict[str, Any]) -> None:
    """Launch DBOS to run ``request``'s run in this process: listening to the element queues of
    its spec (``program``, needed then) when it runs its elements through them itself (``elements=True``)."""
    if not request.get("elements"):
        engine.launch(_execute)
        return
    assert program is not None, "a run that runs its elements itself is launched with its program"
    from agentmonad.durable.dbos import QueueSpec

    from mcec.durable.elements import element_queues
    from mcec.fingerprint import fingerprint

    queues = [QueueSpec(name, limit, None) for name, limit in element_queues(program, fingerprint(program).digest)]
    engine.launch(_execute, queues=queues, poll_seconds=0.05)


def _same_run(info: RunInfo, spec: str, pipeline: str, input_json: str) -> None:
    """Running again with an existing run id resumes that run: refuse it when the command asks for
    another spec, pipeline or input (the user meant a new run, or mistyped the id)."""
    asked = {"spec": str(Path(spec).resolve()), "pipeline": pipeline}
    differs = [f"{key} {info.request.get(key)!r}" for key, value in asked.items() if info.request.get(key) != value]
    if not _same_input(input_json, str(info.request.get("input"))):
        differs.append(f"input {info.request.get('input')}")
    if differs:
        raise DurableError(
            f"run {info.run_id} exists with another {', '.join(differs)}: resume it with `mcec runs resume "
            f"{info.run_id}`, or start a new run with another --run-id"
        )


def resume(run_id: str, *, db: str | None = None, allow_changed_spec: bool = False,
           events: EventSink | None = None) -> dict[str, Any]:
    """Resume the run ``run_id`` from its last completed effect (a finished run: its recorded
    outcome); the Outcome as :func:`run` gives it. ``events``: as :func:`run`'s."""
    from mcec.durable.watch import watching

    with _engine(db) as engine, _locked(engine, run_id), watching(run_id, events):
        return _resume(engine, run_id, allow_changed_spec)


#: A worker whose heartbeat is older than this (seconds) is taken for dead by `runs resume` (as by
#: its peers with their default ``--stale-after``).
WORKER_STALE_AFTER = 10.0


def _resume(engine: Engine, run_id: str, allow_changed_spec: bool) -> dict[str, Any]:
    """Resume ``run_id`` (the caller holds its lock)."""
    info = _known(engine, run_id)
    if info.status == "SUCCESS" and info.result is not None:
        return _payload(run_id, info.result)
    _refuse_a_workers_run(engine, info)
    engine.take_up(run_id)  # resumed: no longer asked to stop
    _refuse_changed(info, allow_changed_spec)
    _launch(engine, _program(str(info.request["spec"])) if info.request.get("elements") else None, info.request)
    return _payload(run_id, asyncio.run(engine.resume(run_id)))


def _its_worker(engine: Engine, info: RunInfo) -> WorkerInfo | None:
    """The live worker running the run ``info`` (a run enqueued for workers, ``PENDING`` under an
    executor whose heartbeat is younger than :data:`WORKER_STALE_AFTER`), else None. Workers hold no
    run lock (DBOS's dequeue gives a run to one worker): this is how other processes tell."""
    if info.status != "PENDING" or not info.request.get("queue") or not info.executor:
        return None
    return engine.live_worker(info.executor, WORKER_STALE_AFTER)


def _refuse_a_workers_run(engine: Engine, info: RunInfo) -> None:
    """A run a live worker is running goes on there: resuming it here too would run its next
    effect in both processes."""
    worker = _its_worker(engine, info)
    if worker is not None:
        raise DurableError(f"run {info.run_id} is being run by worker {worker.executor_id} (pid {worker.pid} on "
                           f"{worker.host}): it goes on there (`mcec runs cancel {info.run_id}` stops it)")


def _known(engine: Engine, run_id: str) -> RunInfo:
    info = engine.run(run_id)
    if info is None:
        raise DurableError(f"no durable run {run_id!r} in {_shown_url(engine.url)} (see `mcec runs list`)")
    return info


@final
@dataclass(frozen=True, slots=True)
class RunSummary:
    """One line of ``mcec runs list``."""

    run_id: str
    spec: str
    pipeline: str
    #: ``running`` (or interrupted: resume it), ``enqueued`` (waiting for a worker), ``finished``,
    #: ``failed``, ``waiting``, ``cancelled``.
    status: str
    started: float | None
    last_step: str | None

    def as_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {"run_id": self.run_id, "spec": self.spec, "pipeline": self.pipeline, "status": self.status,
                "started": _when(self.started), "last_step": self.last_step}


def _when(epoch: float | None) -> str | None:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch is not None else None


def _status(info: RunInfo, steps: list[Record]) -> str:
    match info.status:
        case "CANCELLED" if steps and steps[-1].get("kind") == "waiting":
            return "waiting"
        case "CANCELLED" if steps and steps[-1].get("kind") == "stopped":
            return "stopped"
        case "SUCCESS":
            return "failed" if info.result is None or "defect" in info.result or "failed" in info.result else "finished"
        case "ERROR" | "MAX_RECOVERY_ATTEMPTS_EXCEEDED":
            return "failed"
        case "CANCELLED":
            return "cancelled"
        case "ENQUEUED":
            return "enqueued"
        case _:
            return "running"


def list_runs(*, db: str | None = None) -> list[RunSummary]:
    """Every durable run in the database, oldest first."""
    with _engine(db) as engine:
        summaries = []
        for info in engine.runs():
            steps = engine.steps(info.run_id)
            summaries.append(
                RunSummary(
                    info.run_id,
                    str(info.request.get("spec", "?")),  # absolute, as recorded: whatever folder lists it
                    str(info.request.get("pipeline", "?")),
                    _status(info, steps),
                    info.created,
                    str(steps[-1].get("step")) if steps else None,
                )
            )
        return summaries


def show(run_id: str, *, db: str | None = None) -> dict[str, Any]:
    """The run ``run_id``: its summary, every recorded effect in order (its identity, kind, step,
    site, duration, outcome kind, and how it changed the state), the state its own branch is at
    now, and the run as the tree ``mcec run
    --trace`` draws (``tree``: each effect under its ``par``/``each`` element, see
    :func:`mcec.run.timeline.as_json`)."""
    from mcec.run.timeline import as_json

    shown, tree = show_tree(run_id, db=db)
    return {**shown, "tree": as_json(tree)}


def show_tree(run_id: str, *, db: str | None = None) -> tuple[dict[str, Any], list[Node]]:
    """What :func:`show` gives without its ``tree``, and the tree itself (to draw with
    :func:`mcec.run.timeline.render_text`)."""
    from agentmonad.durable.journal import states_seen

    from mcec.run.timeline import from_records, short_json

    with _engine(db) as engine:
        info = _known(engine, run_id)
        records = engine.steps(run_id)
        # the state after each effect only as a line of the tree: the whole of them grows with the
        # square of a run whose state grows, so the JSON gives each effect's change instead
        texts, state = states_seen(records, short_json)
        effects = [_effect(record) for record in records]
        tree = from_records(
            records, texts, pipeline=str(info.request.get("pipeline", "?")), outcome=_run_outcome(info, records),
            started=info.created, ended=info.updated,
        )
        shown = {
            "run_id": run_id,
            "spec": info.request.get("spec"),
            "pipeline": info.request.get("pipeline"),
            "input": info.request.get("input"),
            "status": _status(info, records),
            "started": _when(info.created),
            "effects": effects,
            "state": state,
            "outcome": info.result,
        }
        return shown, tree


def _run_outcome(info: RunInfo, records: list[Record]) -> str | None:
    """The run's outcome kind as a trace shows it: ``ok``, ``err``, ``defect``, ``cancelled``, or
    None while it has not ended (running, or interrupted)."""
    match _status(info, records):
        case "running" | "waiting" | "enqueued" | "stopped":
            return None
        case "cancelled":
            return "cancelled"
        case "finished" | "failed":
            result = info.result or {}
            if result.get("ok"):
                return "ok"
            return "defect" if not result or "defect" in result or "failed" in result else "err"
        case other:
            raise AssertionError(f"unknown run status {other!r}")


def _effect(record: Record) -> dict[str, Any]:
    from mcec.run.timeline import record_outcome, state_change

    return {
        "key": record.get("key"),
        "kind": record.get("kind"),
        "step": record.get("step"),
        "site": record.get("site"),
        "seconds": round(float(record.get("seconds", 0.0)), 6),
        "outcome": record_outcome(record),
        "state_change": state_change(record),
        "usage": record.get("usage") or None,
    }


def cancel(run_id: str, *, db: str | None = None) -> None:
    """Cancel the run ``run_id``: a process running it stops at its next effect (this waits,
    up to :data:`LOCK_WAIT` seconds, until it has); a run waiting for people is ``cancelled``
    from then on and takes no answer. ``resume`` takes either up again."""
    with _engine(db) as engine:
        info = _known(engine, run_id)
        ended = _status(info, engine.steps(run_id))
        if ended in ("finished", "failed"):
            raise DurableError(f"run {run_id} has already ended ({ended}): there is nothing to cancel")
        # a row, before anything else: the process running the run stops before its next effect
        # (the effect in flight completes and is recorded), then lets go of its lock
        engine.ask_to_stop(run_id)
        _until_no_worker_runs(engine, run_id)
        with _locked(engine, run_id):
            info = _known(engine, run_id)
            status = _status(info, engine.steps(run_id))
            if status == "waiting":
                # a waiting run's workflow is already CANCELLED in DBOS (the state DBOS resumes): it is
                # resumed only to record that it is cancelled (its run sees the row), running nothing
                engine.launch(_execute)
                asyncio.run(engine.resume(run_id))
            elif status in ("running", "enqueued", "stopped"):  # no process runs it (we hold its lock)
                engine.cancel(run_id)


def _until_no_worker_runs(engine: Engine, run_id: str) -> None:
    """Wait (up to :data:`LOCK_WAIT` seconds) until no live worker runs ``run_id``: a worker holds
    no run lock, and stops the run at its next effect once it sees it was asked to."""
    deadline = time.monotonic() + LOCK_WAIT
    while time.monotonic() < deadline:
        if _its_worker(engine, _known(engine, run_id)) is None:
            return
        time.sleep(0.05)
    raise DurableError(f"run {run_id} was asked to stop, but its worker still runs it after {LOCK_WAIT:g} s "
                       "(it stops before its next effect)")


def _open_questions(engine: Engine, info: RunInfo) -> list[dict[str, Any]]:
    """The questions the run ``info`` waits on (none: it does not wait), each with its
    ``deadline`` (ISO time, None: none) and whether it ``expired``."""
    steps = engine.steps(info.run_id)
    if _status(info, steps) != "waiting":
        return []
    now = time.time()
    return [{**q, "deadline": q.get("deadline"), "expired": _expired(q, now)} for q in steps[-1].get("questions", [])]


def _expired(question: dict[str, Any], now: float) -> bool:
    """Whether the deadline of ``question`` (as the waiting record keeps it) has passed."""
    from agentmonad.durable.journal import epoch

    deadline = question.get("deadline")
    return isinstance(deadline, str) and epoch(deadline) <= now


def _interrupted_questions(engine: Engine, info: RunInfo) -> list[dict[str, Any]]:
    """The questions a run still waits on though its process died while it ran (an answer resumed
    it and was killed before it waited again): a run ``running`` whose lock the caller holds —
    so no process runs it — and that is not a worker's (workers hold no run lock). Those of its
    last wait that have no record since."""
    steps = engine.steps(info.run_id)
    if _status(info, steps) != "running" or info.request.get("queue"):
        return []
    last = max((i for i, record in enumerate(steps) if record.get("kind") == "waiting"), default=None)
    if last is None:
        return []
    since = {record.get("key") for record in steps[last + 1:]}
    now = time.time()
    return [{**q, "expired": _expired(q, now)} for q in steps[last].get("questions", []) if q.get("key") not in since]


def _questions_if_unheld(engine: Engine, info: RunInfo) -> list[dict[str, Any]]:
    """The questions still open of a run that is ``running`` though no process holds its lock (its
    answering process died: :func:`_interrupted_questions`); none when a process holds it."""
    from mcec.durable.locks import LockBusy, run_lock

    if info.status != "PENDING" or info.request.get("queue"):
        return []
    try:
        with run_lock(engine.url, info.run_id, wait=0):
            return _interrupted_questions(engine, info)
    except LockBusy:
        return []


def waiting(*, db: str | None = None, run_id: str | None = None,
            about: Mapping[str, object] | Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every open question of every waiting run (or of ``run_id``; ``about``: whose payload has
    those field values, see :mod:`mcec.durable.questions`), oldest run first: its
    ``run_id``, the ask step's ``name``, ``site``, element ``index`` (inside ``each``/``par``),
    the ``question`` payload as JSON, the answer's JSON ``schema``, the rendered ``prompt``,
    when it was first ``asked``, its ``within`` seconds and ``deadline`` (ISO UTC times; None:
    no deadline) and whether it has ``expired``."""
    with _engine(db) as engine:
        infos = [_known(engine, run_id)] if run_id is not None else engine.runs()
        found = [{"run_id": info.run_id, **q} for info in infos
                 for q in _open_questions(engine, info) or _questions_if_unheld(engine, info)]
    from mcec.durable.questions import about_conditions, matches

    conditions = about_conditions(about)
    return [q for q in found if matches(q, conditions)]


def answer(run_id: str, name: str, value_json: str, *, index: Sequence[int] | None = None, db: str | None = None,
           allow_changed_spec: bool = False, about: Mapping[str, object] | Sequence[str] | None = None) -> dict[str, Any]:
    """Answer the open question ``name`` (the one whose payload has the field values ``about``,
    see :mod:`mcec.durable.questions`, or at element ``index``, when the run asks it more than
    once) of the waiting run ``run_id`` with ``value_json``, and resume the run: its Outcome as
    :func:`run` gives it (``"status": "waiting"`` again while other questions are open). The
    answer is validated against the answer type when the run resumes; a bad one is a
    :class:`DurableError` with pydantic's errors, and the run keeps waiting. So is an answer to
    a question whose deadline passed, or to a cancelled run. While another process runs the run
    (resuming or answering it), this waits for it, then answers if the question is still open."""
    from mcec.durable.questions import narrowed

    with _engine(db) as engine, _locked(engine, run_id):
        info = _known(engine, run_id)
        questions = _open_questions(engine, info) or _interrupted_questions(engine, info)
        if not questions:
            status = _status(info, engine.steps(run_id))
            if status == "cancelled":
                raise DurableError(f"run {run_id} was cancelled: it takes no answer (`mcec runs resume {run_id}` "
                                   "takes it up again, and it waits for its questions again)")
            raise DurableError(f"run {run_id} is not waiting for an answer (it is {status})")
        question = _chosen(run_id, narrowed(run_id, questions, name, about, index), name, index)
        if question["expired"]:
            raise DurableError(
                f"the question {name} of run {run_id} expired at {question['deadline']} (within {question['within']:g} s): "
                f"the answer is refused; `mcec runs resume {run_id}` (or `mcec runs expire`) goes on with "
                f"NoAnswer(reason=\"deadline\")"
            )
        key = str(question["key"])
        # recorded before the run goes on: a process killed from here on leaves the answer in the
        # database, and whichever process runs the run next applies it
        engine.give_answer(run_id, key, question["question"], _parsed(question, value_json))
        resumed = _resume(engine, run_id, allow_changed_spec)
        refused = resumed.get("refused", {}).get(key)
        if refused is not None:
            engine.take_back_answer(run_id, key)
            raise DurableError(f"bad answer to {name}: {'; '.join(refused)} (the run keeps waiting)")
        return resumed


def resume_expired(*, db: str | None = None) -> list[str]:
    """Resume every waiting run one of whose questions has expired (its ``within S`` passed):
    each records ``NoAnswer(reason="deadline")`` for it and goes on (to its ``catch``/``orelse``,
    or fails with it). The ids of the runs resumed, oldest first. What ``mcec runs expire``
    does, for a cron job or a worker to call now and then. A run that cannot be resumed (its
    spec changed, another process holds it) does not stop the others: a :class:`DurableError`
    naming each is raised after them."""
    with _engine(db) as engine:
        now = time.time()
        due = [info.run_id for info in engine.runs() if any(_expired(q, now) for q in _open_questions(engine, info))]
    resumed: list[str] = []
    problems: list[str] = []
    for run_id in due:  # each resume launches DBOS in this process and stops it again
        try:
            with _engine(db) as engine, _locked(engine, run_id):
                if not any(q["expired"] for q in _open_questions(engine, _known(engine, run_id))):
                    continue  # answered or resumed by another process meanwhile
                _resume(engine, run_id, False)
            resumed.append(run_id)
        except DurableError as exc:
            problems.append(f"{run_id}: {exc}")
    if problems:
        done = f" (resumed: {', '.join(resumed)})" if resumed else ""
        raise DurableError("some runs with expired questions were not resumed" + done + ":\n  " + "\n  ".join(problems))
    return resumed


def _chosen(run_id: str, questions: list[dict[str, Any]], name: str, index: Sequence[int] | None) -> dict[str, Any]:
    """The open question ``name`` (at ``index``) of ``questions``, or a message saying which there are."""
    named = [q for q in questions if q["name"] == name]
    if index is not None:
        named = [q for q in named if list(q["index"]) == list(index)]
    if len(named) == 1:
        return named[0]
    shown = ", ".join(f"{q['name']}" + (f" --index {','.join(map(str, q['index']))}" if q["index"] else "")
                      for q in questions)
    if not named:
        raise DurableError(f"run {run_id} has no open question {name!r}" + (f" at index {list(index)}" if index else "")
                           + f"; it waits on: {shown}")
    raise DurableError(f"run {run_id} asks {name!r} {len(named)} times: say which with --index ({shown})")


def _parsed(question: dict[str, Any], value_json: str) -> object:
    """``value_json`` as JSON data (the answer type's check is the resumed run's: the journal
    validates it with the type the run asks with, and refuses it with pydantic's errors)."""
    try:
        return json.loads(value_json)
    except ValueError as exc:
        raise DurableError(f"the answer to {question['name']} is not JSON: {exc}") from exc
    except RecursionError:
        raise DurableError(f"the answer to {question['name']} is nested too deeply to be an answer") from None


# ----------------------------------------------------------------------------- workers (docs/language.md "Workers")


def enqueue(spec: str | Path, pipeline: str, input_json: str, *, queue: str = "default", run_id: str | None = None,
            db: str | None = None, state_json: str | None = None, models: Sequence[str] = (),
            interpret: bool = False) -> dict[str, Any]:
    """Put a durable run on ``queue`` for a worker (``mcec worker``) to run instead of running it
    here: ``{"run_id", "status": "enqueued", "queue"}`` (see :func:`mcec.durable.queues.enqueue`)."""
    from mcec.durable.queues import enqueue as enqueue_run

    return enqueue_run(str(spec), pipeline, input_json, queue=queue, run_id=run_id, db=db, state_json=state_json,
                       models=models, interpret=interpret)


def result(run_id: str, *, db: str | None = None, wait: bool = True, timeout: float | None = None) -> dict[str, Any] | None:
    """The Outcome of the run ``run_id`` as :func:`run` gives it, wherever it ran (``wait``: once
    it ends; else None while it has not)."""
    from mcec.durable.queues import result as run_result

    return run_result(run_id, db=db, wait=wait, timeout=timeout)


def serve_worker(specs: Sequence[str | Path], *, db: str | None = None, queue: str = "default",
                 concurrency: int | None = 8, drain_seconds: float = 30.0, heartbeat_seconds: float = 1.0,
                 stale_after: float = 10.0, poll_seconds: float = 1.0) -> int:
    """Serve the runs of ``specs`` enqueued on ``queue`` until SIGTERM/SIGINT, as ``mcec worker``
    does (see :func:`mcec.durable.worker.serve`); the exit status."""
    from mcec.durable.worker import serve

    return serve([str(s) for s in specs], db=db, queue=queue, concurrency=concurrency, drain_seconds=drain_seconds,
                 heartbeat_seconds=heartbeat_seconds, stale_after=stale_after, poll_seconds=poll_seconds)
