"""Run mypy on generated modules and report its findings at the `.mce` spans.

mcec settles at build time what it can decide alone, the user's classes and
implementations included (docs/language.md §4); what it could not read is left
to mypy, run with ``--strict`` on the generated module. Each finding becomes an
MCE100 diagnostic at the spec construct that produced the offending line (via
the source map), said in the spec's terms (:func:`in_spec_terms`); mypy's own
words, with the generated line, are kept as the diagnostic's note (shown with
``--verbose`` and in the JSON output).

mypy runs with a cache folder, so rebuilding unchanged modules is fast:
``.mcec/mypy_cache`` under the working directory (the project root for the build
hook), or the folder ``MYPY_CACHE_DIR`` names when it is set, as for mypy itself,
so CI jobs and test sessions can share one warm cache. Errors in the user's own
modules are not reported (``--follow-imports=silent``): mcec reports on what it
generated.

mypy runs in a child process (:data:`_CHILD`), not in ours: a mypy run leaves a
heap of hundreds of MB of cyclic garbage (its ASTs, types and cache data) that an
in-process run pays for twice, in a full collection and again in freeing it at
exit, where ``python -m mypy`` leaves with ``os._exit``; in-process, a cold check
of a 1,000-step spec cost 1.6x the CPU of plain mypy for that alone. The child
exits the same way, and the caller's process (an editor's, pytest's, the build
hook's) keeps neither the garbage nor mypy's garbage-collector thresholds.

Each run's verdict is kept beside mypy's cache (``mcec-verdicts/``) with what it
depended on: the generated code, mypy's version and flags, the search path, and
the size and modification time of every file mypy read and of the folders they
are in (a new module there could change what an import finds). A later run on
the same input (a warm ``mcec check`` of an unchanged spec) reuses that verdict
without starting mypy; any change starts mypy, which re-types the changed module
and loads everything else from its incremental cache (the generated module is
one module: mypy re-types a changed module whole).

A check may be stopped from another thread (:class:`Cancel`: the language server
stops a save's check when the spec is saved again): its mypy process is killed,
no verdict is kept, and the check raises :class:`Cancelled`. The child runs on
the Python ``MCEC_MYPY_PYTHON`` names when it is set (a path; run as ``PYTHON -c
CODE ARGS…``), else on mcec's own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mcec.diagnostics import Diagnostic, error
from mcec.span import Span

if TYPE_CHECKING:  # importing mcec.codegen loads libcst (~0.5 s); `mcec check` never needs it
    from mcec.check.typed import Program
    from mcec.codegen.sourcemap import SourceMap

#: ``path:line:column: severity: message  [code]`` as mypy prints it.
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?:(?P<column>\d+):)? (?P<severity>error|note): (?P<message>.*)$")

#: Where mcec keeps mypy's cache, relative to the working directory.
CACHE_DIR = Path(".mcec") / "mypy_cache"

#: The folder of mcec's kept verdicts inside mypy's cache folder (one file per set of modules checked).
VERDICTS = "mcec-verdicts"

#: The flags mcec runs mypy with, before the cache folder and the files.
FLAGS = (
    "--strict",
    "--follow-imports=silent",
    "--show-column-numbers",
    "--no-error-summary",
    "--no-pretty",
    "--no-color-output",
    "--hide-error-context",
)


#: The variable naming the Python that runs the mypy child (default: the one running mcec).
PYTHON_VARIABLE = "MCEC_MYPY_PYTHON"


class Cancelled(Exception):
    """The check was cancelled (:meth:`Cancel.cancel`) before mypy gave its verdict."""


class Cancel:
    """A handle another thread stops a check with: :meth:`cancel` kills the check's running mypy
    process and keeps it from starting another; the check then raises :class:`Cancelled`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._process: subprocess.Popen[str] | None = None

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Stop the check: kill its mypy process if one runs (from any thread)."""
        with self._lock:
            self._cancelled = True
            if self._process is not None:
                self._process.kill()

    def start(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        """Start the check's mypy process, unless the check was cancelled (:class:`Cancelled`)."""
        with self._lock:  # so that cancel() either comes first or sees the process to kill
            if self._cancelled:
                raise Cancelled()
            self._process = subprocess.Popen(
                argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            return self._process


@dataclass(slots=True)
class MypyRuns:
    """What became of a check's mypy runs: ``started`` mypy processes, ``reused`` verdicts kept
    from an earlier run on the same input (``mcec check``'s JSON summary reports both)."""

    started: int = 0
    reused: int = 0


@dataclass(frozen=True, slots=True)
class GeneratedFile:
    """A generated module on disk, with the spec it came from and its source map.

    ``temporary``: the file is deleted after the check (the pytest plugin), so
    findings do not point the user at it; they point at the spec alone.
    """

    path: Path
    spec_path: str
    source_map: SourceMap
    temporary: bool = False


@dataclass(frozen=True)
class UsedModule:
    """The generated module of a spec another one uses (docs/language.md §11), as it is now:
    ``module`` its dotted name, ``path`` where it belongs beside its spec, ``spec`` that spec's
    path, ``program`` its checked program; :attr:`code` its text."""

    module: str
    path: Path
    spec: str
    program: Program

    @functools.cached_property
    def code(self) -> str:
        """The module's text, generated when first asked for: only mypy reads it, and a compile
        without mypy of a spec that uses hundreds of others would generate each of them for nothing."""
        from mcec.codegen import generate

        return generate(self.program).code


def used_modules(program: Program) -> list[UsedModule]:
    """The generated modules of the specs ``program`` uses, directly or through others, generated
    from the specs as they are now (the files beside them may be missing or stale)."""
    found: dict[str, UsedModule] = {}
    stack = list(program.uses)
    while stack:
        used = stack.pop()
        if used.module in found:
            continue
        leaf = used.module.rpartition(".")[2]
        path = Path(used.spec).parent / f"{leaf}.py"
        found[used.module] = UsedModule(used.module, path, used.spec, used.program)
        stack.extend(used.program.uses)
    return [found[name] for name in sorted(found)]


def overlay(folder: Path, modules: Sequence[UsedModule]) -> Path | None:
    """A folder for the front of mypy's search path in which each of ``modules`` is its code of
    now, and every other module of its packages is the user's own (links to their files): so mypy
    checks a spec's module against the modules of the specs it uses as they are now, without a
    file of the user's being written. None when there are no modules."""
    if not modules:
        return None
    top = folder / "overlay"
    top.mkdir(exist_ok=True)
    for used in modules:
        parts = used.module.split(".")
        root = used.path.parent.resolve()
        for _ in parts[:-1]:
            root = root.parent
        over, real = top, root
        for part in parts[:-1]:
            over, real = over / part, real / part
            _mirror(real, over)
        target = over / used.path.name
        if target.is_symlink():
            target.unlink()
        target.write_text(used.code, encoding="utf-8")
    return top


def _mirror(real: Path, over: Path) -> None:
    """Make ``over`` a folder of links to the entries of ``real`` (once; a link to the whole
    folder, made for another module, is replaced by a folder of links)."""
    if over.is_symlink():
        over.unlink()
    if over.is_dir():
        return
    over.mkdir()
    try:
        entries = list(real.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name != "__pycache__":
            (over / entry.name).symlink_to(entry.resolve())


def check_in_memory(
    modules: Sequence[tuple[str, str, SourceMap]],
    cache_dir: Path | None = None,
    roots: Sequence[Path] = (),
    used: Sequence[UsedModule] = (),
    runs: MypyRuns | None = None,
    cancel: Cancel | None = None,
) -> tuple[Diagnostic, ...]:
    """``mypy --strict`` on generated modules that are not on disk: ``(spec path, code, source
    map)`` each. They are written to a temporary folder for mypy to read (each in a folder of
    its own, so two specs of one name do not clash), and removed afterwards; findings point at
    the specs alone. ``roots`` are folders the user's modules are imported from besides the
    working directory (the specs' package roots); ``used`` are the modules of the specs they use,
    which mypy reads as they are now (:func:`overlay`). What ``mcec check`` runs by default.
    ``cancel`` stops it from another thread (:class:`Cancel`)."""
    import tempfile

    from mcec.codegen import module_name_for

    if not modules:
        return ()
    with tempfile.TemporaryDirectory(prefix="mcec-check-") as folder:
        files: list[GeneratedFile] = []
        for index, (spec, code, source_map) in enumerate(modules):
            target = Path(folder) / str(index) / f"{module_name_for(spec)}.py"
            target.parent.mkdir()
            target.write_text(code, encoding="utf-8")
            files.append(GeneratedFile(target, spec, source_map, temporary=True))
        wanted = _cache_dir_for_run(cache_dir) if cache_dir is not None else None
        cache = wanted if wanted is not None and _writable(wanted) else Path(folder) / ".mypy_cache"
        return run_mypy(files, cache, roots, used, runs, cancel)


def _cache_dir_for_run(default: Path) -> Path:
    """``MYPY_CACHE_DIR`` when set (mypy's own variable, which ``--cache-dir`` would
    otherwise override), else ``default``."""
    configured = os.environ.get("MYPY_CACHE_DIR", "")
    return Path(configured) if configured else default


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


def run_mypy(
    files: Sequence[GeneratedFile],
    cache_dir: Path = CACHE_DIR,
    roots: Sequence[Path] = (),
    used: Sequence[UsedModule] = (),
    runs: MypyRuns | None = None,
    cancel: Cancel | None = None,
) -> tuple[Diagnostic, ...]:
    """Type-check ``files`` with ``mypy --strict``; findings as MCE100 diagnostics.

    One mypy run checks files of distinct names together; files of one name (``a/flow_mce.py``
    and ``b/flow_mce.py``, which mypy would take for one module ``flow_mce`` twice, and refuse)
    are checked in runs of their own, with the same cache. Findings come in the order of the specs'
    lines (the generated module orders its definitions otherwise). ``used`` are the modules of the
    specs they use, which mypy reads as they are now (:func:`overlay`), whatever is on disk: so
    ``mcec compile`` and ``mcec check`` judge a spec alike when a used spec's module is missing or
    stale. A run whose input is unchanged since a kept verdict is not started (module docstring);
    ``runs`` counts what happened. ``cancel`` stops it from another thread (:class:`Cancelled`)."""
    if used:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="mcec-used-") as folder:
            front = overlay(Path(folder), used)
            scratch = _Scratch(Path(folder), tuple((u.module, u.code) for u in used))
            return _run_batches(files, cache_dir, [front, *roots] if front is not None else roots, scratch, runs, cancel)
    return _run_batches(files, cache_dir, roots, None, runs, cancel)


@dataclass(frozen=True, slots=True)
class _Scratch:
    """The temporary folder of the used modules' overlay, and those modules (name, code): what
    stands for the folder in a verdict's input, since its path differs on every run."""

    folder: Path
    modules: tuple[tuple[str, str], ...]


def _run_batches(
    files: Sequence[GeneratedFile],
    cache_dir: Path,
    roots: Sequence[Path],
    scratch: _Scratch | None,
    runs: MypyRuns | None,
    cancel: Cancel | None,
) -> tuple[Diagnostic, ...]:
    """:func:`run_mypy` once the search path is settled: one run per batch of distinct names."""
    batches: list[list[GeneratedFile]] = []
    for generated in files:
        batch = next((b for b in batches if all(g.path.name != generated.path.name for g in b)), None)
        if batch is None:
            batches.append([generated])
        else:
            batch.append(generated)
    cache = _cache_dir_for_run(cache_dir)
    found = [d for batch in batches for d in _run_once(batch, cache, roots, scratch, runs or MypyRuns(), cancel)]
    return tuple(sorted(found, key=lambda d: (d.span.path, d.span.start)))  # in spec order, not the module's


def _run_once(
    files: Sequence[GeneratedFile],
    cache_dir: Path,
    roots: Sequence[Path],
    scratch: _Scratch | None,
    runs: MypyRuns,
    cancel: Cancel | None,
) -> list[Diagnostic]:
    """One mypy run over ``files`` (of distinct names), or its kept verdict when its input is unchanged."""
    args = [*FLAGS, "--cache-dir", str(cache_dir), *[str(f.path) for f in files]]
    search = [str(root) for root in roots if str(root) != os.getcwd()]
    verdicts = _Verdicts(cache_dir, files, search, scratch)
    outcome = verdicts.reuse()
    if outcome is None:
        outcome = _mypy_process(args, search, cancel)
        runs.started += 1
        verdicts.keep(outcome)
    else:
        runs.reused += 1
    diagnostics = _translate(outcome.stdout, files)
    if outcome.status == 2 or (outcome.status != 0 and not diagnostics):
        # mypy itself failed (bad configuration, crash): say so at the first spec
        first = files[0]
        text = (outcome.stderr or outcome.stdout).strip().splitlines()
        message = text[-1] if text else f"mypy exited with status {outcome.status}"
        span = Span.file_start(first.spec_path)
        diagnostics.append(error("MCE100", f"mypy could not check the generated code: {message}", span))
    return diagnostics


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a mypy run printed (``stdout``: its findings; ``stderr``: why it could not run), its exit
    status, the files it read (real paths, but for mypy's own typeshed; None when unknown) and the
    files whose appearance could change what it reads (mypy's configuration files)."""

    stdout: str
    stderr: str
    status: int
    read: tuple[str, ...] | None = None
    watched: tuple[str, ...] = ()


#: The mypy child (``python -c``; argv: mypy's arguments): mypy's own ``main`` up to its build,
#: which it runs itself to learn which files the build read (the graph ``mypy.main`` keeps to
#: itself); prints one JSON object (:class:`_Outcome`'s fields) and leaves with ``os._exit``, as
#: ``python -m mypy`` does, not freeing mypy's heap (module docstring).
_CHILD = """
import io, json, os, sys
from mypy import build, defaults, util
from mypy.errors import CompileError
from mypy.fscache import FileSystemCache
from mypy.main import process_options
sys.setrecursionlimit(defaults.RECURSION_LIMIT)
stdout, stderr, messages, read, status = io.StringIO(), io.StringIO(), [], [], 2
watched = [os.path.abspath(name) for name in defaults.CONFIG_NAMES + defaults.SHARED_CONFIG_NAMES]
watched += defaults.USER_CONFIG_FILES
try:
    fscache = FileSystemCache()
    sources, options = process_options(sys.argv[1:], stdout=stdout, stderr=stderr, fscache=fscache)
    if options.num_workers:
        options.native_parser = True  # as mypy.main does
    def flush(path, lines, serious):
        messages.extend(lines)
        (stderr if serious else stdout).write("".join(line + "\\n" for line in lines))
    blockers = False
    try:
        result = build.build(sources, options, None, flush, fscache, stdout, stderr)
        read = [state.path for state in result.graph.values() if state.path]
        result.manager.metastore.close()
    except CompileError:
        blockers = True
    if options.config_file:
        read.append(options.config_file)
    _, notes, _ = util.count_stats(messages)
    status = (2 if blockers else 1) if messages and notes < len(messages) else 0
except SystemExit as exit:
    status = exit.code if isinstance(exit.code, int) else 2
except Exception as failure:
    stderr.write(f"mypy crashed: {type(failure).__name__}: {failure}\\n")
    status = 2
import mypy
own = os.path.dirname(os.path.realpath(mypy.__file__)) + os.sep  # typeshed: mypy's version stands for it
read = [real for real in map(os.path.realpath, read) if not real.startswith(own)]
out = {"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "status": status, "read": read, "watched": watched}
sys.stdout.write(json.dumps(out))
sys.stdout.flush()
os._exit(0)
"""


def _mypy_process(args: list[str], search: Sequence[str], cancel: Cancel | None = None) -> _Outcome:
    """Run mypy on ``args`` in a child process (:data:`_CHILD`) with ``search`` at the front of its
    module search path (MYPYPATH, for the child alone); :class:`Cancelled` when ``cancel`` stopped it."""
    env = dict(os.environ)
    previous = env.get("MYPYPATH")
    if search:
        env["MYPYPATH"] = os.pathsep.join([*search, *([previous] if previous else [])])
    python = _child_python()
    argv = [python, "-c", _CHILD, *args]
    try:
        if cancel is None:
            done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
            stdout, stderr, returncode = done.stdout, done.stderr, done.returncode
        else:
            process = cancel.start(argv, env)
            stdout, stderr = process.communicate()
            returncode = process.returncode
    except OSError as exc:  # MCEC_MYPY_PYTHON names no program that can be run
        return _Outcome("", f"cannot run {python} ({exc.strerror or type(exc).__name__})", 2)
    if cancel is not None and cancel.cancelled:
        raise Cancelled()  # killed, or its verdict came too late to matter: none is kept
    try:
        reply = json.loads(stdout)
        return _Outcome(
            reply["stdout"], reply["stderr"], int(reply["status"]), tuple(reply["read"]), tuple(reply["watched"])
        )
    except (ValueError, KeyError, TypeError):
        # the child died before it could answer (killed, out of memory, mypy not importable)
        said = (stderr or stdout).strip() or f"the mypy process exited with status {returncode}"
        return _Outcome("", said, 2)


def _child_python() -> str:
    """The Python the mypy child runs on: :data:`PYTHON_VARIABLE`'s when set, else mcec's own."""
    return os.environ.get(PYTHON_VARIABLE) or sys.executable


class _Verdicts:
    """The kept verdict of one set of modules (module docstring): :meth:`reuse` gives it back when
    nothing it depended on changed; :meth:`keep` records a new one. A verdict is one small JSON file
    in ``cache_dir/mcec-verdicts/``, named by what the run checks (the working directory and the
    generated files, by path, or by name when temporary), so it is replaced when the input changes
    and the folder does not grow with every edit."""

    def __init__(
        self, cache_dir: Path, files: Sequence[GeneratedFile], search: Sequence[str], scratch: _Scratch | None
    ) -> None:
        from importlib.metadata import version

        names = [f.path.name if f.temporary else str(f.path.resolve()) for f in files]
        self._skip = [f.path.resolve() for f in files] + ([scratch.folder.resolve()] if scratch is not None else [])
        slot = _digest([os.getcwd(), sys.executable, names])
        self._path = cache_dir / VERDICTS / f"{slot}.json"
        hidden = str(scratch.folder) if scratch is not None else None
        self._input = _digest(
            {
                "mypy": version("mypy"),
                "python": sys.version,
                "child": os.environ.get(PYTHON_VARIABLE, ""),
                "flags": list(FLAGS),
                "search": ["<used modules>" if s == hidden else s for s in search],
                "mypypath": os.environ.get("MYPYPATH", ""),
                "modules": [[name, _code_of(f.path)] for name, f in zip(names, files)],
                "used": [list(m) for m in scratch.modules] if scratch is not None else [],
            }
        )

    def reuse(self) -> _Outcome | None:
        """The kept verdict, if there is one for this input and no file or folder it depended on
        changed since."""
        try:
            kept = json.loads(self._path.read_text(encoding="utf-8"))
            if kept["input"] != self._input or kept["stamps"] != _stamps(kept["stamps"]):
                return None
            return _Outcome(kept["stdout"], kept["stderr"], int(kept["status"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def keep(self, outcome: _Outcome) -> None:
        """Record ``outcome`` as this input's verdict, unless it cannot be trusted to stay right:
        mypy failed or learned nothing of what it read, or an import was not found (a module
        installed later, anywhere on the path, would change the verdict)."""
        if outcome.status == 2 or outcome.read is None or "[import-not-found]" in outcome.stdout:
            return
        read = {p for p in outcome.read if not any(Path(p).is_relative_to(skip) for skip in self._skip)}
        folders = {os.path.dirname(p) for p in read} | {os.getcwd()}
        stamps = _stamps({path: [] for path in sorted(read | folders | set(outcome.watched))})
        kept = {"input": self._input, "stamps": stamps, **{k: getattr(outcome, k) for k in ("stdout", "stderr", "status")}}
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            partial = self._path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps(kept), encoding="utf-8")
            partial.replace(self._path)  # whole or not at all: a concurrent check reads one or the other
        except OSError:
            pass  # a read-only cache: the verdict is not kept, the check is right all the same


def _stamps(paths: dict[str, list[int]]) -> dict[str, list[int]]:
    """Each path's size and modification time in nanoseconds, as they are now (``[]``: no such file)."""
    stamps: dict[str, list[int]] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps[path] = []
            continue
        stamps[path] = [st.st_size, st.st_mtime_ns]
    return stamps


def _code_of(path: Path) -> str:
    """The digest of a generated file's text (empty when it cannot be read: mypy will say why)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _digest(value: object) -> str:
    """A short stable digest of a JSON-able ``value``."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:32]


def _translate(output: str, files: Sequence[GeneratedFile]) -> list[Diagnostic]:
    by_path = {os.path.normpath(str(f.path)): f for f in files}
    by_name: dict[str, list[GeneratedFile]] = {}
    for generated_file in files:
        by_name.setdefault(generated_file.path.name, []).append(generated_file)

    def ours(path: str) -> GeneratedFile | None:
        """The file of this run mypy's line is about. mypy replays the findings of a module whose
        source is unchanged from its cache, under the path the module had when they were found: a
        module generated before at another path (an earlier ``check``'s temporary folder, another
        ``-o``) is recognised by its file name, when one file of this run has that name."""
        found = by_path.get(os.path.normpath(path))
        if found is not None:
            return found
        named = by_name.get(os.path.basename(path), [])
        return named[0] if len(named) == 1 else None
    diagnostics: list[Diagnostic] = []
    pending: tuple[GeneratedFile, int, str, Span, str | None] | None = None
    notes: list[str] = []

    def flush() -> None:
        if pending is not None:
            generated, line, message, span, hint = pending
            shown = "" if generated.temporary else f" (generated {generated.path}:{line})"
            original = "; ".join([message, *notes])
            diagnostics.append(
                error("MCE100", in_spec_terms(message), span, help=hint, note=f"mypy{shown}: {original}")
            )

    for raw in output.splitlines():
        match = _LINE.match(raw.strip())
        if match is None:
            continue
        generated = ours(match["path"])
        if generated is None:
            continue
        line = int(match["line"])
        if match["severity"] == "note":
            if pending is not None:
                notes.append(match["message"].strip())
            continue
        flush()
        notes = []
        entry = generated.source_map.entry(line) or generated.source_map.nearest(line)
        span = entry.span if entry is not None else Span.file_start(generated.spec_path)
        pending = (generated, line, match["message"].strip(), span, entry.hint if entry is not None else None)
    flush()
    return diagnostics


#: mypy's messages about the generated code, and what they mean in the spec.
_MEANINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r'Argument 1 to "stop" has incompatible type "Err\[.+?, (?P<got>.+)\]"; expected "Err\[.+?, (?P<want>.+)\]"'),
        "this step may fail with {got}, where only {want} may escape",
    ),
    (
        re.compile(r'Argument 4 to "raised" has incompatible type "tuple\[(?P<got_set>.+)\]"; expected "tuple\[type\[(?P<want>.+)\], \.\.\.\]"'),
        "this step may fail with {got_set}, where only {want} may escape",
    ),
    (
        re.compile(r'Incompatible types in assignment \(expression has type "(?P<got>.+)", variable has type "(?P<want>.+)"\)'),
        "the implementation does not fit its declaration: it is {got}, the declaration needs {want}",
    ),
    (
        re.compile(r'Incompatible return value type \(got "(?P<got>.+)", expected "(?P<want>.+)"\)'),
        "the result does not fit what is declared: it is {got}, the declaration says {want}",
    ),
    (
        re.compile(r'Argument (?P<n>\d+) to "(?P<callee>[^"]+)" has incompatible type "(?P<got>.+)"; expected "(?P<want>.+)"'),
        "a value does not fit where it goes: it is {got}, {want} is expected",
    ),
    (
        re.compile(r'Cannot find implementation or library stub for module named "(?P<module>[^"]+)"'),
        "mypy cannot find module `{module}`",
    ),
)

#: A quoted generated name (``"_main_par_catch"``), a dotted Python path, the runtime's type spelling.
_GENERATED_NAME = re.compile(r'"_[A-Za-z0-9_]*"')
_QUALIFIED = re.compile(r"\b(?:[a-z_][a-z0-9_]*\.)+(?=[A-Za-z_][A-Za-z0-9_]*)")


def in_spec_terms(message: str) -> str:
    """mypy's ``message`` about a generated line, said in the spec's terms: which step or part of
    the pipeline, and types as the spec writes them (``app.impl.E2`` → ``E2``); no generated
    helper names, runtime functions or generated line numbers."""
    text = re.sub(r"\s+\[[a-z-]+\]$", "", message)  # mypy's error code
    for pattern, meaning in _MEANINGS:
        found = pattern.search(text)
        if found is not None:
            parts = {k: _spec_type(v) for k, v in found.groupdict().items()}
            # a tuple of error classes (``type[A], type[B]``) is said as the spec writes an error set
            parts = {k: v.replace(", ", " | ") if k.endswith("_set") else v for k, v in parts.items()}
            return "mypy: " + meaning.format(**parts)
    text = _GENERATED_NAME.sub("this part of the pipeline", text)
    return "mypy: " + _spec_type(text)


def _spec_type(text: str) -> str:
    """A Python type as mypy prints it, closer to the spec's spelling."""
    text = _QUALIFIED.sub("", text)
    text = re.sub(r"\bOk\[[^\[\]]+, ([^\[\]]+)\] \| Err\[[^\[\]]+, ([^\[\]]+)\]", r"\1 ! \2", text)
    text = re.sub(r"\bErr\[[^\[\]]+, ([^\[\]]+)\] \| Ok\[[^\[\]]+, ([^\[\]]+)\]", r"\2 ! \1", text)
    # ``type[X]`` is the class X: its closing bracket goes with it
    text = _TYPE_OF.sub(r"\1", text)
    return text.replace("builtins.", "")


#: ``type[X]`` of a class X (no bracket inside): what :func:`_spec_type` unwraps.
_TYPE_OF = re.compile(r"\btype\[([^\[\]]*)\]")
