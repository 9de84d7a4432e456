"""The DBOS queues of durable runs handed out to workers (docs/language.md "Workers"), and
enqueuing a run on one.

A run of a spec whose fingerprint digest is ``D`` enqueued on the user's queue ``Q`` goes on the
DBOS queue ``mcec.Q.D12`` (``D12``: the digest's first 12 hex digits). A worker listens only to
the queues of the spec versions it has, so a run waits until a worker of its own version takes it:
the queue name is the version check, made before a worker ever sees the run.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from mcec.durable import (
    DurableError, _durable_problems, _engine, _new_request, _payload, _program, _same_run, check_run_id,
)

if TYPE_CHECKING:
    from agentmonad.durable.dbos import QueueSpec

    from mcec.check.typed import Program

__all__ = ["DEFAULT_QUEUE", "check_queue_name", "enqueue", "queue_name", "queues_for", "result"]

#: The user queue of ``mcec worker`` and ``mcec run --durable --queue`` when none is named.
DEFAULT_QUEUE = "default"
#: A user queue's name: what reads well in a DBOS queue name and in a log line.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_queue_name(queue: str) -> str:
    """``queue`` when it is a valid user queue name, else a :class:`DurableError` saying what is."""
    if not _NAME.fullmatch(queue):
        raise DurableError(f"bad queue name {queue!r}: use 1 to 64 letters, digits, '-' or '_'")
    return queue


def queue_name(queue: str, digest: str) -> str:
    """The DBOS queue of the runs of the spec version ``digest`` on the user queue ``queue``."""
    return f"mcec.{check_queue_name(queue)}.{digest[:12]}"


def queues_for(program: Program, queue: str, concurrency: int | None) -> list[QueueSpec]:
    """The DBOS queues a worker serving ``program`` on the user queue ``queue`` listens to: the
    queue of its runs, at most ``concurrency`` of them at once in each worker (None: no limit),
    and the queue of each ``each(limit=N)`` of its pipelines, at most ``N`` elements at once across
    every worker (:mod:`mcec.durable.elements`)."""
    from agentmonad.durable.dbos import QueueSpec

    from mcec.durable.elements import element_queues
    from mcec.fingerprint import fingerprint

    digest = fingerprint(program).digest
    return [QueueSpec(queue_name(queue, digest), concurrency=None, worker_concurrency=concurrency),
            *(QueueSpec(name, concurrency=limit, worker_concurrency=None) for name, limit in element_queues(program, digest))]


def enqueue(spec: str, pipeline: str, input_json: str, *, queue: str = DEFAULT_QUEUE, run_id: str | None = None,
            db: str | None = None, state_json: str | None = None, models: Sequence[str] = (),
            interpret: bool = False) -> dict[str, Any]:
    """Put a durable run of ``pipeline`` of ``spec`` on ``input_json`` on ``queue`` for a worker
    of this spec version to run: ``{"run_id", "status": "enqueued", "queue"}``. The input is
    checked first (nothing is enqueued when it is bad); an existing ``run_id`` of the same run is
    not enqueued again (its status is given instead)."""

    check_queue_name(queue)
    if run_id is not None:
        check_run_id(run_id)
    spec = str(spec)
    with _engine(db) as engine:
        if run_id is not None:
            existing = engine.run(run_id)
            if existing is not None:
                _same_run(existing, spec, pipeline, input_json)
                from mcec.durable import _status

                return {"run_id": run_id, "status": _status(existing, engine.steps(run_id)), "queue": queue}
        program, digest, problems = _checked(spec, pipeline)
        chosen = run_id or uuid.uuid4().hex[:12]
        request = _new_request(program, problems, spec, pipeline, input_json, state_json, models,
                               interpret=interpret, run_id=chosen)
        # the queue goes with the request: a queued run hands its `each` elements to workers wherever
        # it is resumed (mcec.durable._elements)
        request["queue"] = queue_name(queue, digest)
        engine.enqueue(chosen, request, request["queue"])
        return {"run_id": chosen, "status": "enqueued", "queue": queue}


#: Specs checked by this process for enqueuing, by (path, pipeline), with the file's size and
#: mtime they were checked at: a batch enqueues many runs of one spec, checked once (its Python
#: modules are imported once per process anyway).
_CHECKED: dict[tuple[str, str], tuple[tuple[int, int], Program, str, list[str]]] = {}


def _checked(spec: str, pipeline: str) -> tuple[Program, str, list[str]]:
    """``spec``'s checked program, its fingerprint's digest, and what stops ``pipeline`` from
    running durably."""
    from mcec.fingerprint import fingerprint

    try:
        stat = os.stat(spec)
    except OSError:
        stat = None
    key, stamp = (os.path.abspath(spec), pipeline), (stat.st_mtime_ns, stat.st_size) if stat else (0, 0)
    known = _CHECKED.get(key)
    if known is not None and stat is not None and known[0] == stamp:
        return known[1], known[2], known[3]
    program = _program(spec)
    found = (program, fingerprint(program).digest, _durable_problems(program, pipeline))
    _CHECKED[key] = (stamp, *found)
    return found


def result(run_id: str, *, db: str | None = None, wait: bool = True, poll_seconds: float = 0.1,
           timeout: float | None = None) -> dict[str, Any] | None:
    """The Outcome of the run ``run_id`` as :func:`mcec.durable.run` gives it, wherever it ran;
    with ``wait``, once it has ended (or stops to wait for people), else None while it has not
    (nor when ``timeout`` seconds pass first)."""
    with _engine(db) as engine:
        if engine.run(run_id) is None:
            raise DurableError(f"no durable run {run_id!r} (see `mcec runs list`)")
        ended = engine.wait_result(run_id, poll_seconds, timeout if wait else 0.0)
        return None if ended is None else _payload(run_id, ended)
