"""Durable runs of a spec from Python (docs/language.md §13): start, resume, inspect and cancel runs
of a spec's pipeline that survive a crash and resume from their last completed effect.

>>> from mcec import durable                                         # doctest: +SKIP
>>> report = durable.run("examples/batch/batch.mce", "extract", '["a.txt"]', run_id="nightly")
>>> report["run_id"], report["ok"]
('nightly', True)
>>> durable.resume("nightly")        # a finished run: its recorded outcome
>>> [r.run_id for r in durable.list_runs()]
>>> durable.show("nightly")["effects"][0]["step"]
>>> durable.cancel("nightly")
>>> durable.close()                  # DBOS stops (it does when the process ends, or after 2 s idle)

The door is the runtime's, :mod:`agentmonad.durable.runs`, which runs compiled modules; this
module adds the spec-path form: it checks and compiles the spec (in memory, as ``mcec run``
does), refuses what cannot run durably, records what changed should the spec change, and runs
the reference interpreter's runs (``interpret=True``). Importing it puts mcec's :class:`SpecLoader`
in charge of finding a run's spec version in this process. Every function raises
:class:`DurableError` with a message for the user when it cannot do what was asked.
"""

from __future__ import annotations

import os
import sys
import types as pytypes
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from agentmonad.durable.errors import DurableError
from agentmonad.durable.request import RunRequest
from agentmonad.durable.runs import (
    RunSummary, answer, cancel, check_run_id, close, database_url, list_runs, result, resume, resume_expired, show, show_tree,
    waiting,
)
from agentmonad.durable.version import (
    CompiledVersion, ModuleLoader, SpecVersion, VersionError, importable_from, set_loader,
)

from mcec.memo import IdentityMemo

if TYPE_CHECKING:
    from agentmonad.durable.codec import TypeTable
    from agentmonad.durable.elements import ElementTypes
    from agentmonad.durable.version import Body
    from agentmonad.events import EventSink
    from agentmonad.llm.streaming import Streaming

    from mcec.check.typed import Program
    from mcec.codegen import Generated
    from mcec.compiler import CompileResult
    from mcec.fingerprint import SpecFingerprint

__all__ = [
    "DurableError", "RunSummary", "SpecLoader", "answer", "cancel", "check_run_id", "close", "database_url", "enqueue",
    "list_runs", "result", "resume", "resume_expired", "run", "serve_worker", "show", "show_tree", "waiting",
]


# ----------------------------------------------------------------------------- a spec, checked and compiled


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
    that cannot be recorded as typed JSON); once per program and pipeline."""
    from mcec.check.durable import check_durable

    return _problems.get(program, lambda: [f"{d.code}: {d.message} ({d.span.path}:{d.span.line})"
                                           for d in check_durable(program, pipeline)], pipeline)


def _fingerprint(program: Program) -> SpecFingerprint:
    """The program's fingerprint, once per program: its recorded classes are
    imported when it is first made, and stay as they are in the process."""
    from mcec.fingerprint import fingerprint

    return _fingerprints.get(program, lambda: fingerprint(program))


#: What a run of a checked program needs made of it, by program (and pipeline): a process that
#: starts, answers or resumes one run after another makes it once.
_problems: IdentityMemo[Program, list[str]] = IdentityMemo(64)
_fingerprints: IdentityMemo[Program, SpecFingerprint] = IdentityMemo(32)


#: The module of each compiled spec this process ran, executed once (a worker runs many runs of
#: one spec: executing the generated code again for each was most of a small run's CPU), by the
#: generated code (:data:`_compiled_specs` keeps what it is made of; as it, the latest 32).
_modules: IdentityMemo[Generated, pytypes.ModuleType] = IdentityMemo(32)


def _module_of(program: Program, generated: Generated) -> pytypes.ModuleType:
    """``generated`` executed as its module, once per process (:data:`_modules`)."""
    from mcec.run.runner import load_module

    return _modules.get(generated, lambda: load_module(program, generated))


def _version(spec: str, *, interpret: bool) -> SpecVersion:
    """The version of ``spec`` this process runs: its compiled module (executed in memory), or the
    reference interpreter's (:class:`InterpretedVersion`)."""
    from mcec.run.runner import RunError

    compiled = _compiled(spec, generate=not interpret)
    program = compiled.program
    assert program is not None
    if interpret or compiled.generated is None:
        return InterpretedVersion(program)
    try:
        return CompiledVersion.of(_module_of(program, compiled.generated))
    except RunError as exc:  # the spec's Python modules failed to import
        raise DurableError(str(exc)) from None


