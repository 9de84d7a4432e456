"""``mcec run --otel`` and ``mcec worker --otel`` (docs/language.md §14): real ``mcec``
processes export their runs' spans over OTLP/HTTP, as the standard ``OTEL_*`` variables say, to
a receiver the test starts (``otlp_receiver``: a real HTTP server decoding the protobuf
requests); ``--otel`` that cannot start is one line and exit status 2."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import receiver  # noqa: F401  (the fixture)
from otlp_receiver import attributes, endpoint, service_names, spans

from tests.durable.processes import environment, mcec_with

ROOT = Path(__file__).resolve().parents[2]
#: Three async steps, ``first >>= second >>= third``, declared at line 11 (tests/durable/workerbox).
WORK = ROOT / "tests" / "durable" / "workerbox" / "work.mce"


def _otel(server: ThreadingHTTPServer, service: str) -> dict[str, str]:
    """The standard variables: where the collector is, and who the service is."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint(server), "OTEL_SERVICE_NAME": service, "MCEC_PACE": "0"}


def _assert_work_spans(server: ThreadingHTTPServer, count: int) -> None:
    """``count`` runs of ``work`` arrived: each a run span with its three step spans inside,
    each with its ``.mce`` line."""
    arrived = spans(server)
    runs = [s for s in arrived if s.name == "invoke_agent work"]
    assert len(runs) == count, sorted(s.name for s in arrived)
    for run in runs:
        inside = sorted((s for s in arrived if s.parent_span_id == run.span_id), key=lambda s: s.start_time_unix_nano)
        assert [s.name for s in inside] == ["first", "second", "third"]
        for step in inside:
            found = attributes(step.attributes)
            assert found["code.file.path"].string_value == "work.mce"
            assert found["code.line.number"].int_value == 11
            assert found["mcec.outcome"].string_value == "ok"
        assert attributes(run.attributes)["gen_ai.agent.name"].string_value == "work"


def test_mcec_run_otel_exports_the_spans_where_the_otel_variables_say(
    receiver: ThreadingHTTPServer, tmp_path: Path  # noqa: F811
) -> None:
    done = mcec_with(["run", "--otel", str(WORK), "work", "--input", '"a"'], tmp_path, **_otel(receiver, "otel-cli"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"] == "a.first.second.third"
    _assert_work_spans(receiver, 1)
    assert service_names(receiver) == {"otel-cli"}


def test_without_otel_nothing_is_exported(
    receiver: ThreadingHTTPServer, tmp_path: Path, mcec_in_process: Any  # noqa: F811
) -> None:
    done = mcec_in_process("run", str(WORK), "work", "--input", '"a"', cwd=tmp_path, env=_otel(receiver, "otel-cli"))
    assert done.returncode == 0, done.stderr
    assert spans(receiver) == []


def test_a_worker_with_otel_exports_each_run_it_runs(receiver: ThreadingHTTPServer, tmp_path: Path) -> None:  # noqa: F811
    """One worker on SQLite; two runs enqueued by another process and waited for; SIGTERM: the
    worker exports what is left and exits 0."""
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    log = tmp_path / "worker.log"
    fast = ["--poll-seconds", "0.05", "--heartbeat-seconds", "0.2"]
    with log.open("w") as err:
        worker = subprocess.Popen(
            [sys.executable, "-m", "mcec", "worker", "--otel", str(WORK), "--db", db, "--queue", "spans", *fast],
            stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path, env=environment(**_otel(receiver, "otel-worker")),
        )
        try:
            _until(lambda: "serving mcec.spans." in log.read_text() or worker.poll() is not None, log)
            for run_input in ("b", "c"):
                queued = mcec_with(["run", "--durable", "--queue", "spans", "--wait", "--db", db, str(WORK), "work",
                                    "--input", json.dumps(run_input)], tmp_path, MCEC_PACE="0")
                assert queued.returncode == 0, queued.stderr
                assert json.loads(queued.stdout)["value"] == f"{run_input}.first.second.third"
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(60) == 0, log.read_text()
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(30)
    _assert_work_spans(receiver, 2)
    assert service_names(receiver) == {"otel-worker"}


def _until(ready: Any, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for the worker: {log.read_text()}"
        time.sleep(0.02)


def test_otel_without_the_sdk_is_one_line_and_status_2(
    mcec_in_process: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in sys.modules if name.startswith("opentelemetry.sdk")] + ["opentelemetry.sdk"]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed: importing it fails
    for command in (["run", "--otel", str(WORK), "work", "--input", '"a"'], ["worker", "--otel", str(WORK)]):
        done = mcec_in_process(*command, cwd=tmp_path)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == (
            f"mcec {command[0]}: --otel needs the OpenTelemetry SDK (opentelemetry-sdk), not installed: "
            "pip install 'mcec[trace]'\n"
        )


def test_otel_with_an_unknown_exporter_or_protocol_is_one_line_and_status_2(mcec_in_process: Any, tmp_path: Path) -> None:
    run = ["run", "--otel", str(WORK), "work", "--input", '"a"']
    done = mcec_in_process(*run, cwd=tmp_path, env={"OTEL_TRACES_EXPORTER": "zipkin_nowhere"})
    assert (done.returncode, done.stderr) == (
        2, "mcec run: no OpenTelemetry span exporter 'zipkin_nowhere' is installed (OTEL_TRACES_EXPORTER)\n"
    )
    done = mcec_in_process(*run, cwd=tmp_path, env={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert (done.returncode, done.stderr) == (
        2, "mcec run: the OTLP protocol 'http/json' is not one of http/protobuf, grpc\n"
    )
