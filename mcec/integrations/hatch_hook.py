"""A hatchling build hook: ``pip install`` / ``python -m build`` compile a project's specs.

Registered with mcec (entry point ``hatch: mcec``); a project turns it on in
its pyproject.toml::

    [build-system]
    requires = ["hatchling", "mcec"]
    build-backend = "hatchling.build"

    [tool.hatch.build.hooks.mcec]
    # all optional:
    paths = ["src/app"]        # where to look for *.mce (default: the project root)
    exclude = ["tests/**"]     # glob patterns (relative to the root) to skip
    mypy = true                # run mypy --strict on the generated modules (the default; false skips it)

When a wheel (or an editable install) is built, every spec found is checked
and compiled to ``name_mce.py`` beside it — exactly what ``mcec compile``
writes, atomically, never overwriting a file mcec did not generate — and the
module is added to the wheel even when version control ignores it. A spec
that does not check fails the build with mcec's rendered diagnostics. The
sdist is left alone: it ships the specs, and building a wheel from it
compiles them.

Hidden folders and ``build``, ``dist``, ``node_modules``, ``venv`` folders are
never searched.
"""

from __future__ import annotations

import fnmatch
import sys
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.plugin import hookimpl

__all__ = ["McecBuildHook", "hatch_register_build_hook"]

_SKIPPED_FOLDERS = frozenset({"build", "dist", "node_modules", "venv", "__pycache__", "site-packages"})


class McecBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    """Compiles the project's `.mce` specs into the wheel (see the module docstring)."""

    PLUGIN_NAME = "mcec"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Check and compile every spec; abort the build with diagnostics when one fails."""
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        specs = self._specs(root)
        generated, report, failed = _compile(root, specs, bool(self.config.get("mypy", True)))
        if failed:
            sys.stderr.write(report)
            sys.stderr.flush()
            self.app.abort(f"mcec: {failed} spec{'s' if failed != 1 else ''} failed to compile; the build stops here")
            raise SystemExit(1)  # abort() exits; this line keeps that promise if it ever returns
        if report:
            sys.stderr.write(report)
        artifacts = build_data.setdefault("artifacts", [])
        for module in generated:
            artifacts.append("/" + module.relative_to(root).as_posix())
        if generated:
            self.app.display_info(f"mcec: compiled {len(generated)} spec{'s' if len(generated) != 1 else ''}")

    def _specs(self, root: Path) -> list[Path]:
        paths = self.config.get("paths") or ["."]
        exclude = list(self.config.get("exclude") or [])
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            self.app.abort("mcec: [tool.hatch.build.hooks.mcec] `paths` must be a list of strings")
            raise SystemExit(1)
        found, problems = _find_specs(root, paths, exclude)
        if problems:
            self.app.abort("\n".join(f"mcec: [tool.hatch.build.hooks.mcec] {problem}" for problem in problems))
            raise SystemExit(1)
        return found


def _find_specs(root: Path, paths: list[str], exclude: list[str]) -> tuple[list[Path], list[str]]:
    """The specs below the ``paths`` entries (relative to ``root``), and a problem
    for each entry that is outside the project root or does not exist."""
    real_root = root.resolve()
    found: set[Path] = set()
    problems: list[str] = []
    for raw in paths:
        base = (root / raw).resolve()
        if not base.is_relative_to(real_root):
            problems.append(
                f"`paths` entry {raw!r} is outside the project root ({real_root}): "
                "only specs inside the project can be compiled into its wheel"
            )
            continue
        if not base.exists():
            problems.append(f"`paths` entry {raw!r} does not exist (looked for {base})")
            continue
        candidates = [base] if base.is_file() else sorted(base.rglob("*.mce"))
        for spec in candidates:
            relative = spec.relative_to(real_root)
            if any(part.startswith(".") or part in _SKIPPED_FOLDERS for part in relative.parts[:-1]):
                continue
            if any(fnmatch.fnmatch(relative.as_posix(), pattern) for pattern in exclude):
                continue
            found.add(root / relative)
    return sorted(found), problems


def _compile(root: Path, specs: list[Path], mypy: bool) -> tuple[list[Path], str, int]:
    """Compile ``specs`` (paths under ``root``); returns (modules written, report text, failures)."""
    from mcec.cli.common import load_source
    from mcec.compiler import compile_source
    from mcec.diagnostics import Diagnostic, error
    from mcec.codegen.mypy_check import GeneratedFile, run_mypy
    from mcec.cli.output import OutputError, output_path, write_module
    from mcec.render import render_summary, render_text
    from mcec.span import SourceFile, Span

    diagnostics: list[Diagnostic] = []
    sources: dict[str, SourceFile] = {}
    written: list[tuple[Path, GeneratedFile]] = []
    failed: set[str] = set()
    from mcec.cli.build_state import order_by_uses

    for spec in order_by_uses(specs)[0]:  # a spec after the specs it uses (docs/language.md §11)
        shown = spec.relative_to(root)
        source, problem = load_source(spec)
        if source is not None:
            source = SourceFile(str(shown), source.text)
            sources[source.path] = source
        if problem is not None or source is None:
            diagnostics.extend([problem] if problem is not None else [])
            failed.add(str(shown))
            continue
        result = compile_source(source)
        # a used spec's errors come with each spec that uses it: each is reported once
        diagnostics.extend(d for d in result.diagnostics if d not in diagnostics)
        if result.generated is None:
            failed.add(str(shown))
            continue
        target = output_path(spec, None)
        try:
            write_module(target, result.generated.code)
        except OutputError as exc:
            diagnostics.append(error("MCE006", str(exc), Span.file_start(str(shown))))
            failed.add(str(shown))
            continue
        written.append((target, GeneratedFile(target, str(shown), result.generated.source_map)))
    if mypy and written:
        findings = run_mypy([g for _, g in written], root / ".mcec" / "mypy_cache")
        diagnostics.extend(findings)
        failed.update(d.span.path for d in findings if d.is_error)
    report = ""
    if diagnostics:
        report = render_text(diagnostics, sources, color=False, limit=None) + render_summary(diagnostics, color=False)
    return [target for target, _ in written], report, len(failed)


@hookimpl
def hatch_register_build_hook() -> type[McecBuildHook]:
    """Hatchling's plugin hook: the ``mcec`` build hook class."""
    return McecBuildHook
