"""Two distributions from one repository: the runtime installs without the compiler (issue 43, 1).

``agentmonad`` (runtime/pyproject.toml) is what a generated module imports: pydantic and nothing
else, each optional feature an extra. ``mcec`` (pyproject.toml) is the compiler, which requires
the runtime at exactly its own version. These tests build both wheels from the checkout (``pip
wheel --no-build-isolation``, with the hatchling the ``test`` extra brings, as the build-hook tests
do), read what they hold and require, walk the installed requirements of ``agentmonad[…]``, and
run a compiled spec in a fresh virtual environment holding only the runtime's wheel and pydantic.
"""

from __future__ import annotations

import email
import email.message
import importlib.metadata as metadata
import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import mcec

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "runtime"

#: The compiler's own dependencies: none may reach a machine that installs only the runtime.
COMPILER_ONLY = {"lark", "libcst", "black", "mypy", "griffe", "mcec"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _build(project: Path, out: Path) -> Path:
    """The wheel of ``project`` (a folder with a pyproject.toml), built into ``out``."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(project)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The two wheels, built once from the checkout: ``{"agentmonad": …, "mcec": …}``."""
    out = tmp_path_factory.mktemp("wheels")
    return {"agentmonad": _build(RUNTIME, out / "agentmonad"), "mcec": _build(ROOT, out / "mcec")}


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        (path,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(archive.read(path))


def _requirements(meta: email.message.Message) -> list[Requirement]:
    return [Requirement(text) for text in meta.get_all("Requires-Dist") or []]


def test_each_wheel_holds_only_its_own_package(wheels: dict[str, Path]) -> None:
    runtime, compiler = _names(wheels["agentmonad"]), _names(wheels["mcec"])
    assert {name.split("/")[0] for name in runtime} == {"agentmonad", "agentmonad-0.1.0.dist-info"}
    assert {"agentmonad/py.typed", "agentmonad/__init__.py", "agentmonad/compiled.py", "agentmonad/spec.py"} <= runtime
    assert {"agentmonad/durable/__init__.py", "agentmonad/llm/__init__.py", "agentmonad/mcp/__init__.py"} <= runtime
    assert {name.split("/")[0] for name in compiler} == {"mcec", f"mcec-{mcec.__version__}.dist-info"}
    assert {"mcec/py.typed", "mcec/cli/__init__.py", "mcec/grammar/mce.lark", "mcec/docs/language.md"} <= compiler
    assert "mcec/integrations/hatch_hook.py" in compiler and "mcec/integrations/pytest_plugin.py" in compiler
    assert not [name for name in runtime | compiler if "__pycache__" in name or name.endswith(".pyc")]
    # every module of the runtime's source is in its wheel
    sources = {path.relative_to(RUNTIME).as_posix() for path in (RUNTIME / "agentmonad").rglob("*.py")}
    assert sources <= runtime


def test_the_compiler_requires_the_runtime_at_its_own_version(wheels: dict[str, Path]) -> None:
    runtime, compiler = _metadata(wheels["agentmonad"]), _metadata(wheels["mcec"])
    assert runtime["Name"] == "agentmonad" and compiler["Name"] == "mcec"
    assert runtime["Version"] == compiler["Version"] == mcec.__version__ == metadata.version("agentmonad")
    on_runtime = [r for r in _requirements(compiler) if _canonical(r.name) == "agentmonad"]
    plain = [r for r in on_runtime if r.marker is None]
    assert [(str(r.specifier), r.extras) for r in plain] == [(f"=={mcec.__version__}", set())]
    # each extra of the runtime comes with mcec's extra of the same name, at the same version
    extras = set(runtime.get_all("Provides-Extra") or [])
    assert extras == {"llm", "mcp", "durable", "trace"}
    assert extras <= set(compiler.get_all("Provides-Extra") or [])
    for extra in extras:
        pulled = [r for r in on_runtime if r.marker is not None and r.marker.evaluate({"extra": extra})]
        assert [(str(r.specifier), r.extras) for r in pulled] == [(f"=={mcec.__version__}", {extra})], extra
    # the build hook and the pytest plugin stay with the compiler
    with zipfile.ZipFile(wheels["mcec"]) as archive:
        points = archive.read(f"mcec-{mcec.__version__}.dist-info/entry_points.txt").decode("utf-8")
    assert "mcec.integrations.hatch_hook" in points and "mcec.integrations.pytest_plugin" in points
    assert ".dist-info/entry_points.txt" not in "".join(_names(wheels["agentmonad"]))


def test_the_runtime_requires_pydantic_only(wheels: dict[str, Path]) -> None:
    """Without extras: pydantic, in the built wheel and in the installed distribution alike."""
    built = _requirements(_metadata(wheels["agentmonad"]))
    installed = [Requirement(text) for text in metadata.requires("agentmonad") or []]
    assert sorted(map(str, built)) == sorted(map(str, installed))
    assert [_canonical(r.name) for r in built if r.marker is None] == ["pydantic"]


def _closure(name: str, extras: set[str]) -> set[str]:
    """Canonical names of the installed distributions ``name[extras]`` pulls in, transitively,
    each requirement's markers evaluated here with the extras it was asked with."""
    seen: set[str] = set()
    pending = [Requirement(f"{name}[{','.join(sorted(extras))}]" if extras else name)]
    while pending:
        requirement = pending.pop()
        key = f"{_canonical(requirement.name)}[{','.join(sorted(requirement.extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            pytest.fail(f"{requirement.name} (pulled in by {name}{sorted(extras)}) is not installed: the test extra must bring it")
        environments = [{"extra": extra} for extra in requirement.extras] or [{"extra": ""}]
        for text in requires:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate(e) for e in environments):
                pending.append(needed)
    return {key.split("[")[0] for key in seen}


def test_no_extra_of_the_runtime_pulls_in_the_compiler() -> None:
    extras = set(metadata.metadata("agentmonad").get_all("Provides-Extra") or [])
    assert {"durable", "llm"} <= extras
    for chosen in ({"durable", "llm"}, extras, *({extra} for extra in extras)):
        pulled = _closure("agentmonad", chosen)
        assert "pydantic" in pulled
        assert not pulled & COMPILER_ONLY, (sorted(chosen), sorted(pulled & COMPILER_ONLY))
    assert {"dbos", "psycopg-binary", "openai", "jinja2"} <= _closure("agentmonad", {"durable", "llm"})
    # the same walk from the compiler finds the compiler's dependencies (and the runtime)
    assert COMPILER_ONLY - {"mcec"} | {"agentmonad"} <= _closure("mcec", set())


CASES = ROOT / "tests" / "codegen" / "cases"
#: A spec whose groups (par with catch, each with a limit, local, orelse, a nested pipeline) run
#: on the runtime: tests/codegen/cases/groups.mce over tests/toolbox.py (agentmonad and stdlib only).
SPEC = CASES / "groups.mce"
#: Specs with prompt templates (``llm`` steps; ``ask`` with a template): Jinja2, the ``llm`` extra.
TEMPLATED = {"llm": "flowbox.py", "ask": "deskbox.py"}

#: Runs the compiled module and prints its Outcomes, the runtime's file and which of the compiler's
#: modules this interpreter could import.
SCRIPT = """
import asyncio, importlib.util, json, sys
import agentmonad, agentmonad.compiled, agentmonad.human, agentmonad.spec
from groups_mce import main, SPEC_INFO
from toolbox import TState
runs = [asyncio.run(main(TState(), n)) for n in (4, 3, -2)]
print(json.dumps({
    "runs": [repr(outcome) for outcome in runs],
    "pipelines": [p.name for p in SPEC_INFO.pipelines],
    "agentmonad": agentmonad.__file__,
    "importable": sorted(m for m in sys.argv[1:] if importlib.util.find_spec(m) is not None),
}))
"""


@dataclass(frozen=True)
class Ran:
    """What :data:`SCRIPT` printed."""

    runs: list[str]
    pipelines: list[str]
    agentmonad: str
    importable: list[str]


def _environment(folder: Path) -> dict[str, str]:
    """This process's environment with ``folder`` as the only ``PYTHONPATH`` and no user site."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return environment | {"PYTHONPATH": str(folder), "PYTHONNOUSERSITE": "1"}


def _run_compiled(python: Path | str, folder: Path) -> Ran:
    done = subprocess.run(
        [str(python), "-c", SCRIPT, *sorted(COMPILER_ONLY)], cwd=folder, env=_environment(folder), capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return Ran(**json.loads(done.stdout))


@pytest.mark.slow
def test_a_compiled_module_runs_on_the_runtime_wheel_alone(wheels: dict[str, Path], tmp_path: Path) -> None:
    """A fresh venv (no system site-packages) with the agentmonad wheel and pydantic only: the
    module mcec compiled here imports and runs there as it does beside the compiler."""
    folder = tmp_path / "app"
    folder.mkdir()
    specs = [SPEC.name, *(f"{name}.mce" for name in TEMPLATED)]
    for name in [*specs, "toolbox.py", *TEMPLATED.values()]:
        shutil.copy((CASES if name.endswith(".mce") else ROOT / "tests") / name, folder / name)
    out = tmp_path / "generated"
    compiled = subprocess.run(
        [sys.executable, "-m", "mcec", "compile", "-q", "--no-mypy", "-o", str(out), *specs], cwd=folder, capture_output=True, text=True, timeout=300, check=False
    )
    assert compiled.returncode == 0, compiled.stderr
    for spec in specs:
        shutil.copy(out / spec.replace(".mce", "_mce.py"), folder / spec.replace(".mce", "_mce.py"))

    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(environment)
    python = environment / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheels["agentmonad"])],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True, text=True, timeout=120, check=True)
    present = {_canonical(entry["name"]) for entry in json.loads(listed.stdout)}
    assert "agentmonad" in present and "pydantic" in present and not present & COMPILER_ONLY

    alone = _run_compiled(python, folder)
    beside = _run_compiled(sys.executable, folder)  # the same module beside the compiler
    assert alone.importable == [] and beside.importable == sorted(COMPILER_ONLY)
    assert Path(alone.agentmonad).is_relative_to(environment) and not Path(beside.agentmonad).is_relative_to(environment)
    assert alone.runs == beside.runs and alone.pipelines == beside.pipelines == ["half", "main"]
    assert [run.split("(")[0] for run in alone.runs] == ["Ok", "Ok", "Err"] and "error=Neg(-2)" in alone.runs[2]

    # a module with prompt templates says which extra it needs when it is imported without Jinja2
    for name in TEMPLATED:
        done = subprocess.run(
            [str(python), "-c", f"import {name}_mce"], cwd=folder, env=_environment(folder), capture_output=True, text=True, timeout=120, check=False
        )
        last = done.stderr.strip().splitlines()[-1]
        assert done.returncode != 0 and last.startswith("ImportError: prompt templates"), done.stderr
        assert last.endswith("pip install 'agentmonad[llm]'"), last
