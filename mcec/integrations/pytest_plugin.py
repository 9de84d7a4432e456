"""A pytest plugin: every `.mce` spec of a project checked as a test.

Installed with mcec (entry point ``pytest11: mcec``). Collection rules:

* Off by default, so installing mcec never changes what another project's
  ``pytest`` collects. Turn it on with ``--mce`` or, for the project, the ini
  option ``mce = true`` (``[tool.pytest.ini_options]`` in pyproject.toml).
* A spec named on the command line (``pytest app/flow.mce``) is always
  collected.
* Otherwise a ``*.mce`` file is collected when pytest's own walk reaches it
  (so ``testpaths``, ``--ignore``, ``norecursedirs`` apply as usual) and it
  matches none of the ``mce_ignore`` glob patterns (ini, one per line; matched
  against the path relative to the rootdir, ``**`` allowed), e.g.
  ``mce_ignore = ["tests/cases/**"]`` for intentionally broken specs.

Each spec is one item, ``path/spec.mce::mce``, marked ``mce`` (select with
``-m mce``). It fails when the spec does not check, showing mcec's rendered
diagnostics (no traceback), and when the generated module beside it
(``spec_mce.py``) is stale: generated from another version of the spec or
of a template file it reads (docs/language.md §7), so tests importing it would
run old code. Like ``mcec
check``, the spec is also compiled and ``mypy --strict`` runs on the generated
module unless ``--mce-fast`` (or ``mce_mypy = false``) says not to; it is
written to a temporary folder
(the project's own ``*_mce.py`` files are never touched; mypy resolves the
spec's imports from the working directory, like ``mcec compile``), with mypy's
cache under pytest's cache folder; its findings point at the spec only, never
into that temporary folder.

Recorded runs (docs/language.md §17) are collected by the same rules: a ``*.mcerun.json`` file
(``mcec run … --record FILE``, ``mcec runs export ID -o FILE``) is one item named by its file
name, marked ``mce``, that replays the run offline (``mcec replay FILE``): it fails with mcec's
diagnostic at the spec line when the run asks for an effect the recording does not hold (or
holds as another effect, or with a value of another type), and with the difference when the
Outcome is not the recorded one. Its spec is the recorded path, from the rootdir, else beside
the recording.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

__all__ = ["MceCheckFailed", "MceFile", "MceItem", "RecordingFile", "ReplayItem", "ReplayFailed", "replay_recording"]

#: How a recording's file name ends (``agentmonad.record.RECORDING_SUFFIX``; not imported here:
#: collecting must not import the runtime).
_RECORDING_SUFFIX = ".mcerun.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--mce``, ``--mce-mypy``, ``--mce-fast`` and the ini options ``mce``, ``mce_mypy``, ``mce_ignore``."""
    group = parser.getgroup("mce", "mcec: check .mce specs")
    group.addoption("--mce", action="store_true", default=None, help="collect *.mce specs as tests (ini: mce)")
    group.addoption(
        "--mce-mypy",
        action="store_true",
        default=None,
        help="run mypy --strict on each spec's generated module (the default; ini: mce_mypy)",
    )
    group.addoption(
        "--mce-fast",
        action="store_true",
        default=False,
        help="check specs without running mypy on their generated modules (like `mcec check --fast`)",
    )
    parser.addini("mce", "collect *.mce specs as tests", type="bool", default=False)
    parser.addini("mce_mypy", "run mypy on each spec's generated module (default true)", type="bool", default=True)
    parser.addini("mce_ignore", "glob patterns (relative to the rootdir) of specs not to collect", type="linelist")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``mce`` marker."""
    config.addinivalue_line("markers", "mce: a .mce spec checked by mcec")


def _enabled(config: pytest.Config, name: str) -> bool:
    """The command-line switch when given, else the ini option of the same name."""
    value = config.getoption(f"--{name.replace('_', '-')}")
    if value is not None:
        return bool(value)
    return bool(config.getini(name))


def _ignored(config: pytest.Config, path: Path) -> bool:
    try:
        relative = path.relative_to(config.rootpath).as_posix()
    except ValueError:
        relative = path.as_posix()
    patterns: list[str] = config.getini("mce_ignore")
    for pattern in patterns:
        if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern.replace("**/", "")):
            return True
    return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> MceFile | RecordingFile | None:
    """Collect ``*.mce`` files and ``*.mcerun.json`` recordings according to the rules in the
    module docstring."""
    kind: type[MceFile] | type[RecordingFile]
    if file_path.suffix == ".mce":
        kind = MceFile
    elif file_path.name.endswith(_RECORDING_SUFFIX):
        kind = RecordingFile
    else:
        return None
    config = parent.config
    if parent.session.isinitpath(file_path):
        return kind.from_parent(parent, path=file_path)
    if not _enabled(config, "mce") or _ignored(config, file_path):
        return None
    return kind.from_parent(parent, path=file_path)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Check each spec after the specs it uses (docs/language.md §11): the spec items keep the
    places they were collected in, filled in that order; other tests do not move."""
    places = [index for index, item in enumerate(items) if isinstance(item, MceItem)]
    if len(places) < 2:
        return
    from mcec.cli.build_state import order_by_uses

    specs = [items[index] for index in places]
    by_path = {item.path: item for item in specs}
    if len(by_path) != len(specs):
        return  # a spec collected twice: leave pytest's order alone
    ordered, _ = order_by_uses([item.path for item in specs])
    for index, path in zip(places, ordered):
        items[index] = by_path[path]


