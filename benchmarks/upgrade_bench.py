"""Moving waiting runs to a new spec version vs replaying them (issue 44: "moving a waiting run costs
≤ the run's replay (no effect performed)").

Run ``python -m benchmarks.upgrade_bench [--runs 1000]``.

One real durable run of ``tests/durable/upgradebox``'s first version waits at its ``ask`` (one
recorded effect, one waiting record); its rows in DBOS's tables are copied ``--runs`` times under new
run ids into two SQLite run databases (starting 1,000 runs one by one would time DBOS's launches,
not this). Then, side by side:

* **replay**: each run resumed on its own version with no answer (:func:`mcec.durable.resume`):
  its journal replayed, no effect performed, and it waits again — what any process that takes a
  waiting run up pays;
* **move**: ``mcec runs upgrade --all`` to the version changed after the ask
  (:func:`mcec.durable.upgrade.upgrade`): each run classified by a dry replay and moved, under its
  lock, in one transaction;
* **dry run**: the same with ``--dry-run`` (the classification alone).

The figure is wall time for all the runs and per run; the ratio move / replay is the target's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def clone(db: Path, template: str, runs: int) -> list[str]:
    """Copy the rows of the run ``template`` ``runs`` times under new ids (``w0``, ``w1``…)."""
    ids = [f"w{i}" for i in range(runs)]
    with sqlite3.connect(db) as c:
        for table in ("workflow_status", "workflow_input", "operation_outputs"):
            columns = [row[1] for row in c.execute(f"pragma table_info({table})")]
            rows = c.execute(f"select {', '.join(columns)} from {table} where workflow_uuid = ?", (template,)).fetchall()
            for run_id in ids:
                for row in rows:
                    values = [run_id if name == "workflow_uuid" else
                              value.replace(f'"run_id": "{template}"', f'"run_id": "{run_id}"')
                              if name == "inputs" and isinstance(value, str) else value
                              for name, value in zip(columns, row, strict=True)]
                    c.execute(f"insert into {table} ({', '.join(columns)}) values ({', '.join('?' * len(columns))})",
                              values)
        c.execute("delete from workflow_status where workflow_uuid = ?", (template,))
    with sqlite3.connect(db) as c:  # the run database is in WAL mode: all of it in the file, to copy it
        c.execute("pragma wal_checkpoint(TRUNCATE)")
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()

    from mcec import durable
    from mcec.durable.upgrade import upgrade
    from tests.durable.upgradebox import specs

    folder = Path(tempfile.mkdtemp(prefix="upgrade-bench-"))
    os.environ.pop("MCEC_EFFECTS", None)
    spec = folder / "desk.mce"
    spec.write_text(specs.FIRST, encoding="utf-8")
    first = folder / "first.sqlite"
    waiting = durable.run(spec, "settle", json.dumps("A-1:120"), run_id="template", db=str(first))
    assert waiting["status"] == "waiting", waiting
    ids = clone(first, "template", args.runs)
    second = folder / "second.sqlite"
    shutil.copy(first, second)
    new = folder / "after.mce"
    new.write_text(specs.AFTER, encoding="utf-8")

    started = time.perf_counter()
    for run_id in ids:
        again = durable.resume(run_id, db=str(first))
        assert again["status"] == "waiting", again
    replay = time.perf_counter() - started

    started = time.perf_counter()
    dry = upgrade(new, all_runs=True, dry_run=True, db=str(second))
    classified = time.perf_counter() - started
    assert len(dry) == args.runs and all(d.moved for d in dry), dry[:3]

    started = time.perf_counter()
    moved = upgrade(new, all_runs=True, db=str(second))
    move = time.perf_counter() - started
    assert len(moved) == args.runs and all(d.moved for d in moved)
    assert durable.answer(ids[-1], "approve", '{"ok": true}', db=str(second))["value"] == "paid, customer notified"

    n = args.runs
    print(f"{n} waiting runs (SQLite, {folder})")
    print(f"replay (resume, waits again): {replay:8.2f} s  {1000 * replay / n:7.2f} ms/run")
    print(f"dry run (classify):           {classified:8.2f} s  {1000 * classified / n:7.2f} ms/run")
    print(f"move (classify + rewrite):    {move:8.2f} s  {1000 * move / n:7.2f} ms/run")
    print(f"move / replay:                {move / replay:8.3f}")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
