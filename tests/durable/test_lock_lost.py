"""A process that loses a run's lock stops the run before its next effect (docs/language.md §13,
"One process runs a run at a time"): on Postgres the lock lives as long as its connection, and a
connection the server ends (here `pg_terminate_backend`; a failover or a proxy's idle timeout in
life) takes it along. The process then says so in one line (exit 2), every completed effect is
recorded, and `runs resume` finishes the run with no step run twice."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from tests.durable.processes import env, lines, mcec

CHAIN = Path(__file__).parent / "syncbox" / "chain.mce"


def test_a_run_whose_lock_is_lost_stops_before_its_next_effect(tmp_path: Path, postgres_url: str) -> None:  # noqa: F811
    effects = tmp_path / "effects.txt"
    args = ["run", str(CHAIN), "chain", "--input", "0", "--durable", "--run-id", "l1", "--db", postgres_url]
    running = subprocess.Popen([sys.executable, "-m", "mcec", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env(effects, 0.3), cwd=tmp_path)
    deadline = time.monotonic() + 120
    while len(lines(effects)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        # the run's lock (mcec.durable.locks): DBOS holds advisory locks of its own
        holders = [row[0] for row in connection.execute(
            "select pid from pg_locks where locktype = 'advisory' and granted and "
            "((classid::bigint << 32) | objid::bigint) = hashtextextended('mcec.run:l1', 0)")]
        assert len(holders) == 1, holders
        connection.execute("select pg_terminate_backend(%s)", (holders[0],))
    out, err = running.communicate(timeout=120)
    assert running.returncode == 2, (out, err)
    message = err.strip()
    assert len(message.splitlines()) == 1 and "lost the run's lock" in message, message
    stopped_at = lines(effects)
    assert len(stopped_at) < 60
    resumed = mcec(["runs", "resume", "l1", "--db", postgres_url], tmp_path, effects, 0)
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["value"] == 60, resumed.stderr
    assert Counter(lines(effects)) == Counter(f"bump {i}" for i in range(60)), "a completed step ran again"
