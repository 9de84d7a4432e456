"""An ``each`` element a worker ran, cancelled with its run, resumes from its last recorded effect
when the run is resumed (issue 42, 9: it came back as ``RUN/ID#2`` with an empty journal, and its
completed, recorded effects ran again); an element that cannot start where it runs stops its run
resumable, as a run that cannot start does (issue 42, 4). On a real PostgreSQL server, the run's
process listening to its element queues itself (``elements=True``), as a worker does."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

from tests.durable.processes import environment, lines, mcec_with

SPEC = Path(__file__).parent / "elementbox" / "elements.mce"


def _started(tmp: Path, db: str, pipeline: str, input_json: str, run_id: str,
             variables: dict[str, str]) -> subprocess.Popen[str]:
    """A process running ``pipeline`` durably as ``run_id``, taking its run's elements from their
    queues itself (``elements=True``), as a worker does."""
    script = (f"from mcec import durable; durable.run({str(SPEC)!r}, {pipeline!r}, {input_json!r}, db={db!r}, "
              f"run_id={run_id!r}, elements=True)")
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=environment(**variables), cwd=tmp)


def _until_ran(effects: Path, expected: list[str], process: subprocess.Popen[str], what: str) -> None:
    """Wait until the steps did ``expected``, in any order (the test fails if ``process`` ends first,
    or two minutes pass)."""
    deadline = time.monotonic() + 120
    while sorted(_ran(effects)) != sorted(expected):
        assert process.poll() is None and time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def _ask_to_stop(db: str, run_id: str) -> None:
    """What `runs cancel` writes first."""
    from agentmonad.durable.dbos import Engine

    engine = Engine(db)
    try:
        engine.ask_to_stop(run_id)
    finally:
        engine.close()


def _status(tmp: Path, db: str, run_id: str) -> str:
    """The run's status as `runs list` shows it."""
    listed = json.loads(mcec_with(["runs", "list", "--format", "json", "--db", db], tmp).stdout)
    return str({r["run_id"]: r["status"] for r in listed}[run_id])


def test_a_cancelled_element_resumes_from_its_last_recorded_effect(
    tmp_path: Path, postgres_url: str  # noqa: F811  (the fixture)
) -> None:
    effects, gates = tmp_path / "effects.txt", tmp_path / "gates"
    gates.mkdir()
    variables = {"MCEC_EFFECTS": str(effects), "MCEC_GATES": str(gates), "MCEC_PACE": "0"}
    run_id = f"gated-{time.monotonic_ns()}"
    process = _started(tmp_path, postgres_url, "twostep", "[1, 2, 3]", run_id, variables)
    # each(limit=2): elements 0 and 1 did `work` (recorded) and wait in `gated`
    _until_ran(effects, ["work 1", "work 2"], process, "elements 0 and 1 at their gates")
    _ask_to_stop(postgres_url, run_id)
    (gates / "10").touch()  # element 0 ends; the run stops before handing out element 2, cancelling element 1
    _, err = process.communicate(timeout=120)
    assert sorted(_ran(effects)) == ["gated 10", "work 1", "work 2"], err
    assert _status(tmp_path, postgres_url, run_id) == "cancelled", err

    for n in (20, 30):
        (gates / str(n)).touch()
    resumed = mcec_with(["runs", "resume", run_id, "--db", postgres_url], tmp_path, **variables)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["value"] == ["#10", "#20", "#30"]
    ran = Counter(_ran(effects))
    # element 1's `work` completed and was recorded before the cancel: it is replayed, not run again
    assert ran == Counter(["work 1", "work 2", "work 3", "gated 10", "gated 20", "gated 30"]), ran


