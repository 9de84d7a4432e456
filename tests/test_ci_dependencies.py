"""The ``test`` extra brings everything the suite needs (issue 18, item 0).

``.ci/run`` proves it for real (a fresh venv, the README's test command); these
checks say *which* package is missing, without building a venv: every
third-party module that the suite or mcec imports, and every package the build
hook tests build with (``pip wheel --no-build-isolation`` uses the project's
``build-system.requires`` from the environment), must come with
``pip install -e ./runtime -e '.[test]'``, that is, be in the dependency closure of
``mcec[test]`` as pyproject.toml declares it (mcec's own requirement of ``agentmonad``
included: the runtime's requirements as runtime/pyproject.toml declares them).
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[str], extras: set[str]) -> set[str]:
    """Canonical names of the distributions ``requirements`` pull in, transitively."""
    seen: set[str] = set()
    pending = [(Requirement(text), extras) for text in requirements]
    while pending:
        requirement, active = pending.pop()
        environments = [{"extra": extra} for extra in active] or [{"extra": ""}]
        if requirement.marker is not None and not any(requirement.marker.evaluate(e) for e in environments):
            continue
        name = _canonical(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        try:
            requires = metadata.distribution(requirement.name).requires or []
        except metadata.PackageNotFoundError:
            continue  # reported by the callers: a needed module then has no distribution
        pending.extend((Requirement(text), set(requirement.extras)) for text in requires)
    return {key for key in seen if "[" not in key}


def _test_closure() -> set[str]:
    project = PYPROJECT["project"]
    return _closure([*project["dependencies"], *project["optional-dependencies"]["test"]], set())


def test_build_requirements_are_in_the_test_extra() -> None:
    """mcec's and the runtime's own (tests/test_distributions.py builds both wheels without isolation)."""
    closure = _test_closure()
    runtime = tomllib.loads((ROOT / "runtime" / "pyproject.toml").read_text(encoding="utf-8"))
    requires = [*PYPROJECT["build-system"]["requires"], *runtime["build-system"]["requires"]]
    missing = [r for r in requires if _canonical(Requirement(r).name) not in closure]
    assert not missing, f"the build-hook tests build with {missing}, which `.[test]` does not install"


def _imported_modules(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found


#: Modules a fixture imports *because* no one has them: tests/check/python_cases/agents/mystery.py
#: derives from a class mcec cannot read (W004), and the checker never runs the fixture.
DELIBERATELY_MISSING = {"not_installed_anywhere"}


def test_every_module_the_suite_imports_comes_with_the_test_extra() -> None:
    local = {"agentmonad"} | {p.name for p in ROOT.iterdir() if p.is_dir()}  # mcec, tests, examples, benchmarks…
    local |= {p.stem for p in (ROOT / "tests").rglob("*.py")} | {p.name for p in (ROOT / "tests").rglob("*") if p.is_dir()}
    # a spec's module compiled by a test, imported by its name (`support_mce`, of examples/support/support.mce)
    local |= {f"{p.stem}_mce" for folder in ("examples", "tests") for p in (ROOT / folder).rglob("*.mce")}
    modules = (_imported_modules(ROOT / "tests") | _imported_modules(ROOT / "mcec")) - local - DELIBERATELY_MISSING
    third_party = sorted(m for m in modules if m not in sys.stdlib_module_names)
    owners = metadata.packages_distributions()
    closure = _test_closure()
    missing = [m for m in third_party if not any(_canonical(d) in closure for d in owners.get(m, []))]
    assert not missing, f"imported but not brought by `pip install -e ./runtime -e '.[test]'`: {missing}"


def test_the_durable_extra_brings_the_postgres_driver_with_its_own_libpq() -> None:
    """``mcec[durable]`` connects to ``--db postgresql://…`` through psycopg (mcec/durable/locks.py
    names the driver): the extra asks for its binary itself (libpq inside the wheel, nothing from
    the system), whatever a dbos release pulls in (README's table of extras)."""
    asked = [Requirement(text) for text in PYPROJECT["project"]["optional-dependencies"]["durable"]]
    assert any(_canonical(r.name) == "psycopg" and "binary" in r.extras for r in asked), asked
    assert "psycopg-binary" in _closure([str(r) for r in asked], set())
