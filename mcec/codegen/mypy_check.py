"""Run mypy on generated modules and report its findings at the `.mce` spans.

mcec settles at build time what it can decide alone, the user's classes and
implementations included (docs/language.md §4); what it could not read is left
to mypy, run with ``--strict`` on the generated module. Each finding becomes an
MCE100 diagnostic at the spec construct that produced the offending line (via
the source map), said in the spec's terms (:func:`in_spec_terms`); mypy's own
words, with the generated line, are kept as the diagnostic's note (shown with
``--verbose`` and in the JSON output).

mypy runs in-process through ``mypy.api`` with a cache folder, so rebuilding
unchanged modules is fast: ``.mcec/mypy_cache`` under the working directory (the
project root for the build hook), or the folder ``MYPY_CACHE_DIR`` names when it
is set, as for mypy itself, so CI jobs and test sessions can share one warm
cache. Errors in the user's own modules are not reported
(``--follow-imports=silent``): mcec reports on what it generated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
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


@dataclass(frozen=True, slots=True)
class UsedModule:
    """The generated module of a spec another one uses (docs/language.md §11), as it is now:
    ``module`` its dotted name, ``path`` where it belongs beside its spec, ``code`` its text;
    ``spec`` that spec's path."""

    module: str
    path: Path
    code: str
    spec: str = ""


def used_modules(program: Program) -> list[UsedModule]:
    """The generated modules of the specs ``program`` uses, directly or through others, generated
    from the specs as they are now (the files beside them may be missing or stale)."""
    from mcec.codegen import generate

    found: dict[str, UsedModule] = {}
    stack = list(program.uses)
    while stack:
        used = stack.pop()
        if used.module in found:
            continue
        leaf = used.module.rpartition(".")[2]
        path = Path(used.spec).parent / f"{leaf}.py"
        code = generate(used.program).code
        found[used.module] = UsedModule(used.module, path, code, used.spec)
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
) -> tuple[Diagnostic, ...]:
    """``mypy --strict`` on generated modules that are not on disk: ``(spec path, code, source
    map)`` each. They are written to a temporary folder for mypy to read (each in a folder of
    its own, so two specs of one name do not clash), and removed afterwards; findings point at
    the specs alone. ``roots`` are folders the user's modules are imported from besides the
    working directory (the specs' package roots); ``used`` are the modules of the specs they use,
    which mypy reads as they are now (:func:`overlay`). What ``mcec check`` runs by default."""
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
        return run_mypy(files, cache, roots, used)


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
) -> tuple[Diagnostic, ...]:
    """Type-check ``files`` with ``mypy --strict``; findings as MCE100 diagnostics.

    One mypy run checks files of distinct names together; files of one name (``a/flow_mce.py``
    and ``b/flow_mce.py``, which mypy would take for one module ``flow_mce`` twice, and refuse)
    are checked in runs of their own, with the same cache. Findings come in the order of the specs'
    lines (the generated module orders its definitions otherwise). ``used`` are the modules of the
    specs they use, which mypy reads as they are now (:func:`overlay`), whatever is on disk: so
    ``mcec compile`` and ``mcec check`` judge a spec alike when a used spec's module is missing or
    stale."""
    if used:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="mcec-used-") as folder:
            front = overlay(Path(folder), used)
            return run_mypy(files, cache_dir, [front, *roots] if front is not None else roots)
    batches: list[list[GeneratedFile]] = []
    for generated in files:
        batch = next((b for b in batches if all(g.path.name != generated.path.name for g in b)), None)
        if batch is None:
            batches.append([generated])
        else:
            batch.append(generated)
    cache = _cache_dir_for_run(cache_dir)
    found = [d for batch in batches for d in _run_once(batch, cache, roots)]
    return tuple(sorted(found, key=lambda d: (d.span.path, d.span.start)))  # in spec order, not the module's


def _run_once(files: Sequence[GeneratedFile], cache_dir: Path, roots: Sequence[Path]) -> list[Diagnostic]:
    """One mypy run over ``files`` (of distinct names)."""
    from mypy import api  # imported here: mypy is slow to import and only compile needs it

    args = [
        "--strict",
        "--follow-imports=silent",
        "--show-column-numbers",
        "--no-error-summary",
        "--no-pretty",
        "--no-color-output",
        "--hide-error-context",
        "--cache-dir",
        str(cache_dir),
        *[str(f.path) for f in files],
    ]
    stdout, stderr, status = _run_with_roots(api.run, args, roots)
    diagnostics = _translate(stdout, files)
    if status == 2 or (status != 0 and not diagnostics):
        # mypy itself failed (bad configuration, crash): say so at the first spec
        first = files[0]
        text = (stderr or stdout).strip().splitlines()
        message = text[-1] if text else f"mypy exited with status {status}"
        span = Span.file_start(first.spec_path)
        diagnostics.append(error("MCE100", f"mypy could not check the generated code: {message}", span))
    return diagnostics


def _run_with_roots(
    run: Callable[[list[str]], tuple[str, str, int]], args: list[str], roots: Sequence[Path]
) -> tuple[str, str, int]:
    """mypy with ``roots`` on its module search path (MYPYPATH, for this call only)."""
    extra = [str(root) for root in roots if str(root) != os.getcwd()]
    if not extra:
        return run(args)
    previous = os.environ.get("MYPYPATH")
    os.environ["MYPYPATH"] = os.pathsep.join([*extra, *([previous] if previous else [])])
    try:
        return run(args)
    finally:
        if previous is None:
            del os.environ["MYPYPATH"]
        else:
            os.environ["MYPYPATH"] = previous


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
