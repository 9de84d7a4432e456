"""``mcec runs upgrade``: move durable runs in flight to a new version of their spec (docs/language.md
§13, "Changing a spec with runs in flight").

The new spec is checked and compiled here; each run is classified by a dry replay of its journal
against it (:func:`agentmonad.durable.upgrade.classify`), and the runs that can move are moved
(:func:`agentmonad.durable.upgrade.move`), each under its run lock, in one transaction: from then
on a resume or an answer runs the new version. The rest keep their version, with the first place
each diverges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from agentmonad.durable.errors import DurableError

if TYPE_CHECKING:
    from agentmonad.durable.dbos import Engine, RunInfo
    from agentmonad.durable.journal import Record

    from mcec.durable.migrate import Migrations
    from agentmonad.durable.request import RunRequest
    from agentmonad.durable.version import SpecVersion

__all__ = ["Upgraded", "upgrade"]


@final
@dataclass(frozen=True, slots=True)
class Upgraded:
    """What ``runs upgrade`` did with one run: ``moved`` (with ``dry_run``: would move; ``already``:
    it ran that version already, a move done before), or it stays, ``why`` (where and why, one line)."""

    run_id: str
    moved: bool
    why: str | None = None
    already: bool = False

    @property
    def shown(self) -> str:
        """As ``runs upgrade`` prints it."""
        if self.already:
            return f"{self.run_id}: on this version already"
        return f"{self.run_id}: moved" if self.moved else f"{self.run_id}: stays ({self.why})"

    def as_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {"run_id": self.run_id, "moved": self.moved, "why": self.why, "already": self.already}


def upgrade(spec: str | Path, run_ids: Sequence[str] = (), *, all_runs: bool = False, dry_run: bool = False,
            db: str | None = None) -> list[Upgraded]:
    """Move the runs ``run_ids`` (``all_runs``: every live run) to the version of ``spec``; with
    ``dry_run``, say what would move and change nothing. One :class:`Upgraded` per run, in order."""
    from agentmonad.durable.runs import engine_for

    spec = str(spec)
    if not Path(spec).is_file():
        raise DurableError(f"no spec {spec}")
    if not run_ids and not all_runs:
        raise DurableError("name the runs to move, or pass --all")
    if run_ids and all_runs:
        raise DurableError("name runs or pass --all, not both")
    from mcec.durable import _program
    from mcec.durable.migrate import migrations

    migrations(_program(spec, generate=True))  # a spec that does not check, a bad migration: said once
    versions: Versions = {}
    done: list[Upgraded] = []
    with engine_for(db) as engine:
        infos = engine.runs() if all_runs else [_known(engine, run_id) for run_id in run_ids]
        for info in infos:
            done.append(_upgrade_one(engine, info, spec, versions, dry_run=dry_run, named=not all_runs))
    return [d for d in done if d.why != _SKIPPED]


#: Why a run ``--all`` leaves out is not shown (it has ended: nothing to move).
_SKIPPED = "\0ended"


def _known(engine: Engine, run_id: str) -> RunInfo:
    info = engine.run(run_id)
    if info is None:
        raise DurableError(f"no durable run {run_id!r} (see `mcec runs list`)")
    return info


def _upgrade_one(engine: Engine, info: RunInfo, spec: str, versions: Versions, *, dry_run: bool, named: bool) -> Upgraded:
    """Classify the run ``info`` against ``spec`` and, unless ``dry_run``, move it."""
    from agentmonad.durable.dbos_internals import RewriteRefused
    from agentmonad.durable.runs import _locked, request_of, status_of
    from agentmonad.durable.upgrade import MOVABLE, Stays, classify, move

    run_id = info.run_id
    status = status_of(info, engine.steps(run_id))
    if status not in MOVABLE:
        if status in ("finished", "failed") and not named:
            return Upgraded(run_id, False, _SKIPPED)
        return Upgraded(run_id, False, f"it is {status}: only a waiting, stopped or enqueued run moves")
    request = request_of(info)
    try:
        version, recorded, migrating = _new_version(spec, request, versions)
    except DurableError as exc:
        return Upgraded(run_id, False, str(exc))
    if request.digest == version.digest and request.spec == recorded["spec"]:
        return Upgraded(run_id, True, already=True)
    with _locked(engine, run_id):  # no process resumes or answers it while it is classified and moved
        info = _known(engine, run_id)
        status = status_of(info, engine.steps(run_id))
        if status not in MOVABLE:
            return Upgraded(run_id, False, f"it is {status}: only a waiting, stopped or enqueued run moves")
        asked_anew = bool(migrating.without(request.declarations).outputs)  # its questions come from migrated values
        prepared_run = prepared(request, engine.steps(run_id), migrating)
        if isinstance(prepared_run, str):
            return Upgraded(run_id, False, prepared_run)
        request, records = prepared_run
        verdict = classify(version, request, records, asked_anew=asked_anew)
        if isinstance(verdict, Stays):
            return Upgraded(run_id, False, verdict.shown)
        if not dry_run:
            try:
                move(engine, run_id, _moved_request(request, version, recorded), verdict,
                     records if migrating else None, enqueued=status == "enqueued")
            except RewriteRefused as exc:
                return Upgraded(run_id, False, str(exc))
    return Upgraded(run_id, True)


#: The new versions compiled for the runs moved, by pipeline and way of running: the version, what a
#: request records of it, its migrations.
Versions = dict[tuple[str, bool], tuple["SpecVersion", dict[str, Any], "Migrations"]]


def _new_version(spec: str, request: RunRequest, versions: Versions
                 ) -> tuple[SpecVersion, dict[str, Any], Migrations]:
    """The version of ``spec`` the run of ``request`` would run (compiled once per pipeline), what
    its request records of it, and its migrations (:mod:`mcec.durable.migrate`)."""
    from mcec.durable import _new, _program
    from mcec.durable.migrate import migrations

    key = (request.pipeline, request.interpret)
    if key not in versions:
        version, recorded = _new(spec, request.pipeline, interpret=request.interpret)
        versions[key] = (version, recorded, migrations(_program(spec, generate=not request.interpret)))
    return versions[key]


def prepared(request: RunRequest, records: list[Record], migrating: Migrations
             ) -> tuple[RunRequest, list[Record]] | str:
    """The run's request and records as the new version reads them: renamed, its outputs and
    states migrated as the version declares; why not, when a value cannot be."""
    from mcec.durable.migrate import MigrationFailed, migrated

    migrating = migrating.without(request.declarations)  # what its version declared too, it went through
    if not migrating:
        return request, records
    try:
        records, start = migrated(records, request.state, migrating)
    except MigrationFailed as exc:
        return str(exc)
    return replace(request, state=start), records


def _moved_request(request: RunRequest, version: SpecVersion, recorded: dict[str, Any]) -> RunRequest:
    """``request`` as the new version's: its spec, module, digest, fingerprint and declarations;
    a queued run's queue named for the new version (its workers listen there)."""
    from agentmonad.durable.queues import queue_name

    queue = request.queue
    if queue is not None:
        queue = queue_name(_queue_of(queue), version.digest)
    return replace(request, spec=recorded["spec"], module=recorded["module"], digest=version.digest,
                   fingerprint=recorded["fingerprint"], declarations=recorded["declarations"], queue=queue)


def _queue_of(name: str) -> str:
    """The user's queue in a DBOS queue name ``mcec.Q.D12`` (:func:`agentmonad.durable.queues.queue_name`)."""
    parts = name.split(".")
    return parts[1] if len(parts) == 3 and parts[0] == "mcec" else name
