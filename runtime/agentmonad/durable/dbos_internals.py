"""Every place mcec touches DBOS Transact below its public API (``dbos>=3.4,<4``), in one module.

DBOS keeps no public handle on what is here: its launched instance's queue threads, active
workflows and system database, its internal queue, the cancellation errors it raises, and the
decoder it picks by a row's ``serialization`` column. ``tests/durable/test_dbos_internals.py``
checks each of these against the installed DBOS, so an upgrade that moves one fails there,
loudly, not in a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from dbos import Serializer
from dbos._error import DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError
from dbos._queue import DEFAULT_QUEUE_POLLING_INTERVAL_SEC
from dbos._utils import INTERNAL_QUEUE_NAME

__all__ = [
    "CANCELLED_ERRORS", "DEFAULT_QUEUE_POLLING_INTERVAL_SEC", "INTERNAL_QUEUE_NAME", "DBOSAwaitedWorkflowCancelledError",
    "ForeignRow", "dbos_instance", "internal_queue", "refuse_pickled_rows", "set_worker_concurrency", "system_engine",
    "rewrite_run", "RewriteRefused", "forget_instance",
]

#: What DBOS raises in and around a workflow that was cancelled.
CANCELLED_ERRORS = (DBOSAwaitedWorkflowCancelledError, DBOSWorkflowCancelledError)


class ForeignRow(Exception):
    """A row of the run database was written in a serialization mcec never writes (DBOS's pickle):
    it is refused, never decoded, since decoding a pickle runs whatever code the row names."""


def dbos_instance() -> Any:
    """DBOS's launched instance (its queue threads, active workflows and system database)."""
    from dbos._dbos import _get_dbos_instance

    return _get_dbos_instance()


def forget_instance() -> Any:
    """Drop DBOS's launched instance without shutting it down, and give it (a forked child: its
    threads are not running here and its connections are the parent's — the caller keeps it
    referenced, so that they are never closed from here); a later ``DBOS(...)`` makes a new one."""
    import dbos._dbos as module

    assert hasattr(module, "_dbos_global_instance"), "DBOS no longer keeps its instance there"
    instance = module._dbos_global_instance
    module._dbos_global_instance = None
    return instance


def system_engine(client: Any) -> Any:
    """The SQLAlchemy engine of a :class:`dbos.DBOSClient`'s system database (the run database),
    where mcec keeps its own tables beside DBOS's (workers' heartbeats, answers)."""
    engine = client._sys_db.engine
    assert hasattr(engine, "begin"), "DBOSClient no longer keeps its system database's engine there"
    return engine


def internal_queue() -> Any:
    """DBOS's internal queue, where a resumed workflow waits for a process to take it."""
    return dbos_instance()._registry.get_internal_queue()


def set_worker_concurrency(queue: Any, limit: int | None) -> None:
    """How many runs of ``queue`` this process runs at once (0: it takes none)."""
    assert hasattr(queue, "_worker_concurrency"), "DBOS's Queue no longer keeps its worker concurrency there"
    queue._worker_concurrency = limit


class _RefusedPickle(Serializer):
    """Stands in for DBOS's pickle serializer: a row that names it is refused (:class:`ForeignRow`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def serialize(self, data: Any) -> str:
        raise ForeignRow("mcec never writes a pickled value to the run database")

    def deserialize(self, serialized_data: str) -> NoReturn:
        raise ForeignRow(
            f"a row of the run database is in the {self._name} serialization, which mcec never writes: refused, not "
            "decoded (decoding it would run the code it names); someone else wrote to this database"
        )

    def name(self) -> str:
        return self._name


def refuse_pickled_rows() -> None:
    """Make DBOS refuse every row in its pickle serialization, in this process. DBOS picks a row's
    decoder from the row's own ``serialization`` column, so anyone who can write one row (a shared
    database user, a copied SQLite file, a restored backup) could otherwise run code in every
    process that reads runs. Its encode and decode functions look the pickle serializer up as a
    module global at each call: replacing that global is the whole change."""
    import dbos._serialization as serialization

    current = serialization.DBOSDefaultSerializer
    if isinstance(current, _RefusedPickle):
        return
    name = current.name()
    assert name == "py_pickle", f"DBOS's default serializer is {name!r}, no longer its pickle"
    serialization.DBOSDefaultSerializer = _RefusedPickle(name)


class RewriteRefused(Exception):
    """A run's rows are not as :func:`rewrite_run` expects (another serialization, a row gone):
    nothing was changed."""


def rewrite_run(client: Any, run_id: str, request: dict[str, Any], outputs: Mapping[int, Mapping[str, object]],
                queue: str | None = None) -> None:
    """Rewrite, in ONE transaction of the run database, the input of the workflow ``run_id`` (its
    request: ``request``, as mcec's JSON serializer writes a workflow's arguments) and the outputs
    of its steps ``outputs`` (by step id: the record each step keeps now). DBOS has no API to edit
    a workflow's input or its steps' outputs; its tables are ``workflow_status`` (the input in its
    ``inputs`` column, or in ``workflow_input`` — DBOS reads whichever the row has) and
    ``operation_outputs``. A row in another serialization than mcec's is refused, never rewritten.
    ``queue``: the run is still enqueued and goes on that DBOS queue (its ``queue_name``) — refused
    when a worker took it from its queue meanwhile."""
    import json

    import sqlalchemy as sa
    from dbos._schemas.system_database import SystemSchema

    status, inputs, outputs_table = SystemSchema.workflow_status, SystemSchema.workflow_input, SystemSchema.operation_outputs
    serialized = json.dumps({"args": [request], "kwargs": {}})
    with system_engine(client).begin() as c:
        row = c.execute(sa.select(status.c.serialization, status.c.inputs)
                        .where(status.c.workflow_uuid == run_id).with_for_update()).first()
        if row is None:
            raise RewriteRefused(f"run {run_id} has no workflow row")
        if row.serialization != "mcec_json":
            raise RewriteRefused(f"run {run_id}'s workflow row is in the {row.serialization} serialization, not mcec's")
        if row.inputs is not None:
            c.execute(status.update().where(status.c.workflow_uuid == run_id).values(inputs=serialized))
        c.execute(inputs.update().where(inputs.c.workflow_uuid == run_id).values(inputs=serialized))
        if queue is not None:
            taken = c.execute(status.update().where(status.c.workflow_uuid == run_id, status.c.status == "ENQUEUED")
                              .values(queue_name=queue))
            if taken.rowcount != 1:
                raise RewriteRefused(f"run {run_id} was taken from its queue meanwhile")
        for function_id, record in outputs.items():
            done = c.execute(outputs_table.update()
                             .where(outputs_table.c.workflow_uuid == run_id, outputs_table.c.function_id == function_id,
                                    outputs_table.c.serialization == "mcec_json")
                             .values(output=json.dumps(record, default=str)))
            if done.rowcount != 1:
                raise RewriteRefused(f"run {run_id}'s step {function_id} is not one mcec wrote")
