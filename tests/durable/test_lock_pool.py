"""The run locks' connections are pooled per database (agentmonad.durable.locks): a lock let go
leaves its connection to the next lock, and a connection that may still hold a lock never goes
back to the pool — closed, it takes a Postgres advisory lock with it."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from agentmonad.durable import locks


def _free_elsewhere(url: str, run_id: str) -> bool:
    """Whether a connection of another session can take ``run_id``'s lock now (and lets it go)."""
    with psycopg.connect(url, autocommit=True) as other:
        row = other.execute("select pg_try_advisory_lock(hashtextextended(%s, 0))", (f"mcec.run:{run_id}",)).fetchone()
        taken = bool(row and row[0])
        if taken:
            other.execute("select pg_advisory_unlock(hashtextextended(%s, 0))", (f"mcec.run:{run_id}",))
        return taken


def test_a_lock_let_go_is_free_and_its_connection_serves_the_next(postgres_url: str) -> None:
    try:
        for _ in range(3):
            with locks.run_lock(postgres_url, "pooled", wait=0) as lock:
                assert lock.held() and not _free_elsewhere(postgres_url, "pooled")
            assert _free_elsewhere(postgres_url, "pooled")
    finally:
        locks.close()


def test_a_lock_whose_release_failed_is_not_kept_by_a_pooled_connection(postgres_url: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(connection: object, run_id: str, holder: str) -> None:
        raise RuntimeError("the release failed")

    monkeypatch.setattr(locks, "_pg_release", failing)
    try:
        with pytest.raises(RuntimeError, match="the release failed"):
            with locks.run_lock(postgres_url, "stuck", wait=0):
                pass
        assert _free_elsewhere(postgres_url, "stuck")  # its connection was closed, not pooled holding it
        monkeypatch.undo()
        with locks.run_lock(postgres_url, "stuck", wait=0) as lock:  # and this process takes it again
            assert lock.held()
    finally:
        locks.close()


def test_a_sqlite_database_made_anew_under_the_same_path_gets_its_lock_table_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    try:
        with locks.run_lock(url, "r1", wait=0):
            pass
        (tmp_path / "runs.sqlite").unlink()
        with locks.run_lock(url, "r1", wait=0) as lock:
            assert lock.held()
    finally:
        locks.close()
