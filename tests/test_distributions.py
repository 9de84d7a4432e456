"""Two distributions from one repository: the runtime installs without the compiler (issue 43, 1).

``agentmonad`` (runtime/pyproject.toml) is what a generated module imports: pydantic and nothing
else, each optional feature an extra. ``mcec`` (pyproject.toml) is the compiler, which requires
the runtime at exactly its own version. These tests build both wheels from the checkout (``pip
wheel --no-build-isolation``, with the hatchling the ``test`` extra brings, as the build-hook tests
do), read what they hold and require, walk the installed requirements of ``agentmonad[…]``, and
run a compiled spec in a fresh virtual environment holding only the runtime's wheel and pydantic.
"""

from __future__ import annotations

import asyncio
import email
import email.message
import importlib.metadata as metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from pgserver import postgres_url  # noqa: F401  (the fixture: a real PostgreSQL server the tests start)

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


# --- Deploying a project (issue 43, 4): the build machine makes the wheels, production runs them ---

#: The example project whose wheel the build hook fills with its compiled spec (greeter/greet.mce).
PROJECT = ROOT / "examples" / "project"
#: What production installs besides the project's wheel: the runtime with the extras it chose.
DEPLOYED_EXTRAS = "durable,llm,mcp"
#: Fast beats for the worker: a test need not wait a second per poll.
FAST = ["--poll-seconds", "0.05", "--heartbeat-seconds", "0.2", "--stale-after", "1.2"]


