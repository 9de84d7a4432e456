"""One process at a time runs a durable run (docs/language.md §13, "Who runs a run"): the lock a
process holds, in the run database itself, while it starts, resumes, answers or cancels a run.

Without it two processes answering the same waiting run at once would both resume it: DBOS
would run the workflow twice concurrently, or run it once with one process's answer and drop
the other's. A lock in the database (not a file) holds across machines sharing a Postgres
database, and goes away with the process that held it:

- **Postgres**: a session advisory lock (``pg_try_advisory_lock``) on a connection of its own,
  kept open while the lock is held; the server releases it when that connection ends, so a
  killed process never leaves it behind.
- **SQLite** (one machine's file): a row in the table ``mcec_run_locks`` naming its holder
  (host and process id); a row whose process is gone on this host is stale and taken over.

A process that finds the lock held waits for it (polling), up to ``wait`` seconds, then fails
with a message saying who holds it.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["HeldLock", "LockBusy", "close", "run_lock"]

#: How often a process waiting for a run's lock tries again, in seconds.
POLL = 0.05


class LockBusy(Exception):
    """Another process held the run's lock for all of the time we waited: the message says who."""


class HeldLock:
    """A run's lock this process holds: :meth:`held` says whether it still does. On Postgres the
    lock lives as long as its connection: a connection the server ended (``pg_terminate_backend``,
    a failover, a proxy's idle timeout) took the lock with it, and another process may run the run
    now. On SQLite the row stays until this process lets it go or dies."""

    __slots__ = ("_connection", "_postgres", "_lost")

    def __init__(self, connection: Any, postgres: bool) -> None:
        self._connection = connection
        self._postgres = postgres
        self._lost = False

    def held(self) -> bool:
        """Whether this process still holds the lock (one round trip on Postgres; once lost, lost)."""
        if self._postgres and not self._lost:
            import sqlalchemy as sa

            try:
                self._connection.execute(sa.text("select 1"))
            except Exception:
                self._lost = True
        return not self._lost


@contextmanager
def run_lock(url: str, run_id: str, *, wait: float) -> Iterator[HeldLock]:
    """Hold the lock of the run ``run_id`` in the database at ``url`` (``sqlite:///…`` or
    ``postgresql://…``) inside the ``with`` block; wait up to ``wait`` seconds for it, then
    raise :class:`LockBusy`."""
    postgres = not url.startswith("sqlite")
    with _engine(url).connect() as connection:
        holder = f"{socket.gethostname()}:{os.getpid()}"
        take, release = (_pg_take, _pg_release) if postgres else (_sqlite_take, _sqlite_release)
        let_go = False
        try:
            deadline = time.monotonic() + wait
            while True:
                held_by = take(connection, run_id, holder)
                if held_by is None:
                    break
                if time.monotonic() >= deadline:
                    let_go = True  # nothing taken
                    raise LockBusy(f"run {run_id} is being run by another process ({held_by}) and was still "
                                   f"after {wait:g} s; try again when it waits or ends (`mcec runs list`)")
                time.sleep(POLL)
            lock = HeldLock(connection, postgres)
            try:
                yield lock
            finally:
                if lock.held():  # a lost lock has nothing to release (its connection is gone)
                    release(connection, run_id, holder)
                    let_go = True
        finally:
            if not let_go:
                # a connection that may still hold the lock (or is gone) never goes back to the pool:
                # closed, it takes a Postgres advisory lock with it
                connection.invalidate()


#: The engine of each run database the locks of this process's runs are taken in (the latest: a
#: process uses one database): its connections are pooled, since a new Postgres connection costs
#: a server process and a handshake per lock.
_engines: dict[str, tuple[Any, tuple[int, int] | None]] = {}


def _engine(url: str) -> Any:
    import sqlalchemy as sa

    from .urls import file_identity

    identity = file_identity(url)
    engine, opened = _engines.get(url, (None, None))
    if engine is None or opened != identity:  # a new database, or its file made anew since
        close()
        postgres = not url.startswith("sqlite")
        target = sa.make_url(url).set(drivername="postgresql+psycopg") if postgres else sa.make_url(url)
        engine = sa.create_engine(target, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
        if not postgres:
            with engine.connect() as connection:
                _sqlite_table(connection)
        _engines[url] = engine, file_identity(url)
    return engine


def close() -> None:
    """Close the pooled connections locks were taken on (a lock held now keeps its connection
    until it is let go, then that is closed)."""
    while _engines:
        _engines.popitem()[1][0].dispose()


def _forget_after_fork() -> None:
    """A forked child never uses (or closes) the parent's connections: SQLAlchemy's own recipe."""
    for engine, _ in _engines.values():
        engine.dispose(close=False)


os.register_at_fork(after_in_child=_forget_after_fork)


def _key(run_id: str) -> str:
    return f"mcec.run:{run_id}"


def _pg_take(connection: Any, run_id: str, holder: str) -> str | None:
    """None when taken; else who holds it (Postgres does not say: "a process")."""
    import sqlalchemy as sa

    taken = connection.execute(sa.text("select pg_try_advisory_lock(hashtextextended(:key, 0))"),
                               {"key": _key(run_id)}).scalar()
    return None if taken else "a process holding its lock"


def _pg_release(connection: Any, run_id: str, holder: str) -> None:
    import sqlalchemy as sa

    connection.execute(sa.text("select pg_advisory_unlock(hashtextextended(:key, 0))"), {"key": _key(run_id)})


def _sqlite_table(connection: Any) -> None:
    import sqlalchemy as sa

    connection.execute(sa.text("create table if not exists mcec_run_locks "
                               "(run_id text primary key, holder text not null, since real not null)"))


def _sqlite_take(connection: Any, run_id: str, holder: str) -> str | None:
    """None when taken; else who holds it (a row whose process is gone from this host is taken over)."""
    import sqlalchemy as sa

    if _sqlite_insert(connection, run_id, holder):
        return None
    held = connection.execute(sa.text("select holder from mcec_run_locks where run_id = :run"), {"run": run_id}).scalar()
    if held is None:
        return "a process that just let it go"  # released meanwhile: the next try takes it
    host, _, pid = str(held).rpartition(":")
    if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
        connection.execute(sa.text("delete from mcec_run_locks where run_id = :run and holder = :holder"),
                           {"run": run_id, "holder": held})
        # taken over at once: a caller that does not wait (wait=0) takes a dead process's lock too
        return None if _sqlite_insert(connection, run_id, holder) else f"process {pid}, gone, and another that took it over"
    return f"process {pid} on {host}"


def _sqlite_insert(connection: Any, run_id: str, holder: str) -> bool:
    """Whether this process took the free lock (its row inserted); False: a row is there."""
    import sqlalchemy as sa

    try:
        connection.execute(sa.text("insert into mcec_run_locks (run_id, holder, since) values (:run, :holder, :since)"),
                           {"run": run_id, "holder": holder, "since": time.time()})
        return True
    except sa.exc.IntegrityError:
        return False


def _sqlite_release(connection: Any, run_id: str, holder: str) -> None:
    import sqlalchemy as sa

    connection.execute(sa.text("delete from mcec_run_locks where run_id = :run and holder = :holder"),
                       {"run": run_id, "holder": holder})


def _alive(pid: int) -> bool:
    """Whether the process ``pid`` exists on this host."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, run by another user
        return True
    return True
