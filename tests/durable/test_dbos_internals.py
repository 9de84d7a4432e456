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


def test_pickled_rows_are_refused_by_every_decoder_dbos_picks() -> None:
    dbos_internals.refuse_pickled_rows()
    name = serialization.DBOSDefaultSerializer.name()
    assert name == "py_pickle"
    for decode in (lambda: serialization.deserialize_value("gASVAAAAAAAAAACMAU6ULg==", name, JsonSerializer()),
                   lambda: serialization.deserialize_exception("gASVAAAAAAAAAACMAU6ULg==", name, JsonSerializer()),
                   lambda: serialization.deserialize_args("gASVAAAAAAAAAACMAU6ULg==", name, JsonSerializer())):
        with pytest.raises(dbos_internals.ForeignRow):
            decode()
