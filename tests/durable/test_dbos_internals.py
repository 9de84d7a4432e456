"""What mcec uses of DBOS below its public API (agentmonad.durable.dbos_internals) is still where
it was in the installed DBOS: an upgrade that moves one fails here, loudly, not in a run."""

from __future__ import annotations

import dbos._serialization as serialization
import pytest

from agentmonad.durable import dbos_internals
from agentmonad.durable.dbos import JsonSerializer  # noqa: F401  (importing it refuses pickled rows)


def test_the_cancellation_errors_and_queue_constants_are_there() -> None:
    assert all(issubclass(error, BaseException) for error in dbos_internals.CANCELLED_ERRORS)
    assert isinstance(dbos_internals.INTERNAL_QUEUE_NAME, str) and dbos_internals.INTERNAL_QUEUE_NAME
    assert dbos_internals.DEFAULT_QUEUE_POLLING_INTERVAL_SEC > 0


def test_the_instance_and_its_internal_queue_are_reachable() -> None:
    import inspect

    from dbos._dbos import DBOS, _get_dbos_instance  # noqa: F401  (what dbos_instance() calls)
    from dbos._queue import Queue
    from dbos._dbos import DBOSRegistry  # where the internal queue is kept

    assert hasattr(DBOSRegistry, "get_internal_queue")
    # a Queue is made only by a launched DBOS: what the setters change must be its own attributes
    source = inspect.getsource(Queue.__init__)
    assert "self._worker_concurrency" in source


def test_the_instance_a_forked_child_forgets_is_where_forget_instance_drops_it() -> None:
    import dbos._dbos as module
    from dbos import DBOS

    assert "_dbos_global_instance" in vars(module)
    # DBOS(...) makes a new instance once the global is None (what a forked child's next launch needs)
    assert "_dbos_global_instance is None" in __import__("inspect").getsource(DBOS.__new__)


def test_pickled_rows_are_refused_by_every_decoder_dbos_picks() -> None:
    dbos_internals.refuse_pickled_rows()
    name = serialization.DBOSDefaultSerializer.name()
    assert name == "py_pickle"
    for decode in (lambda: serialization.deserialize_value("gASVAAAAAAAAAACMAU6ULg==", name, JsonSerializer()),
                   lambda: serialization.deserialize_exception("gASVAAAAAAAAAACMAU6ULg==", name, JsonSerializer()),
                   lambda: serialization.deserialize_args("gASVAAAAAAAAAACMAU6ULg==", name, JsonSerializer())):
        with pytest.raises(dbos_internals.ForeignRow):
            decode()


def test_the_rows_a_move_rewrites_are_where_rewrite_run_writes_them() -> None:
    """``runs upgrade`` rewrites a run's input and its steps' outputs in DBOS's tables
    (:func:`dbos_internals.rewrite_run`): the columns it writes are there, and DBOS still reads a
    workflow's input from ``workflow_input`` before ``workflow_status``."""
    import inspect

    from dbos._schemas.system_database import SystemSchema
    from dbos._sys_db import SystemDatabase

    assert {"workflow_uuid", "inputs", "serialization"} <= set(SystemSchema.workflow_status.c.keys())
    assert {"workflow_uuid", "inputs"} <= set(SystemSchema.workflow_input.c.keys())
    assert {"workflow_uuid", "function_id", "output", "serialization"} <= set(SystemSchema.operation_outputs.c.keys())
    source = inspect.getsource(SystemDatabase)
    assert "self.tables.workflow_input.c.inputs,\n" in source and "self.tables.workflow_status.c.inputs," in source
    assert JsonSerializer().name() == "mcec_json"  # the serialization rewrite_run accepts and writes
    inputs = inspect.getsource(serialization.serialize_args)
    assert 'i: WorkflowInputs = {"args": args, "kwargs": kwargs}' in inputs  # the input's JSON form
