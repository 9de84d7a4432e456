"""The DBOS queues of durable runs handed out to workers (docs/language.md "Workers"); a run is
put on one by :func:`agentmonad.durable.runs.enqueue`.

A run of a spec version whose fingerprint digest is ``D`` enqueued on the user's queue ``Q`` goes
on the DBOS queue ``mcec.Q.D12`` (``D12``: the digest's first 12 hex digits). A worker listens
only to the queues of the spec versions it has, so a run waits until a worker of its own version
takes it: the queue name is the version check, made before a worker ever sees the run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .errors import DurableError

if TYPE_CHECKING:
    from .dbos import QueueSpec
    from .version import SpecVersion

__all__ = ["DEFAULT_QUEUE", "check_queue_name", "queue_name", "queues_for"]

#: The user queue of a worker and of ``run --durable --queue`` when none is named.
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


def queues_for(version: SpecVersion, queue: str, concurrency: int | None) -> list[QueueSpec]:
    """The DBOS queues a worker serving ``version`` on the user queue ``queue`` listens to: the
    queue of its runs, at most ``concurrency`` of them at once in each worker (None: no limit),
    and the queue of each ``each(limit=N)`` of its pipelines, at most ``N`` elements at once across
    every worker (:mod:`agentmonad.durable.elements`)."""
    from .dbos import QueueSpec
    from .version import element_queue

    return [QueueSpec(queue_name(queue, version.digest), concurrency=None, worker_concurrency=concurrency),
            *(QueueSpec(element_queue(version.digest, site), concurrency=limit, worker_concurrency=None)
              for site, limit in version.each_limits().items())]
