"""Shared test configuration: the ``--update-golden`` switch for golden-file tests, the
session's mypy caches, ``mcec`` run in this process, and the order xdist hands out the files."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files from the current output instead of comparing",
    )


#: The test files that take longest, longest first (the per-file sums of a full run's test times,
#: 2026-12-02, `--junitxml`; benchmarks/README.md "Test suite"; each 15–85 s, against under 15 s for
#: every other file). :func:`pytest_collection_modifyitems` starts them first. A new file that takes
#: more than about 15 s belongs here: a slow file started last sets the tail of the parallel run.
SLOW_FILES = (
    # the race properties of durable runs, 22 examples each on SQLite and Postgres (~137 s, 2026-12-06)
    "tests/durable/test_races.py",
    # issues 43-46 (2026-12-06): many runs, properties over random specs, mypy, subprocesses
    "tests/durable/test_upgrade.py",
    # wheels built, a fresh production venv installed and driven (~56 s in-process, 2026-12-06)
    "tests/test_distributions.py",
    # migrations through `mcec runs upgrade` on SQLite and Postgres (~33 s), the eval's recordings (~24 s)
    # and the support recordings replayed (~12 s): 2026-12-06
    "tests/durable/test_upgrade_migrations.py",
    "tests/eval/test_eval_record.py",
    "tests/replay/test_support_recordings.py",
    "tests/replay/test_replay_property.py",
    "tests/durable/test_upgrade_property.py",
    "tests/eval/test_eval_support.py",
    "tests/replay/test_replay_examples.py",
    "tests/codegen/test_handles_mypy.py",
    "tests/runtime/test_handles.py",
    "tests/durable/test_without_compiler.py",
    "tests/durable/test_waiting_deadlines.py",
    "tests/test_bench_smoke.py",
    "tests/test_exhaustive_dispatch.py",
    "tests/durable/test_workers.py",
    "tests/codegen/test_codegen.py",
    "tests/codegen/test_compiler_inputs.py",
    "tests/durable/test_kill.py",
    "tests/test_bench_smoke_check.py",
    "tests/codegen/test_wide_groups.py",
    "tests/durable/test_elements.py",
    # the console in a real browser (~38 s in-process, 2026-12-06)
    "tests/console/test_console_browser.py",
    "tests/integrations/test_pytest_plugin.py",
    "tests/tools/test_serve.py",
    "tests/check/test_check_agreement.py",
    "tests/runtime/test_mcp_lifecycle.py",
    "tests/cli/test_cli_uses_compile.py",
    "tests/cli/test_template_freshness.py",
    "tests/runtime/test_llm_wire.py",
    "tests/cli/test_cli_uses.py",
    "tests/runtime/test_mcp_hardening.py",
    "tests/durable/test_waiting_runs.py",
    "tests/runtime/test_runtime_faults.py",
    "tests/codegen/test_compiled_timeout_nesting.py",
    "tests/cli/test_cli_check.py",
    "tests/test_mcp_research.py",
    "tests/runtime/test_llm_typing.py",
    "tests/cli/test_cli_compile.py",
    "tests/runtime/test_mcp_tools.py",
    "tests/check/test_check_props.py",
    "tests/codegen/test_differential.py",
    "tests/cli/test_cli_trace.py",
    "tests/cli/test_files_nothing_lost.py",
    "tests/durable/test_journal.py",
    "tests/durable/test_element_resumed.py",
)


#: Folders whose every test is ``slow`` (see :func:`pytest_collection_modifyitems`).
SLOW_FOLDERS = ("tests/durable/",)


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile the checkout's packages once, before the workers start.

    The suite starts several hundred ``mcec`` and ``python`` subprocesses. An editable install
    leaves the checkout without ``.pyc`` files, and with ``PYTHONDONTWRITEBYTECODE`` set (as on the
    CI machines) no process writes them, so every one compiled the ~100 modules of mcec and the
    runtime it imports from source again (about 0.4 s of CPU each). ``compileall`` writes them
    whatever that variable says; a file changed later is compiled afresh as usual (the ``.pyc``
    records its source's mtime).
    """
    if hasattr(config, "workerinput"):  # an xdist worker: the controller did it
        return
    import compileall

    for package in (ROOT / "mcec", ROOT / "runtime"):
        compileall.compile_dir(package, quiet=1)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (pyproject.toml): one worker per core, and one more. A good part of the suite
    waits rather than computes — durable runs polling their database, workers beating, servers
    starting — so with one worker per core the cores sat idle a fifth of a CI run (user + system
    CPU 25:46 over 15:46 of wall on 2 cores). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides
    when set (None: xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the files of :data:`SLOW_FILES` first, in that order, the rest after them as collected
    (each file's tests keep their order).

    The suite runs ``--dist loadfile --no-loadscope-reorder`` (pyproject.toml): xdist hands the
    workers whole files in this order. Its default order, most tests first, started the files
    with few but slow tests (the benchmark smoke runs, the exhaustive-dispatch mypy runs) last,
    and the run waited for one worker to finish them alone; longest first, the short files fill
    the end of both workers' queues.
    """
    rank = {name: index for index, name in enumerate(SLOW_FILES)}

    def key(item: pytest.Item) -> int:
        return rank.get(_path_of(item), len(SLOW_FILES))

    items.sort(key=key)  # stable: the order within a rank (a file, or the rest) is the collected one


def _path_of(item: pytest.Item) -> str:
    return item.path.relative_to(ROOT).as_posix() if item.path.is_relative_to(ROOT) else ""


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark ``slow`` (for the edit-test loop, ``pytest -m "not slow"``, README) every test of
    :data:`SLOW_FILES` and of :data:`SLOW_FOLDERS` (each durable-run test starts DBOS processes,
    most a Postgres server): as each is collected, before ``-m`` reads the marks."""
    path = _path_of(item)
    if path in SLOW_FILES or path.startswith(SLOW_FOLDERS):
        item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _no_run_database_kept_open() -> Iterator[None]:
    """After each test, close the run database the worker keeps open between durable calls
    (agentmonad.durable.runs.engine_for): a test starts with no DBOS launched and no file of an
    earlier test's database open in the process."""
    yield
    kept = sys.modules.get("agentmonad.durable.runs")
    if kept is not None:
        kept.close()


@pytest.fixture(autouse=True)
def _dbos_logs_to_an_open_stream() -> Iterator[None]:
    """After each test, point DBOS's console log handler back at an open stream.

    DBOS makes that handler once per process, on ``sys.stderr`` as it is then: inside a test that
    captures its output (``capsys``, :func:`mcec_in_process`) that is the capture's stream, closed
    when the test ends, and every later launch of DBOS in the worker (which flushes its handlers)
    failed with "I/O operation on closed file".
    """
    yield
    if "dbos" not in logging.Logger.manager.loggerDict:
        return
    for handler in logging.getLogger("dbos").handlers:
        stream = getattr(handler, "stream", None)
        if isinstance(handler, logging.StreamHandler) and stream is not None and getattr(stream, "closed", False):
            handler.stream = sys.stderr  # not setStream, which flushes the closed stream first


@pytest.fixture
def golden(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """``golden(path, actual)``: compare ``actual`` with the file at ``path``
    (or write it under ``--update-golden``)."""
    update = bool(request.config.getoption("--update-golden"))

    def check(path: Path, actual: str) -> None:
        if update or not path.exists():
            if not update:
                pytest.fail(f"golden file {path} is missing; run pytest --update-golden")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            return
        expected = path.read_text(encoding="utf-8")
        assert actual == expected, f"output differs from {path} (pytest --update-golden rewrites it)"

    return check


@pytest.fixture(scope="session")
def screenshots(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where browser tests save their screenshots: the docs' own folder under ``--update-golden``
    (the README's pictures are refreshed on purpose), else a temporary one (a test run leaves
    the checkout as it was)."""
    if request.config.getoption("--update-golden"):
        return Path(__file__).resolve().parents[1] / "docs"
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture(scope="session", autouse=True)
def shared_mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every mypy run of the session (in-process, and in the ``mcec`` and ``pytest``
    subprocesses, which inherit the environment) shares one cache through
    ``MYPY_CACHE_DIR``, which mcec honours as mypy does; the fixture's value is that folder.

    Without it, each test project in a temporary folder starts mypy cold and
    re-reads typeshed, pydantic and agentmonad (tens of seconds under load); the
    checks stay exact, as mypy re-checks any module whose file or path changed (and
    never caches a module with errors). Each xdist worker has its own base temp folder,
    hence its own cache: mypy's cache is not meant for concurrent writers. A cache set
    by the caller is kept.

    A test that runs mypy itself with mcec's checking options (``--strict
    --follow-imports=silent``; the output options do not touch the cache) passes this
    folder as ``--cache-dir``, so it starts warm; a run with other options uses a cache
    of its own (:func:`project_mypy_cache`), as sharing one would make each run rewrite
    the other's modules.
    """
    configured = os.environ.get("MYPY_CACHE_DIR")
    if configured:
        yield Path(configured)
        return
    folder = tmp_path_factory.mktemp("mypy-cache")
    os.environ["MYPY_CACHE_DIR"] = str(folder)
    try:
        yield folder
    finally:
        del os.environ["MYPY_CACHE_DIR"]


@pytest.fixture(scope="session")
def project_mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's mypy cache for runs with the project's own configuration (pyproject.toml:
    ``strict``, imports followed, ``runtime/`` on the path): the runtime's typing snippets, the
    shapes of tests/runtime/control_shapes.py and the exhaustive-dispatch copies of the compiler.

    Those runs used ``--no-incremental``, each re-analysing typeshed and the libraries cold
    (10–20 s each); they assert mypy's findings, not how fast a cold mypy is, and mypy's
    incremental mode reports the same findings (a module with errors is never taken from the
    cache). Its own folder, apart from :func:`shared_mypy_cache`: following imports is an option
    the cache records, so the two option sets would keep invalidating each other's modules (the
    exhaustive-dispatch runs, with no ``--cache-dir``, used to write theirs into the shared one:
    mypy writes its cache even under ``--no-incremental``).
    """
    return tmp_path_factory.mktemp("mypy-cache-project")


#: ``mcec ARGS`` in a folder: its exit status, stdout and stderr (see :func:`mcec_in_process`).
McecRun = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def mcec_in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> McecRun:
    """``run(*args, cwd=FOLDER, env={...})``: ``mcec ARGS`` through :func:`mcec.cli.main` in this
    process, from ``cwd`` with ``NO_COLOR`` and ``env`` set, as a ``CompletedProcess`` (the status
    ``main`` returns, what it wrote to stdout and stderr).

    For tests of what a command writes and says. A new interpreter costs about 1 s of CPU to
    import the compiler, most of a small command's time; what is about the process itself (the
    exit status ``python -m mcec`` gives the shell, output to a real pipe, no traceback from the
    interpreter, a kill) keeps a real subprocess, one per command at least.
    """
    from mcec.cli import main

    def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        with monkeypatch.context() as patch:
            patch.chdir(cwd)
            # `compile`, `build` and `run` put the project's folder on sys.path, as the command's own
            # process would keep it: the test's process must not keep it for the next test
            patch.setattr(sys, "path", list(sys.path))
            for name, value in {"NO_COLOR": "1", **(env or {})}.items():
                patch.setenv(name, value)
            capsys.readouterr()  # what the test printed before is not the command's
            status = main(list(args))
            out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["mcec", *args], status, out, err)

    return run
