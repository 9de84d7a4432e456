"""Shared test configuration: the ``--update-golden`` switch for golden-file tests, and
one mypy cache for the session."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


@pytest.fixture(scope="session", autouse=True)
def shared_mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every mypy run of the session (in-process, and in the ``mcec`` and ``pytest``
    subprocesses, which inherit the environment) shares one cache through
    ``MYPY_CACHE_DIR``, which mcec honours as mypy does.

    Without it, each test project in a temporary folder starts mypy cold and
    re-reads typeshed, pydantic and agentmonad (tens of seconds under load); the
    checks stay exact, as mypy re-checks any module whose file or path changed.
    Each xdist worker has its own base temp folder, hence its own cache: mypy's
    cache is not meant for concurrent writers. A cache set by the caller is kept.
    """
    if os.environ.get("MYPY_CACHE_DIR"):
        yield
        return
    os.environ["MYPY_CACHE_DIR"] = str(tmp_path_factory.mktemp("mypy-cache"))
    try:
        yield
    finally:
        del os.environ["MYPY_CACHE_DIR"]
