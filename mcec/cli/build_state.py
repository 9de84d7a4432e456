"""``mcec build``: compile every spec below a folder, skipping what is up to date.

A spec is up to date when its source, the template files its llm steps read
(``file "PATH"``, embedded in its module), the Python files of the modules it
imports, the compiler's version and the output file are all exactly as they
were after the last successful build (mypy included). The record of that is
kept in ``DIR/.mcec/build.json``. Module files are found on the search path
by name, without importing anything.

Two builds of one folder at once take turns: a build holds an exclusive
``fcntl.flock`` on ``DIR/.mcec/build.lock`` from reading the state to saving it
(the second one waits, says so, and then finds the first one's work up to
date). The lock is the kernel's, so a build that dies releases it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcec.version import __version__
from mcec.cli.output import remove_stale_temporaries, replace_atomically

STATE_DIR = Path(".mcec")
STATE_FILE = STATE_DIR / "build.json"
LOCK_FILE = STATE_DIR / "build.lock"


class BuildStateError(Exception):
    """``DIR/.mcec`` cannot hold the build state (a file of that name, no permission, …)."""


def _state_dir(folder: Path) -> Path:
    """``folder/.mcec``, created if needed; :class:`BuildStateError` when that is impossible."""
    state_dir = folder / STATE_DIR
    if state_dir.is_symlink() and not state_dir.exists():
        raise BuildStateError(f"`{state_dir}` is a broken symbolic link; mcec keeps its build state in that folder")
    if state_dir.exists() and not state_dir.is_dir():
        raise BuildStateError(
            f"`{state_dir}` is a file, but mcec keeps its build state in a folder of that name; move the file away"
        )
    try:
        state_dir.mkdir(exist_ok=True)
    except OSError as exc:
        raise BuildStateError(f"cannot create `{state_dir}` for the build state: {exc.strerror or exc}") from exc
    return state_dir


@contextlib.contextmanager
def build_lock(folder: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the exclusive build lock of ``folder`` (``.mcec/build.lock``) for the block.

    ``on_wait`` is called once when another build holds the lock, before waiting
    for it. Raises :class:`BuildStateError` when the lock file cannot be opened.
    """
    _state_dir(folder)
    path = folder / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise BuildStateError(f"cannot open the build lock `{path}`: {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            raise BuildStateError(f"cannot lock `{path}`: {exc.strerror or exc}") from exc
        yield
    finally:
        os.close(fd)  # releases the lock


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Everything a generated module depends on, hashed."""

    source: str
    dependencies: dict[str, str]
    output: str
    #: template file (as the spec names it, relative to its folder) -> sha256 ('' when gone):
    #: the text of each is embedded in the module, so it is an input like the spec itself
    templates: dict[str, str] = field(default_factory=dict)
    compiler: str = __version__

    def as_json(self) -> dict[str, object]:
        """The fingerprint as stored in build.json."""
        return {
            "source": self.source,
            "dependencies": self.dependencies,
            "templates": self.templates,
            "output": self.output,
            "compiler": self.compiler,
        }


def sha256_file(path: Path) -> str:
    """Hex digest of a file's bytes ('' when it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def template_file_hashes(spec: Path, templates: Iterable[str]) -> dict[str, str]:
    """``template -> sha256`` of each template file the spec names (``file "PATH"``), found as
    the checker finds it, relative to the spec's folder; '' when it is gone or not a regular
    file (read as a generated module reads it at import: a FIFO there does not hang the build)."""
    from agentmonad.freshness import file_sha256

    hashes: dict[str, str] = {}
    for name in sorted(set(templates)):
        try:
            hashes[name] = file_sha256(str(spec.parent / name))
        except OSError:
            hashes[name] = ""  # gone: the spec is compiled again, and the checker says why it fails
    return hashes


def module_file(module: str, roots: Iterable[str]) -> Path | None:
    """The ``.py`` file that ``import module`` would load from ``roots``, found without importing."""
    parts = module.split(".")
    for root in roots:
        base = Path(root or ".").joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


#: How the fingerprint names the spec behind a generated module it imports: ``MODULE#spec``.
SPEC_KEY = "#spec"


def spec_file(module: str, roots: Iterable[str]) -> Path | None:
    """The spec behind generated module ``module`` (``a.b.x_mce`` → ``a/b/x.mce``) in ``roots``."""
    parent, _, leaf = module.rpartition(".")
    if not leaf.endswith("_mce"):
        return None
    for root in roots:
        candidate = Path(root or ".").joinpath(*parent.split(".") if parent else [], f"{leaf[: -len('_mce')]}.mce")
        if candidate.is_file():
            return candidate
    return None


def dependency_hashes(modules: Iterable[str]) -> dict[str, str]:
    """``module -> sha256`` of the Python file behind each module the spec imports
    (and of each parent package's ``__init__.py``); '' when not found. A generated module
    of another spec also gives ``MODULE#spec``, the hash of that spec (docs/language.md §11):
    a spec is rebuilt when a spec it uses changes, before its module is even regenerated."""
    roots = [os.getcwd(), *sys.path]
    hashes: dict[str, str] = {}
    for module in sorted(set(modules)):
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name not in hashes:
                found = module_file(name, roots)
                hashes[name] = sha256_file(found) if found is not None else ""
        spec = spec_file(module, roots)
        if spec is not None:
            hashes[module + SPEC_KEY] = sha256_file(spec)
    return hashes


def order_by_uses(specs: Sequence[Path]) -> tuple[list[Path], dict[Path, list[Path]]]:
    """``specs`` with each after the specs it uses that are among them (docs/language.md §11),
    and, for each, the ones it uses. Found by parsing the specs' imports, nothing checked; a
    cycle keeps the order it was found in (checking reports it, MCE015)."""
    from mcec.check.pyindex import PythonIndex, package_root
    from mcec.check.uses import Specs

    by_real = {os.path.realpath(spec): spec for spec in specs}
    readers: dict[Path, Specs] = {}
    uses: dict[Path, list[Path]] = {}
    for spec in specs:
        root = package_root(spec)
        reader = readers.get(root)
        if reader is None:
            reader = readers[root] = Specs(PythonIndex.for_directory(spec=spec))
        found = (by_real.get(os.path.realpath(i.spec)) for i in reader.imports_of(str(spec)))
        uses[spec] = list(dict.fromkeys(f for f in found if f is not None and f != spec))
    order: list[Path] = []
    placed: set[Path] = set()
    for start in specs:  # depth-first, dependencies first, with an explicit stack
        stack: list[tuple[Path, int]] = [(start, 0)]
        visiting: set[Path] = set()
        while stack:
            spec, position = stack.pop()
            if spec in placed:
                continue
            visiting.add(spec)
            if position < len(uses[spec]):
                stack.append((spec, position + 1))
                used = uses[spec][position]
                if used not in placed and used not in visiting:
                    stack.append((used, 0))
                continue
            placed.add(spec)
            order.append(spec)
    return order, uses


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
        if not isinstance(dependencies, dict):
            return None
        return sorted(name for name in dependencies if not name.endswith(SPEC_KEY))

    def recorded_templates(self, spec: Path) -> list[str] | None:
        """The template files ``spec`` read when it was last built (None: never built, or by
        an mcec that did not record them). Like its modules, fixed while its source is."""
        entry = self.entries.get(str(spec))
        templates = entry.get("templates") if entry is not None else None
        if not isinstance(templates, dict):
            return None
        return sorted(str(name) for name in templates)

    def record(self, spec: Path, fingerprint: Fingerprint) -> None:
        """Remember a successful build."""
        self.entries[str(spec)] = fingerprint.as_json()

    def forget(self, spec: Path) -> None:
        """Forget a spec (its build failed)."""
        self.entries.pop(str(spec), None)

    def save(self) -> None:
        """Write build.json atomically, through a temporary of this process only
        (a torn write would only cost a rebuild, but still).

        Raises :class:`BuildStateError` when it cannot be written.
        """
        _state_dir(self.path.parent.parent)
        remove_stale_temporaries(self.path)
        try:
            replace_atomically(self.path, json.dumps({"specs": self.entries}, indent=1, sort_keys=True))
        except OSError as exc:
            raise BuildStateError(f"cannot save the build state `{self.path}`: {exc.strerror or exc}") from exc