@dataclass(frozen=True)
class Deployed:
    """A fresh virtual environment holding the project's wheel and the runtime's, and a folder
    outside the repository to run its commands in."""

    python: Path
    folder: Path

    def environment(self) -> dict[str, str]:
        """No ``PYTHONPATH``, no user site, no run database from outside."""
        found = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV")) and k != "MCEC_DB"}
        return found | {"PYTHONNOUSERSITE": "1", "NO_COLOR": "1"}

    def command(self, *args: str) -> list[str]:
        return [str(self.python), "-m", "agentmonad", *args]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``python -m agentmonad ARGS…`` there, in a process of its own."""
        return subprocess.run(self.command(*args), cwd=self.folder, env=self.environment(), capture_output=True,
                              text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def deployed(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    """Build machine: the project's wheel, built (and its spec compiled) by mcec's build hook.
    Production: a fresh venv with that wheel and ``agentmonad[durable,llm,mcp]`` from the runtime's
    wheel, and nothing else of this repository. One for all the tests below (a venv takes a while)."""
    tmp = tmp_path_factory.mktemp("deploy")
    project = tmp / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("*_mce.py", "build", "dist", "__pycache__"))
    built = _build(project, tmp / "dist")
    with zipfile.ZipFile(built) as archive:
        assert {"greeter/greet_mce.py", "greeter/impl.py"} <= set(archive.namelist())
    environment = tmp / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(environment)
    python = environment / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--find-links",
         str(wheels["agentmonad"].parent), str(built), f"agentmonad[{DEPLOYED_EXTRAS}]=={mcec.__version__}"],
        capture_output=True, text=True, timeout=900, check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    folder = tmp / "production"
    folder.mkdir()
    return Deployed(python, folder)


@pytest.mark.slow
def test_production_has_the_runtime_and_none_of_the_compiler(deployed: Deployed) -> None:
    listed = subprocess.run([str(deployed.python), "-m", "pip", "list", "--format", "json"], capture_output=True,
                            text=True, timeout=120, check=True, env=deployed.environment())
    present = {_canonical(entry["name"]) for entry in json.loads(listed.stdout)}
    assert {"agentmonad", "greeter", "pydantic", "dbos", "psycopg-binary", "openai", "jinja2", "mcp"} <= present
    assert not present & COMPILER_ONLY, sorted(present & COMPILER_ONLY)
    # the installed runtime's metadata, read there: the extras chosen require none of the compiler
    script = ("import importlib.metadata as m, json; "
              "print(json.dumps(m.requires('agentmonad'))); print(json.dumps(m.requires('greeter')))")
    done = subprocess.run([str(deployed.python), "-c", script], cwd=deployed.folder, env=deployed.environment(),
                          capture_output=True, text=True, timeout=120, check=True)
    runtime, project = (json.loads(line) for line in done.stdout.splitlines())
    assert [str(r) for r in map(Requirement, runtime) if r.marker is None] == ["pydantic>=2.5"]
    assert not {_canonical(Requirement(text).name) for text in runtime} & COMPILER_ONLY
    assert project == ["agentmonad"]


@pytest.mark.slow
def test_production_runs_a_pipeline_of_the_wheel(deployed: Deployed) -> None:
    done = deployed.run("run", "greeter.greet_mce:hello", "--input", '"  ada "')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ok": True, "value": "Hello, Ada!", "state": {"names": ["Ada"]}}
    failed = deployed.run("run", "greeter.greet_mce:hello", "--input", '"  "')
    assert failed.returncode == 1 and json.loads(failed.stdout)["error"]["type"] == "BlankName", failed.stdout
    # the module is the wheel's, installed in the venv, not this checkout's
    where = subprocess.run([str(deployed.python), "-c", "import greeter.greet_mce as m; print(m.__file__)"],
                           cwd=deployed.folder, env=deployed.environment(), capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(deployed.python.parents[1]), where.stderr


@pytest.mark.slow
def test_production_runs_durably_and_a_run_is_answered_from_another_process(deployed: Deployed,
                                                                            postgres_url: str) -> None:  # noqa: F811
    """A durable run on PostgreSQL (through the ``durable`` extra's psycopg) waits for a person;
    other processes list the question, answer it, and show the finished run."""
    db = postgres_url
    started = deployed.run("run", "greeter.greet_mce:reviewed", "--input", '"ada"', "--durable", "--run-id",
                           "deploy-1", "--db", db)
    assert started.returncode == 0, started.stderr
    waiting = json.loads(started.stdout)
    assert waiting["status"] == "waiting" and waiting["questions"][0]["prompt"] == "Send “Hello, Ada!”? Answer with the greeting to send."
    listed = deployed.run("runs", "waiting", "--db", db)
    assert [q["run_id"] for q in json.loads(listed.stdout) if q["run_id"] == "deploy-1"] == ["deploy-1"], listed.stderr
    answered = deployed.run("runs", "answer", "deploy-1", "review", "--value", '"Hello, dear Ada!"', "--db", db)
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["value"] == "Hello, dear Ada!"
    shown = deployed.run("runs", "show", "deploy-1", "--format", "json", "--db", db)
    assert json.loads(shown.stdout)["status"] == "finished", shown.stderr


#: A user's program in production: it starts a run of ``reviewed`` through the module's typed handle
#: (``start``), or opens it by its id in another process and answers its question typed (``answer``).
HANDLE_PROGRAM = """
import asyncio, sys
from agentmonad.handles import Finished, Waiting
from greeter import greet_mce

async def start(run_id: str, db: str) -> None:
    handle = await greet_mce.Runs.reviewed.start("ada", run_id=run_id, db=db)
    waiting = await handle.result()
    assert isinstance(waiting, Waiting), waiting
    print(list(waiting.asks))

async def answer(run_id: str, db: str) -> None:
    handle = await greet_mce.Runs.reviewed.open(run_id, db=db)
    question = await handle.question(handle.asks.review)
    print(question.payload)
    await question.answer("Hello, dear Ada!")
    ended = await handle.result()
    assert isinstance(ended, Finished), ended
    print(ended.value, list(ended.state.names))

asyncio.run({"start": start, "answer": answer}[sys.argv[1]](sys.argv[2], sys.argv[3]))
"""


@pytest.mark.slow
def test_production_answers_a_run_through_the_typed_handle_from_another_process(deployed: Deployed,
                                                                                 postgres_url: str) -> None:  # noqa: F811
    """Issue 43 item 4: a program in the venv starts a durable run through ``Runs.reviewed.start``; another
    process opens it by its id, reads the question as the ask's type and answers it through the handle."""
    program = deployed.folder / "handles.py"
    program.write_text(HANDLE_PROGRAM)

    def user(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(deployed.python), str(program), *args, "handle-1", postgres_url],
                              cwd=deployed.folder, env=deployed.environment(), capture_output=True, text=True,
                              timeout=300, check=False)

    started = user("start")
    assert started.returncode == 0, started.stderr
    assert started.stdout.splitlines() == ["['review']"]
    answered = user("answer")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.splitlines() == ["Hello, Ada!", "Hello, dear Ada! ['Ada']"]


