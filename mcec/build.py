"""``mcec build``: compile every spec below a folder, skipping what is up to date.

A spec is up to date when its source, the Python files of the modules it
imports, the compiler's version and the output file are all exactly as they
were after the last successful build (mypy included). The record of that is
kept in ``DIR/.mcec/build.json``. Module files are found on the search path
by name, without importing anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mcec import __version__

STATE_FILE = Path(".mcec") / "build.json"


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Everything a generated module depends on, hashed."""

    source: str
    dependencies: dict[str, str]
    output: str
    compiler: str = __version__

    def as_json(self) -> dict[str, object]:
        """The fingerprint as stored in build.json."""
        return {
            "source": self.source,
            "dependencies": self.dependencies,
            "output": self.output,
            "compiler": self.compiler,
        }


def sha256_file(path: Path) -> str:
    """Hex digest of a file's bytes ('' when it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def module_file(module: str, roots: Iterable[str]) -> Path | None:
    """The ``.py`` file that ``import module`` would load from ``roots``, found without importing."""
    parts = module.split(".")
    for root in roots:
        base = Path(root or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def dependency_hashes(modules: Iterable[str]) -> dict[str, str]:
    """``module -> sha256`` of the Python file behind each module the spec imports
    (and of each parent package's ``__init__.py``); '' when not found."""
    roots = [os.getcwd(), *sys.path]
    hashes: dict[str, str] = {}
    for module in sorted(set(modules)):
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name not in hashes:
                found = module_file(name, roots)
                hashes[name] = sha256_file(found) if found is not None else ""
    return hashes


class BuildState:
    """The fingerprints of the last successful build, loaded from and saved to build.json."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / STATE_FILE
        self.entries: dict[str, dict[str, object]] = {}
        try:
            loaded = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(loaded, dict) and isinstance(loaded.get("specs"), dict):
                self.entries = loaded["specs"]
        except (OSError, ValueError):
            self.entries = {}  # no state or unreadable state: everything is rebuilt

    def is_current(self, spec: Path, fingerprint: Fingerprint) -> bool:
        """True when ``spec`` was built successfully with exactly this fingerprint."""
        return self.entries.get(str(spec)) == fingerprint.as_json()

    def recorded_modules(self, spec: Path) -> list[str] | None:
        """The modules ``spec`` imported when it was last built (None: never built).

        The spec's own hash is part of the fingerprint, so while the source is
        unchanged its imports are these; no need to parse it again to find out.
        """
        entry = self.entries.get(str(spec))
        dependencies = entry.get("dependencies") if entry is not None else None
        return sorted(dependencies) if isinstance(dependencies, dict) else None

    def record(self, spec: Path, fingerprint: Fingerprint) -> None:
        """Remember a successful build."""
        self.entries[str(spec)] = fingerprint.as_json()

    def forget(self, spec: Path) -> None:
        """Forget a spec (its build failed)."""
        self.entries.pop(str(spec), None)

    def save(self) -> None:
        """Write build.json atomically (a torn write would only cost a rebuild, but still)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"specs": self.entries}, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(temporary, self.path)
