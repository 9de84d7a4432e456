"""The test PostgreSQL server (tests/pgserver.py): a real server a client can use, shared by
processes, run as a non-root user, stopped and removed at the end; when it cannot start, the
reason, never a skip."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

import pgserver
from pgserver import PgServer, PgServerError, postgres_url  # noqa: F401  (the fixture)


def test_a_client_can_use_the_server(postgres_url: str) -> None:
    assert postgres_url.startswith("postgresql://") and postgres_url.endswith(f"/{pgserver.DATABASE}")
    with psycopg.connect(postgres_url) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS pg_fixture_probe (step int PRIMARY KEY, outcome jsonb)")
        connection.execute("DELETE FROM pg_fixture_probe")
        with connection.transaction():
            for step in range(3):
                connection.execute("INSERT INTO pg_fixture_probe VALUES (%s, %s)", (step, '{"ok": true}'))
        with pytest.raises(psycopg.errors.UniqueViolation):
            with connection.transaction():
                connection.execute("INSERT INTO pg_fixture_probe VALUES (0, '{}')")
        connection.commit()
    # another process sees what this one committed: the server is shared, as a --db URL is
    count = subprocess.run(
        [sys.executable, "-c", "import psycopg, sys\nwith psycopg.connect(sys.argv[1]) as c:\n"
         "    print(c.execute('SELECT count(*) FROM pg_fixture_probe').fetchone()[0])", postgres_url],
        capture_output=True, text=True, timeout=60,
    )
    assert count.returncode == 0, count.stderr
    assert count.stdout.strip() == "3"


def test_the_server_never_runs_as_root(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as connection:
        row = connection.execute("SELECT setting FROM pg_settings WHERE name = 'data_directory'").fetchone()
        pid_row = connection.execute("SELECT pg_backend_pid()").fetchone()
        assert row is not None and pid_row is not None
        # read while connected: the backend process ends with its connection
        backend = Path(f"/proc/{pid_row[0]}/status").read_text().splitlines()
    owner = Path(row[0]).stat().st_uid
    uid = next(int(line.split()[1]) for line in backend if line.startswith("Uid:"))
    assert uid == owner
    if os.geteuid() == 0:
        assert uid != 0


def test_stop_stops_the_server_and_removes_its_folder() -> None:
    server = PgServer.start()
    try:
        with psycopg.connect(server.url) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.stop()
    assert not server.folder.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.url, connect_timeout=3)


def test_a_server_that_cannot_start_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken initdb: the error names the step and carries the program's own words."""
    with tempfile.TemporaryDirectory(prefix="mcec-pg-bin-") as folder:  # readable by the server's user
        bin_dir = Path(folder)
        bin_dir.chmod(0o755)
        for name in ("initdb", "pg_ctl", "postgres"):
            tool = bin_dir / name
            tool.write_text("#!/bin/sh\necho 'initdb: error: the disk is on fire' >&2\nexit 1\n")
            tool.chmod(0o755)
        monkeypatch.setattr(pgserver, "server_bin", lambda: bin_dir)
        with pytest.raises(PgServerError) as caught:
            PgServer.start()
    assert "could not initialise a cluster (initdb)" in str(caught.value)
    assert "the disk is on fire" in str(caught.value)


def test_no_binaries_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(pgserver, "INSTALLED", tmp_path / "nothing")
    with pytest.raises(PgServerError, match="apt-get install -y postgresql"):
        pgserver.server_bin()


def test_the_binaries_are_found_where_debian_puts_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for version in ("9", "15", "16"):
        (tmp_path / version / "bin").mkdir(parents=True)
        (tmp_path / version / "bin" / "postgres").write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(pgserver, "INSTALLED", tmp_path)
    assert pgserver.server_bin() == tmp_path / "16" / "bin"