@pytest.mark.slow
def test_production_runs_a_worker(deployed: Deployed, postgres_url: str) -> None:  # noqa: F811
    """A run enqueued by one process is run by a worker process; SIGTERM stops the worker cleanly."""
    log = deployed.folder / "worker.log"
    with log.open("w") as err:
        worker = subprocess.Popen(deployed.command("worker", "greeter.greet_mce", "--db", postgres_url, "--queue",
                                                   "deploy", *FAST), cwd=deployed.folder, env=deployed.environment(),
                                  stdout=subprocess.DEVNULL, stderr=err)
        try:
            done = deployed.run("run", "greeter.greet_mce:hello", "--input", '"grace"', "--durable", "--queue",
                                "deploy", "--run-id", "deploy-w1", "--wait", "--db", postgres_url)
            assert done.returncode == 0, done.stderr + log.read_text(encoding="utf-8")
            assert json.loads(done.stdout)["value"] == "Hello, Grace!"
        finally:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
            status = worker.wait(60)
    assert status == 0 and "Traceback" not in log.read_text(encoding="utf-8"), log.read_text(encoding="utf-8")


def _text(result: Any) -> str:
    from mcp.types import TextContent

    return "".join(block.text for block in result.content if isinstance(block, TextContent))


@pytest.mark.slow
def test_production_serves_a_pipeline_over_mcp(deployed: Deployed) -> None:
    """``python -m agentmonad serve`` in the venv; the MCP SDK's client (here) lists and calls the
    tools, and answers the ``ask`` of ``reviewed`` as a form elicitation."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import ElicitRequestParams, ElicitResult

    params = StdioServerParameters(command=str(deployed.python),
                                   args=["-m", "agentmonad", "serve", "greeter.greet_mce:hello",
                                         "greeter.greet_mce:reviewed"],
                                   env=deployed.environment(), cwd=str(deployed.folder))
    asked: list[str] = []

    async def elicit(_context: Any, request: ElicitRequestParams) -> ElicitResult:
        asked.append(request.message)
        return ElicitResult(action="accept", content={"answer": "Hello there, Ada!"})

    async def session() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with stdio_client(params) as (read, write), ClientSession(read, write, elicitation_callback=elicit) as client:
            initialized = await client.initialize()
            seen["server"] = (initialized.server_info.name, initialized.server_info.version)
            seen["tools"] = (await client.list_tools()).tools
            seen["ok"] = await client.call_tool("hello", {"value": "  ada "})
            seen["err"] = await client.call_tool("hello", {"value": " "})
            seen["reviewed"] = await client.call_tool("reviewed", {"value": "ada"})
        return seen

    seen = asyncio.run(session())
    assert seen["server"] == ("agentmonad:greeter.greet_mce", mcec.__version__)
    tools = {tool.name: tool for tool in seen["tools"]}
    assert sorted(tools) == ["hello", "reviewed"]
    assert tools["hello"].input_schema["properties"] == {"value": {"type": "string"}}
    assert tools["hello"].description == "Pipeline hello of greet.mce: str -> str ! BlankName."
    assert not seen["ok"].is_error and seen["ok"].structured_content == {"result": "Hello, Ada!"}
    assert seen["err"].is_error and _text(seen["err"]).startswith("BlankName: a name is needed"), _text(seen["err"])
    assert asked == ["Send “Hello, Ada!”? Answer with the greeting to send."]
    assert seen["reviewed"].structured_content == {"result": "Hello there, Ada!"}, _text(seen["reviewed"])
