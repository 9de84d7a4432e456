"""The kill-point guarantee (docs/language.md §13), in subprocesses: a durable run killed with
SIGKILL at any point and resumed gives the same Outcome (value, error, state) as the same run
uninterrupted, and every effect that completed before the kill ran once (only the effects in
flight at the kill may run twice). The steps append a line per call to a file; the kill point
is drawn by hypothesis. The processes are forked from a warmed-up parent (:class:`Zygote`), so
that 22 examples per database fit in CI."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from tests.durable.processes import Zygote, fresh_mcec_with, lines, until

FLOW = Path(__file__).parent / "flowbox" / "flow.mce"
#: Effects that can be in flight at once in flow.mce: two `each` elements, or the two `par` branches.
IN_FLIGHT = 2
#: The pause of every step (MCEC_PACE), so that a kill lands inside the run.
PACE = 0.03


#: Examples per database (``MCEC_KILL_EXAMPLES`` to change it): 22 finds a kill point that breaks
#: one run in ten with a probability of 90 %.
EXAMPLES = int(os.environ.get("MCEC_KILL_EXAMPLES", "22"))
#: When the kill comes after the run's first effect: 0 to 0.6 s by the millisecond, spread over
#: the run (drawn floats crowd near zero).
KILL_AFTER = st.integers(0, 600).map(lambda ms: ms / 1000)


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """The module's ``mcec`` processes start warm (flow.mce compiled once): each is still a process
    of its own, killed by SIGKILL."""
    forked = Zygote([FLOW], tmp_path_factory.mktemp("zygote"))
    yield forked
    forked.close()


def _outcome(stdout: str) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(stdout)
    payload.pop("run_id", None)
    return payload


def _reference(zygote: Zygote, tmp: Path, db: str) -> tuple[dict[str, Any], list[str]]:
    """The same durable run, uninterrupted."""
    effects = tmp / "reference.txt"
    done = zygote.run(["run", str(FLOW), "flow", "--input", '"a,b,c"', "--durable", "--db", db], tmp,
                      MCEC_EFFECTS=str(effects), MCEC_PACE=str(PACE))
    assert done.returncode == 0, done.stderr
    return _outcome(done.stdout), lines(effects)


#: The uninterrupted run's outcome and effects, per database kind (made once).
_REFERENCES: dict[str, dict[str, Any]] = {}


def _check_resumed(zygote: Zygote, tmp: Path, db: str, kill_after: float) -> None:
    _REFERENCE = _REFERENCES.setdefault(db.split(":", 1)[0], {})
    if not _REFERENCE:
        _REFERENCE["outcome"], _REFERENCE["lines"] = _reference(zygote, tmp, db)
    run_id = f"kill-{time.monotonic_ns()}"
    effects = tmp / f"{run_id}.txt"
    paced = {"MCEC_EFFECTS": str(effects), "MCEC_PACE": str(PACE)}
    args = ["run", str(FLOW), "flow", "--input", '"a,b,c"', "--durable", "--run-id", run_id, "--db", db]
    process = zygote.start(args, tmp, **paced)
    # the kill is timed from the first effect (the process's start-up is not the run)
    until(lambda: effects.exists() or process.poll() is not None, "the run's first effect")
    time.sleep(kill_after)
    process.kill()
    process.wait()
    before = lines(effects)
    resumed = zygote.run(["runs", "resume", run_id, "--db", db], tmp, **paced)
    assert resumed.returncode == 0, resumed.stderr
    assert _outcome(resumed.stdout) == _REFERENCE["outcome"]
    after = Counter(lines(effects))
    reference = Counter(_REFERENCE["lines"])
    assert after - reference == Counter() or sum((after - reference).values()) <= IN_FLIGHT, (before, after)
    assert reference - after == Counter(), "an effect of the uninterrupted run never ran"
    if _REFERENCE.setdefault("finished_checked", False):
        return
    _REFERENCE["finished_checked"] = True
    # resuming a finished run prints its recorded outcome and runs nothing (checked once per database),
    # in a process started from nothing, as a user's is
    again = fresh_mcec_with(["run", str(FLOW), "flow", "--input", '"a,b,c"', "--durable", "--run-id", run_id,
                             "--db", db], tmp, MCEC_EFFECTS=str(effects), MCEC_PACE=str(PACE))
    assert again.returncode == 0 and _outcome(again.stdout) == _REFERENCE["outcome"]
    assert Counter(lines(effects)) == after


@settings(max_examples=EXAMPLES, deadline=None, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kill_after=KILL_AFTER)
def test_a_run_killed_anywhere_resumes_to_the_same_outcome_on_sqlite(
    zygote: Zygote, tmp_path: Path, kill_after: float
) -> None:
    _check_resumed(zygote, tmp_path, f"sqlite:///{tmp_path / 'runs.sqlite'}", kill_after)


@settings(max_examples=EXAMPLES, deadline=None, phases=(Phase.explicit, Phase.generate),
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kill_after=KILL_AFTER)
def test_a_run_killed_anywhere_resumes_to_the_same_outcome_on_postgres(
    zygote: Zygote, tmp_path: Path, postgres_url: str, kill_after: float  # noqa: F811  (the fixture)
) -> None:
    _check_resumed(zygote, tmp_path, postgres_url, kill_after)