@final
@dataclass(frozen=True)
class InterpretedVersion:
    """A spec version run by mcec's reference interpreter (``mcec run --durable --interpret``):
    what a compiled module's ``SPEC_INFO`` says, from the checked program."""

    program: Program
    _made: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def digest(self) -> str:
        """The program's fingerprint's digest."""
        from mcec.fingerprint import fingerprint

        if "digest" not in self._made:
            self._made["digest"] = fingerprint(self.program).digest
        return str(self._made["digest"])

    @property
    def models(self) -> tuple[str, ...]:
        """The declared models (none when no llm step calls one)."""
        return tuple(m.name for m in self.program.models) if self.program.llms else ()

    def prepare(self, pipeline: str, input_json: str, state_json: str | None) -> tuple[Any, Any]:
        """:func:`mcec.run.runner.prepare` (its RunError as an InputError)."""
        from agentmonad.spec import InputError

        from mcec.run.runner import RunError, prepare

        try:
            return prepare(self.program, pipeline, input_json, state_json)
        except RunError as exc:
            raise InputError(str(exc)) from None

    def type_table(self) -> TypeTable:
        """:func:`mcec.durable.types.type_table`."""
        from mcec.durable.types import type_table

        if "table" not in self._made:
            self._made["table"] = type_table(self.program)
        table: TypeTable = self._made["table"]
        return table

    def pipeline(self, name: str) -> Body:
        """The interpreter's run of ``name``."""
        from mcec.run.interpret import interpret

        return lambda state, value: interpret(self.program, name, state, value)

    def element(self, site: str, body: str | None) -> Body:
        """The interpreter's body of the ``each`` at ``site`` (one interpreter per version and site)."""
        from mcec.durable.elements import find_each
        from mcec.run.interpret import Interpreter

        arrows: dict[str, Any] = self._made.setdefault("arrows", {})
        if site not in arrows:
            try:
                arrows[site] = Interpreter(self.program).arrow(find_each(self.program, site).body)
            except LookupError as exc:
                raise VersionError(str(exc)) from None
        arrow = arrows[site]
        return lambda state, value: arrow(value).run(state)

    def element_types(self) -> dict[str, ElementTypes]:
        """From the checked ``each`` bodies."""
        from mcec.durable.elements import element_types

        return element_types(self.program)

    def each_limits(self) -> dict[str, int]:
        """The limits of the program's ``each(limit=N)``."""
        from mcec.durable.elements import each_sites

        return {site: node.limit for site, node in each_sites(self.program).items() if node.limit is not None}

    def streams(self) -> dict[str, Streaming]:
        """From the checked program's ``stream llm`` calls."""
        from mcec.durable.elements import stream_sites

        return stream_sites(self.program)


@final
class SpecLoader:
    """mcec's :class:`~agentmonad.durable.version.Loader`: a run started from a spec path runs that
    spec, checked and compiled here (or interpreted), from the folder it was started in; a run of
    a compiled module runs as the runtime runs it."""

    def load(self, request: RunRequest) -> SpecVersion:
        """``request.spec`` compiled (or interpreted), else ``request.module`` imported."""
        if request.spec is None:
            return ModuleLoader().load(request)
        importable_from(request.cwd)
        try:
            return _version(request.spec, interpret=request.interpret)
        except DurableError as exc:
            raise VersionError(str(exc)) from None

    def changed(self, request: RunRequest, version: SpecVersion | None) -> str | None:
        """What changed in the spec, in its terms (:func:`mcec.durable.changes.describe_changes`)."""
        if request.spec is None or request.fingerprint is None:
            return ModuleLoader().changed(request, version)
        from mcec.durable.changes import describe_changes
        from mcec.fingerprint import SpecFingerprint

        program = _program(request.spec, generate=not request.interpret)
        recorded = SpecFingerprint.from_json(request.fingerprint)
        try:  # it imports the modules of the types the run records: the user's code
            current = _fingerprint(program)
        except Exception as exc:
            lines = str(exc).strip().splitlines()
            raise DurableError(f"run {request.run_id} cannot resume here: importing the modules of "
                               f"{os.path.basename(request.spec)} failed: {type(exc).__name__}: "
                               f"{lines[0] if lines else ''} (the run is as it was)") from None
        if recorded.digest == current.digest:
            return None
        return describe_changes(request.as_json(), recorded, current, program)