class MceFile(pytest.File):
    """A spec file: one :class:`MceItem`."""

    def collect(self) -> list[MceItem]:
        """The single item checking this spec."""
        return [MceItem.from_parent(self, name="mce")]


class MceCheckFailed(Exception):
    """The spec did not check (or mypy rejected its generated module); carries the rendered report."""


class MceItem(pytest.Item):
    """Checks one spec and (unless ``--mce-fast``) type-checks its generated module."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("mce")
        # A spec's item takes no fixtures. Some plugins' hook wrappers only run their item
        # through when it has ``funcargs`` as test functions do (pytest-lsp 1.0's
        # ``pytest_runtest_call`` returns before its ``yield`` otherwise, which fails the item
        # with "did not yield"), so an empty one is there for them.
        self.funcargs: dict[str, Any] = {}

    def runtest(self) -> None:
        """Check the spec; raise :class:`MceCheckFailed` with the rendered diagnostics
        on errors, or with the reason when its generated module is stale."""
        from mcec.cli.common import load_source
        from mcec.compiler import check_source, compile_source
        from mcec.cli.output import output_path, stale_module_beside
        from mcec.render import render_summary, render_text
        from mcec.span import SourceFile

        source, problem = load_source(self.path)
        if problem is not None or source is None:
            sources = {source.path: source} if source is not None else {}
            raise MceCheckFailed(render_text([problem] if problem else [], sources, color=False))
        source = SourceFile(self._shown_path(), source.text)
        mypy = not self.config.getoption("--mce-fast") and _enabled(self.config, "mce_mypy")
        result = compile_source(source) if mypy else check_source(source)
        diagnostics = list(result.diagnostics)
        if result.ok and mypy and result.generated is not None:
            diagnostics.extend(self._mypy(result.generated.code, result.generated.source_map, source.path, result.program))
        if any(d.is_error for d in diagnostics):
            text = render_text(diagnostics, {source.path: source}, color=False, limit=None)
            raise MceCheckFailed(text + render_summary(diagnostics, color=False))
        if result.program is not None:
            stale = stale_module_beside(self.path)
            if stale is not None:
                shown = output_path(self.path, None).name
                if stale.spec_changed:
                    why = "it was generated from another version of this spec"
                else:  # its template files, named as the spec names them (relative to its folder)
                    names = ", ".join(os.path.relpath(path, self.path.parent) for path, _ in stale.templates)
                    why = f"the template{'s' if len(stale.templates) > 1 else ''} {names} changed since it was generated"
                raise MceCheckFailed(
                    f"{source.path}: the generated module beside it, {shown}, is stale: {why}, "
                    f"so code importing it runs {stale.runs()}\n"
                    f"  = help: run `mcec compile {source.path}` (or `mcec build`) to regenerate it"
                )

    def _shown_path(self) -> str:
        """The spec's path as reports show it: relative to the rootdir when inside it."""
        try:
            return self.path.relative_to(self.config.rootpath).as_posix()
        except ValueError:
            return str(self.path)

    def _mypy(self, code: str, source_map: Any, spec: str, program: Any) -> tuple[Any, ...]:
        from mcec.codegen import module_name_for
        from mcec.codegen.mypy_check import GeneratedFile, overlay, run_mypy, used_modules

        cache = getattr(self.config, "cache", None)  # absent under `-p no:cacheprovider`
        cache_dir = cache.mkdir("mcec-mypy") if cache is not None else None
        with tempfile.TemporaryDirectory(prefix="mcec-pytest-") as folder:
            target = Path(folder) / f"{module_name_for(self.path.name)}.py"
            target.write_text(code, encoding="utf-8")
            generated = GeneratedFile(target, spec, source_map, temporary=True)
            # the modules of the specs it uses, as they are now (docs/language.md §11)
            front = overlay(Path(folder), used_modules(program) if program is not None else [])
            roots = [front] if front is not None else []
            if cache_dir is not None:
                return run_mypy([generated], Path(cache_dir), roots)
            return run_mypy([generated], Path(folder) / ".mypy_cache", roots)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """mcec's own report for a spec that does not check; pytest's otherwise."""
        if isinstance(excinfo.value, MceCheckFailed):
            return str(excinfo.value).rstrip("\n")
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, as shown in reports."""
        return self.path, None, f"mce check: {self.path.name}"


class RecordingFile(pytest.File):
    """A recording: one :class:`ReplayItem`, named by the file's name."""

    def collect(self) -> list[ReplayItem]:
        """The single item replaying this recording."""
        return [ReplayItem.from_parent(self, name=self.path.name)]


