"""Pages of a long list of durable runs, and what a run's page shows (``mcec console``, docs/language.md §13).

:func:`mcec.durable.list_runs` gives every run, each with its records read: right for ``mcec runs
list``, too slow for a page of a database with 100,000 runs. :func:`list_page` reads one page:
DBOS filters by its own status and start time and pages in its query; what only a run's request or
records say (its spec, its pipeline, whether a ``CANCELLED`` workflow waits for people or was
cancelled) is filtered here, on the rows of that page only. :func:`open_questions` looks for
questions among the runs that can have some only; :func:`state_after` gives the state after one
effect of a run, whole (``mcec runs show`` draws the first 60 characters of each).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, final

from agentmonad.durable.runs import RunStatus

from mcec.durable import DurableError, RunSummary, database_url, waiting

if TYPE_CHECKING:
    from agentmonad.durable.dbos import Engine, RunInfo

__all__ = ["RUN_STATUSES", "RunFilter", "RunPage", "list_page", "open_questions", "state_after"]

#: The statuses a run may have, as ``mcec runs list`` names them.
RUN_STATUSES: Final = tuple(str(status) for status in RunStatus)

#: The DBOS statuses each of :data:`RUN_STATUSES` comes from (DBOS's status alone does not tell
#: some of them apart: the run's result or its last record does).
_DBOS_STATUSES: Final[dict[str, tuple[str, ...]]] = {
    "running": ("PENDING",),
    "enqueued": ("ENQUEUED",),
    "finished": ("SUCCESS",),
    "failed": ("SUCCESS", "ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"),
    "waiting": ("CANCELLED",),
    "cancelled": ("CANCELLED",),
    "stopped": ("CANCELLED",),
}

#: The rows read from DBOS at a time while a page is filled (a filter DBOS cannot apply may skip many).
_BATCH: Final = 200


@final
@dataclass(frozen=True, slots=True)
class RunFilter:
    """Which runs a page lists: every field None matches every run."""

    #: One of :data:`RUN_STATUSES`.
    status: str | None = None
    #: Part of the spec's path (as recorded: absolute).
    spec: str | None = None
    #: The pipeline's name, exactly.
    pipeline: str | None = None
    #: Started at or after (epoch seconds).
    since: float | None = None
    #: Started at or before (epoch seconds).
    until: float | None = None


@final
@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of runs, newest first: the next page starts at ``next_offset`` (None: this is the last)."""

    runs: tuple[RunSummary, ...]
    offset: int
    next_offset: int | None


@contextmanager
def _reading(db: str | None) -> Iterator[Engine]:
    """The run database, opened to read it (a :class:`DurableError` when it cannot be)."""
    try:
        from agentmonad.durable.dbos import Engine
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise DurableError(f"durable runs need DBOS: pip install 'mcec[durable]' ({exc})") from exc
    from agentmonad.durable.urls import redacted, shown

    url = database_url(db)
    try:
        engine = Engine(url)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise DurableError(f"cannot open the run database {shown(url)}: {redacted(first, url)}") from None
    try:
        yield engine
    finally:
        engine.close()


def list_page(*, db: str | None = None, where: RunFilter = RunFilter(), offset: int = 0, limit: int = 50) -> RunPage:
    """At most ``limit`` runs matching ``where``, newest first, from the ``offset``-th row of
    DBOS's list (an offset a :class:`RunPage` gave, or 0)."""
    from agentmonad.durable.runs import named_of, status_of  # one definition of each: that of `runs list`

    if where.status is not None and where.status not in _DBOS_STATUSES:
        raise DurableError(f"unknown run status {where.status!r} (one of {', '.join(RUN_STATUSES)})")
    statuses = _DBOS_STATUSES[where.status] if where.status is not None else None
    found: list[RunSummary] = []
    cursor = max(offset, 0)
    with _reading(db) as engine:
        while True:
            infos = engine.runs_page(statuses=statuses, since=where.since, until=where.until, limit=_BATCH,
                                     offset=cursor, newest_first=True)
            for position, info in enumerate(infos):
                if not _request_matches(info, where):
                    continue
                steps = engine.steps(info.run_id)
                status = status_of(info, steps)
                if where.status is not None and status != where.status:
                    continue
                spec, pipeline = named_of(info)
                found.append(RunSummary(info.run_id, spec, pipeline, status, info.created,
                                        str(steps[-1].get("step")) if steps else None))
                if len(found) == limit:
                    return RunPage(tuple(found), offset, cursor + position + 1)
            if len(infos) < _BATCH:
                return RunPage(tuple(found), offset, None)
            cursor += len(infos)


def _request_matches(info: RunInfo, where: RunFilter) -> bool:
    """Whether the run's request has the spec and pipeline ``where`` asks for."""
    from agentmonad.durable.runs import named_of

    spec, pipeline = named_of(info)
    if where.spec and where.spec not in spec:
        return False
    return not where.pipeline or pipeline == where.pipeline


def open_questions(*, db: str | None = None, run_id: str | None = None) -> list[dict[str, Any]]:
    """Every open question, as :func:`mcec.durable.waiting` gives them (of ``run_id`` only, or of
    every run), the newest run's first. Only the runs that can have open questions are asked
    (DBOS has a waiting run ``CANCELLED``, one whose answering process died ``PENDING``)."""
    if run_id is not None:
        return waiting(db=db, run_id=run_id)
    candidates: list[str] = []
    with _reading(db) as engine:
        cursor = 0
        while True:
            infos = engine.runs_page(statuses=("CANCELLED", "PENDING"), limit=_BATCH, offset=cursor)
            for info in infos:
                if info.status == "PENDING" and not info.request.get("queue"):
                    candidates.append(info.run_id)
                elif info.status == "CANCELLED":
                    steps = engine.steps(info.run_id)
                    if steps and steps[-1].get("kind") == "waiting":
                        candidates.append(info.run_id)
            if len(infos) < _BATCH:
                break
            cursor += len(infos)
    questions: list[dict[str, Any]] = []
    for candidate in candidates:
        try:
            questions.extend(waiting(db=db, run_id=candidate))
        except DurableError:  # gone since (a database shared with other processes): not a question any more
            continue
    return questions


def state_after(run_id: str, key: str, *, db: str | None = None, limit: int = 20_000) -> str | None:
    """The state of its branch after the effect ``key`` of ``run_id``, as indented JSON (cut at
    ``limit`` characters); None when that effect records no state. What the console shows when
    an effect is clicked (``mcec runs show`` draws its first 60 characters of each)."""
    from agentmonad.durable.journal import states_seen

    with _reading(db) as engine:
        if engine.run(run_id) is None:
            raise DurableError(f"no durable run {run_id!r} (see `mcec runs list`)")
        records = engine.steps(run_id)
    keys = [str(record.get("key")) for record in records]
    if key not in keys:
        raise DurableError(f"run {run_id} has no effect {key!r}")
    # each state written out as it is seen (they are changed in place after): linear in the run
    texts, _ = states_seen(records, lambda value: json.dumps(value, indent=2, ensure_ascii=False, default=str))
    text = texts[keys.index(key)]
    return text if text is None or len(text) <= limit else text[:limit] + " …"