set_loader(SpecLoader())


# ----------------------------------------------------------------------------- the spec-path form


def _new(spec: str, pipeline: str, *, interpret: bool) -> tuple[SpecVersion, dict[str, Any]]:
    """The version ``spec``'s runs of ``pipeline`` run, refused when it cannot run durably, and what
    their requests record of it for mcec (to say what changed, should it change)."""
    from mcec.durable.changes import declarations

    program = _program(spec, generate=not interpret)
    problems = _durable_problems(program, pipeline)
    if problems:
        raise DurableError(f"{pipeline} cannot run durably:\n  " + "\n  ".join(problems))
    version = _version(spec, interpret=interpret)
    module = version.module.__name__ if isinstance(version, CompiledVersion) else None
    return version, {"spec": str(Path(spec).resolve()), "module": module, "interpret": interpret,
                     "fingerprint": _fingerprint(program).to_json(), "declarations": declarations(program)}


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
    reference interpreter's. ``elements``: its ``each(limit=N)`` elements go on their queues as in
    a queued run, and this process takes them from there itself. ``events``: the sink the run tells
    what it does here (:mod:`agentmonad.durable.watch`). :func:`agentmonad.durable.runs.run` runs
    a compiled module the same way, without the compiler."""
    from agentmonad.durable.runs import new_request, start

    spec = str(spec)
    chosen = check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12]
    absolute = str(Path(spec).resolve())
    made: list[SpecVersion] = []

    def make() -> RunRequest:
        version, recorded = _new(spec, pipeline, interpret=interpret)
        made.append(version)
        return new_request(version, pipeline=pipeline, input_json=input_json, state_json=state_json, models=models,
                           run_id=chosen, elements=elements, **recorded)

    return start(make, chosen, db=db, allow_changed_spec=allow_changed_spec, events=events, version=None,
                 same=(None, absolute, pipeline, input_json))


def enqueue(spec: str | Path, pipeline: str, input_json: str, *, queue: str = "default", run_id: str | None = None,
            db: str | None = None, state_json: str | None = None, models: Sequence[str] = (),
            interpret: bool = False) -> dict[str, Any]:
    """Put a durable run on ``queue`` for a worker (``mcec worker``) to run instead of running it
    here: ``{"run_id", "status": "enqueued", "queue"}`` (see :func:`agentmonad.durable.runs.enqueue_request`)."""
    from agentmonad.durable.runs import enqueue_request, new_request

    spec = str(spec)
    version, recorded = _new(spec, pipeline, interpret=interpret)
    return enqueue_request(version, lambda chosen: new_request(version, pipeline=pipeline, input_json=input_json,
                                                               state_json=state_json, models=models, run_id=chosen,
                                                               **recorded),
                           queue=queue, run_id=run_id, db=db, same=(None, str(Path(spec).resolve()), pipeline, input_json))


def serve_worker(specs: Sequence[str | Path], *, db: str | None = None, queue: str = "default",
                 concurrency: int | None = 8, drain_seconds: float = 30.0, heartbeat_seconds: float = 1.0,
                 stale_after: float = 10.0, poll_seconds: float = 1.0) -> int:
    """Serve the runs of ``specs`` enqueued on ``queue`` until SIGTERM/SIGINT, as ``mcec worker``
    does (see :func:`agentmonad.durable.worker.serve`); the exit status."""
    from agentmonad.durable.worker import serve

    return serve(served_versions([str(s) for s in specs]), db=db, queue=queue, concurrency=concurrency,
                 drain_seconds=drain_seconds, heartbeat_seconds=heartbeat_seconds, stale_after=stale_after,
                 poll_seconds=poll_seconds)


def served_versions(specs: Sequence[str]) -> list[tuple[str, SpecVersion]]:
    """Each spec a worker serves, compiled once, with the path it is shown by (DurableError when
    one does not check or is missing)."""
    from mcec.check.pyindex import package_root

    versions = []
    cwd = os.getcwd()
    for spec in specs:
        path = Path(spec)
        if not path.is_file():
            raise DurableError(f"no spec {spec}")
        root = str(package_root(path))
        if root not in sys.path:  # the spec's Python modules import as `mcec run` imports them
            sys.path.insert(1, root)
        versions.append((os.path.relpath(path.resolve(), cwd), _version(spec, interpret=False)))
    return versions
