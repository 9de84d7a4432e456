"""A real PostgreSQL server for the tests: durable runs on a shared database (issue 31).

``postgres_url`` is a session-scoped fixture: the first test that asks for it
starts a server of its own (``initdb`` into a fresh folder, ``pg_ctl start`` on a
free port of 127.0.0.1 and a Unix socket in that folder, a database created in
it), every later test of the session shares it, and the session's end stops it
and removes the folder. Under xdist each worker is a session of its own, so each
worker that runs such a test has its own server: nothing is shared between
processes, so nothing needs a lock.

The server binaries are ``initdb``/``pg_ctl``/``postgres`` on ``PATH``, else the
newest ``/usr/lib/postgresql/*/bin`` (Debian's ``postgresql`` package, which
``.ci/run`` installs on a machine that has none). PostgreSQL refuses to run as
root; as root the server runs as the user ``postgres`` (created when missing),
through ``runuser``. The server is tuned for tests (no fsync: a test kills the
*client*, never the server) and trusts local connections.

A test that needs the server never skips: when it cannot start, the fixture
fails the test with the reason (the command that failed and the server's log).
Import the fixture into a test module to use it::

    from pgserver import postgres_url  # noqa: F401  (the fixture)
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The user the server runs as when the tests run as root.
SERVER_USER = "postgres"
#: The database the fixture creates and names in its URL.
DATABASE = "mcec_test"
#: Where Debian's ``postgresql`` package puts each version's binaries (``15/bin`` …).
INSTALLED = Path("/usr/lib/postgresql")
#: How long the server may take to start (pg_ctl's ``-t``), in seconds.
START_TIMEOUT = 60
#: Settings for a throwaway server: no durability, little memory, only the local interface.
TEST_SETTINGS = (
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
    "shared_buffers=32MB",
)


class PgServerError(Exception):
    """The test server could not be started: the message says which step failed and why."""


def server_bin() -> Path:
    """The folder of ``initdb``, ``pg_ctl`` and ``postgres``: on ``PATH`` (all three in one folder,
    symlinks followed), else the newest ``/usr/lib/postgresql/*/bin``."""
    found = [shutil.which(name) for name in ("initdb", "pg_ctl", "postgres")]
    if all(found):
        folders = {Path(p).resolve().parent for p in found if p is not None}
        if len(folders) == 1:
            return folders.pop()
    installed = sorted(
        (p for p in INSTALLED.glob("*/bin") if (p / "postgres").is_file()),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    if installed:
        return installed[-1]
    raise PgServerError(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) on PATH or in /usr/lib/postgresql/*/bin; "
        "install Debian's `postgresql` package (.ci/run does: apt-get install -y postgresql)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _server_user() -> str | None:
    """The user to run the server as: None when not root (run as ourselves), else ``postgres``,
    created (a system user without a home) when missing."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError:
        _run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVER_USER], "create the user postgres")
    return SERVER_USER


def _run(command: list[str], what: str, user: str | None = None, log: Path | None = None) -> None:
    """Run ``command`` (as ``user``), raising :class:`PgServerError` with its output (and ``log``)
    when it fails."""
    full = ["runuser", "-u", user, "--", *command] if user is not None else command
    try:
        done = subprocess.run(full, capture_output=True, text=True, timeout=START_TIMEOUT + 30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PgServerError(f"could not {what}: {' '.join(full)}: {exc}") from exc
    if done.returncode != 0:
        text = f"could not {what}: `{' '.join(full)}` exited {done.returncode}\n{done.stdout}{done.stderr}"
        if log is not None and log.is_file():
            text += f"\nserver log ({log}):\n{log.read_text(encoding='utf-8', errors='replace')[-4000:]}"
        raise PgServerError(text)


@dataclass
class PgServer:
    """One running test server: ``url`` reaches its database over TCP, ``socket_dir`` holds its
    Unix socket; :meth:`stop` stops it and removes its folder."""

    bin: Path
    folder: Path
    port: int
    user: str | None
    running: bool = False

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "socket"

    @property
    def log(self) -> Path:
        return self.folder / "server.log"

    @property
    def url(self) -> str:
        """A ``postgresql://`` URL of the test database (the server trusts local connections)."""
        return f"postgresql://{self.user or pwd.getpwuid(os.geteuid()).pw_name}@127.0.0.1:{self.port}/{DATABASE}"

    @classmethod
    def start(cls, attempts: int = 3) -> PgServer:
        """Make a cluster in a fresh folder and start a server on it, on a free port (another port
        when the one picked was taken meanwhile); :class:`PgServerError` says why it could not."""
        bin_dir = server_bin()
        user = _server_user()
        folder = Path(tempfile.mkdtemp(prefix="mcec-pg-"))
        try:
            server = cls(bin_dir, folder, 0, user)
            server._prepare()
            for attempt in range(attempts):
                server.port = _free_port()
                try:
                    server._start()
                    break
                except PgServerError:
                    if attempt == attempts - 1:
                        raise
            server._create_database()
            return server
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def _prepare(self) -> None:
        """The folders, owned by the server's user, and an initialised cluster."""
        self.socket_dir.mkdir()
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            for path in (self.folder, self.socket_dir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        os.chmod(self.folder, 0o700)
        user = self.user or pwd.getpwuid(os.geteuid()).pw_name
        command = [str(self.bin / "initdb"), "-D", str(self.data), "-U", user, "--auth=trust", "--no-sync"]
        _run([*command, "-E", "UTF8", "--locale=C"], "initialise a cluster (initdb)", self.user)

    def _start(self) -> None:
        options = " ".join(
            [f"-p {self.port}", f"-k {self.socket_dir}", "-c listen_addresses=127.0.0.1", *(f"-c {s}" for s in TEST_SETTINGS)]
        )
        command = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(START_TIMEOUT)]
        _run([*command, "-o", options, "start"], f"start the server on port {self.port} (pg_ctl start)", self.user, self.log)
        self.running = True

    def _create_database(self) -> None:
        createdb = self.bin / "createdb"
        if not createdb.is_file():
            createdb = Path(shutil.which("createdb") or "createdb")
        command = [str(createdb), "-h", str(self.socket_dir), "-p", str(self.port), "-U", self.user or pwd.getpwuid(os.geteuid()).pw_name]
        _run([*command, DATABASE], f"create the database {DATABASE} (createdb)", self.user, self.log)

    def stop(self) -> None:
        """Stop the server at once (a test server keeps nothing) and remove its folder."""
        if self.running:
            self.running = False
            command = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop"]
            full = ["runuser", "-u", self.user, "--", *command] if self.user is not None else command
            subprocess.run(full, capture_output=True, timeout=60)
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_until_accepting(url: str, timeout: float = 10.0) -> None:
    """Wait until a client can connect to ``url`` (the server is up as pg_ctl -w returns; this
    covers a server another process started)."""
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A ``postgresql://`` URL of a fresh database on a real server started for this session
    (this worker, under xdist), stopped at its end. Fails the test, with the reason, when the
    server cannot start: these tests never skip."""
    try:
        server = PgServer.start()
    except PgServerError as exc:
        pytest.fail(f"the test PostgreSQL server could not start: {exc}", pytrace=False)
    atexit.register(server.stop)  # also when the session dies before its teardown
    try:
        yield server.url
    finally:
        server.stop()