def test_a_cancel_of_the_run_stops_its_element_before_the_elements_next_effect(
    tmp_path: Path, postgres_url: str  # noqa: F811  (the fixture)
) -> None:
    """Asked to stop while its only element holds inside its first effect, the run stops the element
    before the element's next effect (it went on to it and the run finished, cancel or not), and is
    ``cancelled``; resumed, the element replays what it recorded and runs the rest."""
    from agentmonad.durable.dbos import STOP_POLL_SECONDS

    effects, gates = tmp_path / "effects.txt", tmp_path / "gates"
    gates.mkdir()
    variables = {"MCEC_EFFECTS": str(effects), "MCEC_GATES": str(gates), "MCEC_PACE": "0"}
    run_id = f"holding-{time.monotonic_ns()}"
    process = _started(tmp_path, postgres_url, "holding", "[7]", run_id, variables)
    _until_ran(effects, ["hold 7"], process, "the element at its gate")
    _ask_to_stop(postgres_url, run_id)
    time.sleep(STOP_POLL_SECONDS)  # no process reads "not asked" from before the ask any more
    (gates / "7").touch()
    _, err = process.communicate(timeout=120)
    assert _ran(effects) == ["hold 7"], err
    assert _status(tmp_path, postgres_url, run_id) == "cancelled", err
    resumed = mcec_with(["runs", "resume", run_id, "--db", postgres_url], tmp_path, **variables)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["value"] == [70]
    assert _ran(effects) == ["hold 7", "work 7"]


def test_an_element_that_cannot_start_stops_its_run_resumable(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811  (the fixture)
) -> None:
    """Where an element runs, its spec version cannot be had (the loader of that process fails for
    an element's workflow): the element stops itself resumable, is sent on once more, and stops
    again, so the run stops with its reason (`stopped`, nothing lost), not with a defect. With the
    cause gone, `runs resume` takes the elements up and the run gives the in-process Outcome."""
    from agentmonad.durable import version as versions
    from agentmonad.durable.dbos import ELEMENT_WORKFLOW, Engine, workflow_id
    from agentmonad.durable.errors import DurableError
    from agentmonad.durable.request import RunRequest
    from mcec import durable

    monkeypatch.setenv("MCEC_PACE", "0")
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    real = versions.loader()

    class NoElementsHere:
        """The loader of a process where an element's version cannot be had (a run's loads)."""

        def load(self, request: RunRequest) -> versions.SpecVersion:
            if "/" in (workflow_id() or ""):  # an element's workflow: its id is RUN/IDENTITY
                raise versions.VersionError("its module does not import here")
            return real.load(request)

        def changed(self, request: RunRequest, version: versions.SpecVersion | None) -> str | None:
            return real.changed(request, version)

    run_id = f"unloadable-{time.monotonic_ns()}"
    inline = durable.run(SPEC, "stateless", "[1, 2, 3]", db=postgres_url, run_id=f"{run_id}-inline")
    versions.set_loader(NoElementsHere())
    try:
        with pytest.raises(DurableError, match=f"run {run_id} stopped: element {run_id}/.*its module does not "
                                               "import here .*nothing of it is lost"):
            durable.run(SPEC, "stateless", "[1, 2, 3]", db=postgres_url, run_id=run_id, elements=True)
    finally:
        versions.set_loader(real)
    assert {r.run_id: r.status for r in durable.list_runs(db=postgres_url)}[run_id] == "stopped"
    engine = Engine(postgres_url)
    try:
        elements = engine.client.list_workflows(name=ELEMENT_WORKFLOW, workflow_id_prefix=f"{run_id}/")
        assert elements and {str(e.status) for e in elements} == {"CANCELLED"}
        assert {engine.steps(e.workflow_id)[-1]["kind"] for e in elements} == {"stopped"}
    finally:
        engine.close()
    again = durable.resume(run_id, db=postgres_url)
    assert {**again, "run_id": None} == {**inline, "run_id": None}


def _ran(effects: Path) -> list[str]:
    """What the steps did, without the pid of the process they ran in."""
    return [line.split(" ", 1)[1] for line in lines(effects)]