class ReplayFailed(Exception):
    """A replay did not give the recorded Outcome, or failed at an effect; carries the report."""


class ReplayItem(pytest.Item):
    """Replays one recording offline (``mcec replay FILE``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("mce")
        self.funcargs: dict[str, Any] = {}  # as MceItem's

    def runtest(self) -> None:
        """Replay the recording (:func:`replay_recording`)."""
        replay_recording(self.path, self.config.rootpath)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """mcec's own report for a replay that failed; pytest's otherwise."""
        if isinstance(excinfo.value, ReplayFailed):
            return str(excinfo.value).rstrip("\n")
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the item comes from, as shown in reports."""
        return self.path, None, f"mce replay: {self.path.name}"


def replay_recording(path: Path, rootpath: Path) -> None:
    """Replay the recording at ``path`` offline as ``mcec replay`` does (its spec the recorded path:
    from the working directory, else beside the recording, else from ``rootpath``); raise
    :class:`ReplayFailed` with mcec's diagnostic, or with the difference of the Outcomes."""
    from agentmonad import Defect
    from agentmonad.record import Recording, RecordingError

    from mcec.cli.common import load_source
    from mcec.cli.compile import ensure_importable
    from mcec.compiler import compile_source
    from mcec.render import render_summary, render_text
    from mcec.run.recorded import outcome_diff, replay_diagnostic, replay_run, resolve_spec
    from mcec.run.runner import LoadError, load_module, pipeline_site

    try:
        recording = Recording.read(path)
    except RecordingError as exc:
        raise ReplayFailed(str(exc)) from None
    spec = resolve_spec(recording, path, None)
    if not spec.is_absolute() and not spec.exists():
        spec = rootpath / spec
    ensure_importable(spec)
    source, problem = load_source(spec)
    if problem is not None or source is None:
        raise ReplayFailed(render_text([problem] if problem else [], {}, color=False))
    result = compile_source(source)
    if result.program is None or result.generated is None:
        text = render_text(result.diagnostics, {source.path: source}, color=False, limit=None)
        raise ReplayFailed(text + render_summary(result.diagnostics, color=False))
    try:
        module = load_module(result.program, result.generated)
    except LoadError as exc:
        raise ReplayFailed(render_text([exc.diagnostic], {source.path: source}, color=False)) from None
    replayed = replay_run(module, result.program, recording, interpreted=recording.runner == "interpreted",
                          site=pipeline_site(result.program, recording.pipeline))
    failure = replayed.failure
    if failure is not None:
        assert isinstance(replayed.ran.result, Defect)
        diagnostic = replay_diagnostic(failure, replayed.ran.result, result.program, recording)
        raise ReplayFailed(render_text([diagnostic], {source.path: source}, color=False))
    if not replayed.same:
        raise ReplayFailed(f"the replay's Outcome is not the recorded one:\n"
                           f"{outcome_diff(dict(recording.outcome), replayed.ran.encoded)}")
