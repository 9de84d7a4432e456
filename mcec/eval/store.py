"""The finished runs of an eval, in SQLite beside its report: what makes a killed eval resume.

One row per finished run (a case's repeat), keyed by ``(case, repeat, fingerprint)``: the
fingerprint covers what makes a stored run stand for a run today — the specs (their
``mcec.fingerprint`` digest), the pipeline, the evaluators, the model options, the state and
the case as written (see :func:`mcec.eval.runner.eval_fingerprint`). A row is written (and
committed) as soon as the run and its evaluators are done, so a killed eval loses only the
runs in flight. The row holds pydantic-evals' ``ReportCase`` (or ``ReportCaseFailure``) as
JSON, read back with the pipeline's types.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic_evals.reporting import ReportCase, ReportCaseFailure

__all__ = ["ResultStore", "StoredRun"]

#: A finished run as the report holds it.
StoredRun = ReportCase[Any, Any, Any] | ReportCaseFailure[Any, Any, Any]

_SCHEMA = """
create table if not exists runs (
    case_name text not null,
    repeat integer not null,
    fingerprint text not null,
    failed integer not null,
    body text not null,
    primary key (case_name, repeat, fingerprint)
)
"""


class ResultStore:
    """The SQLite file of an eval's finished runs (created when missing)."""

    def __init__(self, path: Path, inputs_type: Any, output_type: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path)
        self._db.execute("pragma journal_mode=wal")
        # a commit survives the process being killed (what resuming needs); an OS crash may lose the
        # last few, which are then run again
        self._db.execute("pragma synchronous=normal")
        self._db.execute(_SCHEMA)
        self._db.commit()
        self._case: TypeAdapter[ReportCase[Any, Any, Any]] = TypeAdapter(ReportCase[inputs_type, output_type, Any])
        self._failure: TypeAdapter[ReportCaseFailure[Any, Any, Any]] = TypeAdapter(
            ReportCaseFailure[inputs_type, output_type, Any]
        )

    def load(self, case_name: str, repeat: int, fingerprint: str) -> StoredRun | None:
        """The stored run of ``case_name``'s ``repeat`` (1-based) under ``fingerprint``, if any."""
        row = self._db.execute(
            "select failed, body from runs where case_name = ? and repeat = ? and fingerprint = ?",
            (case_name, repeat, fingerprint),
        ).fetchone()
        if row is None:
            return None
        failed, body = row
        return self._failure.validate_json(body) if failed else self._case.validate_json(body)

    def save(self, case_name: str, repeat: int, fingerprint: str, run: StoredRun) -> None:
        """Store a finished run (committed at once)."""
        failed = isinstance(run, ReportCaseFailure)
        body = self._failure.dump_json(run) if isinstance(run, ReportCaseFailure) else self._case.dump_json(run)
        self._db.execute(
            "insert or replace into runs (case_name, repeat, fingerprint, failed, body) values (?, ?, ?, ?, ?)",
            (case_name, repeat, fingerprint, int(failed), body.decode()),
        )
        self._db.commit()

    def forget(self) -> None:
        """Drop every stored run (``mcec eval --fresh``)."""
        self._db.execute("delete from runs")
        self._db.commit()

    def close(self) -> None:
        """Close the file."""
        self._db.close()
