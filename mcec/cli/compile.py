"""The code-producing commands: ``mcec compile``, ``mcec build`` and ``mcec run``.

Each follows the pattern of ``mcec.cli``: ``add_<name>`` declares the
arguments, ``run_<name>(args, out) -> int`` does the work and returns the exit
status (0 success, 1 diagnostics or a failed run, 2 usage or I/O).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types as pytypes
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mcec.cli.build_state import (
    STATE_DIR,
    BuildState,
    BuildStateError,
    Fingerprint,
    build_lock,
    dependency_hashes,
    order_by_uses,
    sha256_file,
    template_file_hashes,
)
from mcec.check.pyindex import package_root
from mcec.cli.common import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    Reporter,
    Subparsers,
    add_otel_option,
    collect_specs,
    color_wanted,
    load_source,
    non_negative,
    with_otel,
)
from mcec.compiler import CompileResult, compile_source
from mcec.codegen import template_hashes
from mcec.diagnostics import Diagnostic, Label, error
from mcec.codegen.mypy_check import GeneratedFile, UsedModule, run_mypy, used_modules
from mcec.cli.durable_check import add_durable_arguments, durable_diagnostics
from mcec.cli.output import OutputError, output_path, recorded_sha256, stale_module_beside, write_module
from mcec.render import DEFAULT_LIMIT
from mcec.span import Span

if TYPE_CHECKING:
    from mcec.check.typed import Program
    from mcec.run.stream import StreamPrinter
    from mcec.run.timeline import Node, Timeline



def _ensure_importable_cwd() -> None:
    """Specs name modules relative to the project root (the working directory), as
    ``python -m`` would; make them importable for mypy's and run's sake."""
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)


def ensure_importable(spec: Path) -> None:
    """Also the folder the spec's package starts in (the checker reads modules from there too)."""
    _ensure_importable_cwd()
    root = str(package_root(spec))
    if root not in sys.path:
        sys.path.insert(1, root)


def _write_problem(spec: Path, message: str) -> Diagnostic:
    return error("MCE006", message, Span.file_start(str(spec)))


def _spec_modules(result: CompileResult) -> list[str]:
    assert result.program is not None
    return [imp.module for imp in result.program.imports]


def _compile_one(
    spec: Path, out_dir: Path | None, reporter: Reporter, durable: bool = False, pipelines: list[str] | None = None
) -> tuple[CompileResult | None, Path | None, bool]:
    """Compile one spec and write its module; returns (result, target, io_failed).

    A missing ``out_dir`` is created (with its parents) when the first module
    is written into it. ``durable`` (``--durable``) adds the durable check's diagnostics
    (MCE033) for ``pipelines`` (``--pipeline``; None: every pipeline); with one of them, nothing
    is written.
    """
    source, problem = load_source(spec)
    if problem is not None:
        reporter.add([problem], source)
        return None, None, problem.code == "MCE005"
    assert source is not None
    result = compile_source(source)
    reporter.add(result.diagnostics, source)
    not_durable = False
    if durable and result.program is not None:
        found = durable_diagnostics(spec, result.program, pipelines)
        reporter.add(found, source)
        # `--durable` asked for a module that runs durably: one that cannot is a failed compile
        not_durable = any(d.is_error for d in found)
    if result.generated is None or not_durable:
        return result, None, False
    target = output_path(spec, out_dir)
    try:
        if out_dir is not None:
            _make_output_dir(out_dir)
        write_module(target, result.generated.code)
    except OutputError as exc:
        reporter.add([_write_problem(spec, str(exc))])
        return result, None, True
    return result, target, False


def _used_elsewhere(results: list[CompileResult], written: list[GeneratedFile]) -> list[UsedModule]:
    """The modules of the specs the compiled ones use (directly or through others), as they are
    now, less those this run wrote: mypy reads them so, as ``mcec check`` does (§11)."""
    wrote = {os.path.realpath(generated.path) for generated in written}
    used: dict[str, UsedModule] = {}
    for result in results:
        if result.program is not None:
            used.update((u.module, u) for u in used_modules(result.program))
    return [u for name, u in sorted(used.items()) if os.path.realpath(u.path) not in wrote]


#: The used modules named one by one in the warning; past these, how many more and the one fix.
_NAMED_UNGENERATED = 3


def _warn_not_generated(used: list[UsedModule]) -> None:
    """Say on stderr which used specs' modules are missing or stale on disk: the module just
    compiled imports them, so it cannot run (or runs an old pipeline) until they are compiled.
    A long chain of used specs is summed up after the first few, not a warning per spec."""
    found = [(module, state) for module in used if (state := _module_state(module)) is not None]
    for module, state in found[:_NAMED_UNGENERATED]:
        print(
            f"warning: `{module.path}` (from `{module.spec}`) {state}; the modules compiled here import it, "
            f"so they cannot run as they are until it is compiled\n"
            f"  = help: run `mcec compile {module.spec}` too, or `mcec build {Path(module.spec).parent}`",
            file=sys.stderr,
        )
    rest = found[_NAMED_UNGENERATED:]
    if rest:
        folder = os.path.commonpath([str(Path(module.spec).parent.resolve()) for module, _ in rest])
        shown = os.path.relpath(folder) if not os.path.relpath(folder).startswith("..") else folder
        print(
            f"warning: {len(rest)} more modules of specs used here are not generated yet or stale "
            f"(`{rest[0][0].path}` … `{rest[-1][0].path}`)\n"
            f"  = help: run `mcec build {shown}`",
            file=sys.stderr,
        )


def _module_state(module: UsedModule) -> str | None:
    """Why a used spec's module on disk cannot be what the compiled module imports (None: it can)."""
    if not module.path.exists():
        return "is not generated yet"
    if recorded_sha256(module.path) is None:
        return "is a file mcec did not generate"
    # its spec or template files changed (§7), judged as the module's import judges itself
    stale = stale_module_beside(Path(module.spec))
    return None if stale is None else f"is stale ({stale.reason(quote='`')} after it was generated)"


def _make_output_dir(out_dir: Path) -> None:
    if out_dir.is_dir():
        return
    if out_dir.exists() or out_dir.is_symlink():
        raise OutputError(f"the output folder `{out_dir}` is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder `{out_dir}`: {exc.strerror or exc}") from exc


def _colliding_outputs(files: list[Path], out_dir: Path | None) -> tuple[list[Path], list[Diagnostic]]:
    """The specs whose outputs are distinct, and an MCE006 for each set of specs
    that would be compiled to the same file (none of those is compiled: which
    one should win is the user's choice). A spec named twice counts once."""
    by_target: dict[str, list[Path]] = {}
    seen: set[str] = set()
    unique: list[Path] = []
    for spec in files:
        real = os.path.realpath(spec)
        if real in seen:
            continue
        seen.add(real)
        unique.append(spec)
        by_target.setdefault(os.path.realpath(output_path(spec, out_dir)), []).append(spec)
    problems: list[Diagnostic] = []
    clashing: set[Path] = set()
    for specs in by_target.values():
        if len(specs) < 2:
            continue
        clashing.update(specs)
        target = output_path(specs[0], out_dir)
        others = ", ".join(f"`{s}`" for s in specs[1:])
        both, none = ("both", "neither was") if len(specs) == 2 else ("all", "none of them was")
        problems.append(
            error(
                "MCE006",
                f"`{specs[0]}` and {others} would {both} be compiled to `{target}`; {none} compiled",
                Span.file_start(str(specs[0])),
                labels=tuple(Label(Span.file_start(str(s)), f"also compiles to `{target}`") for s in specs[1:]),
                help="compile them into different folders (-o DIR) or rename one of the specs",
            )
        )
    return [s for s in unique if s not in clashing], problems


# ---------------------------------------------------------------- mcec compile


def add_compile(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec compile FILE... [-o DIR] [--no-mypy] [-q] [--format text|json] [--max-diagnostics N]``."""
    command = subparsers.add_parser(
        "compile", help="compile specs to Python modules", description="Compile `.mce` specs to `name_mce.py` modules."
    )
    command.add_argument("files", nargs="+", metavar="FILE", help="a .mce file (or a folder: every spec below it)")
    command.add_argument(
        "-o", "--output-dir", type=Path, default=None, metavar="DIR", help="write DIR/name_mce.py (DIR is created)"
    )
    command.add_argument("--no-mypy", action="store_true", help="skip type-checking the output with mypy")
    command.add_argument(
        "-q", "--quiet", action="store_true", help="no `compiled X -> Y` line for a spec written without error"
    )
    command.add_argument("--format", choices=("text", "json"), default="text", help="diagnostic format")
    command.add_argument(
        "--max-diagnostics",
        type=non_negative,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"show at most N diagnostics (default {DEFAULT_LIMIT}; 0 = no limit), as `mcec check` does",
    )
    add_durable_arguments(command)
    command.set_defaults(func=run_compile)


def run_compile(args: argparse.Namespace, out: TextIO) -> int:
    """Compile each spec, write its module atomically, then run mypy on the outputs.

    In text mode one line per spec written goes to stderr, after mypy: ``compiled
    X -> Y`` (not with ``-q``), or, when mypy found errors in Y, ``failed: X -> Y …``.
    """
    _ensure_importable_cwd()
    limit = args.max_diagnostics or None
    reporter = Reporter(out, args.format, limit, color_wanted(out) and args.format == "text")
    out_dir: Path | None = args.output_dir
    files, problems = collect_specs(args.files)
    reporter.add(problems)
    io_failed = bool(problems)
    files, clashes = _colliding_outputs(files, out_dir)
    reporter.add(clashes)
    io_failed = io_failed or bool(clashes)
    written: list[GeneratedFile] = []
    results: list[CompileResult] = []
    for spec in files:
        result, target, failed = _compile_one(spec, out_dir, reporter, args.durable, args.pipeline)
        io_failed = io_failed or failed
        if result is not None and result.generated is not None and target is not None:
            written.append(GeneratedFile(target, str(spec), result.generated.source_map))
            results.append(result)
    used = _used_elsewhere(results, written)
    findings: tuple[Diagnostic, ...] = ()
    if written and not args.no_mypy:
        findings = run_mypy(written, used=used)
        reporter.add(findings)
    _warn_not_generated(used)
    if args.format == "text":
        for generated in written:
            errors = sum(1 for d in findings if d.is_error and d.span.path == generated.spec_path)
            if errors:
                print(
                    f"failed: {generated.spec_path} -> {generated.path} was written, but mypy found "
                    f"{errors} error{'s' if errors != 1 else ''} in it",
                    file=sys.stderr,
                )
            elif not args.quiet:
                print(f"compiled {generated.spec_path} -> {generated.path}", file=sys.stderr)
    reporter.flush()
    if io_failed:
        return EXIT_USAGE
    return EXIT_ERRORS if reporter.has_errors else EXIT_OK


# ---------------------------------------------------------------- mcec build


def add_build(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec build [DIR] [--no-mypy] [--format text|json] [--force]``."""
    command = subparsers.add_parser(
        "build",
        help="compile every spec below a folder, skipping unchanged ones",
        description="Compile every `*.mce` below DIR whose source or dependencies changed since the last build.",
    )
    command.add_argument("folder", nargs="?", default=".", metavar="DIR", help="the folder to build (default: .)")
    command.add_argument("--no-mypy", action="store_true", help="skip type-checking the output with mypy")
    command.add_argument("--force", action="store_true", help="rebuild everything")
    command.add_argument("--format", choices=("text", "json"), default="text", help="diagnostic format")
    command.set_defaults(func=run_build)


def _fingerprint(spec: Path, modules: list[str], templates: Mapping[str, str] | list[str]) -> Fingerprint:
    """The spec's fingerprint now; ``templates`` are the template files it reads, by name (hashed
    now), or with the hashes of the texts just compiled into its module (what a build records, so
    a template edited while the build ran is not taken for built)."""
    target = output_path(spec, None)
    hashes = dict(templates) if isinstance(templates, Mapping) else template_file_hashes(spec, templates)
    return Fingerprint(sha256_file(spec), dependency_hashes(modules), sha256_file(target), hashes)


def run_build(args: argparse.Namespace, out: TextIO) -> int:
    """Build a folder: compile what changed, mypy the outputs together, one summary line.

    The whole build holds the folder's build lock (``mcec.cli.build_state``), so two builds
    of one tree take turns. A ``.mcec`` that cannot hold the state is an MCE006
    diagnostic (exit 2): before compiling when the lock cannot be taken, after
    it — with everything else found — when the state cannot be saved.
    """
    _ensure_importable_cwd()
    folder = Path(args.folder)
    reporter = Reporter(out, args.format, DEFAULT_LIMIT, color_wanted(out) and args.format == "text")
    if not folder.is_dir():
        reporter.add([error("MCE005", f"no such folder: `{folder}`", Span.file_start(str(folder)))])
        reporter.flush()
        return EXIT_USAGE

    def waiting() -> None:
        print(f"mcec build: waiting for another build of {folder} to finish", file=sys.stderr, flush=True)

    try:
        with build_lock(folder, on_wait=waiting):
            return _build_locked(args, folder, reporter, out)
    except BuildStateError as exc:
        reporter.add([_write_problem(folder / STATE_DIR, str(exc))])
        reporter.flush()
        return EXIT_USAGE


def _build_locked(args: argparse.Namespace, folder: Path, reporter: Reporter, out: TextIO) -> int:
    started = time.perf_counter()
    state = BuildState(folder)
    specs = sorted(p for p in folder.rglob("*.mce") if p.is_file() and ".mcec" not in p.parts)
    # a spec is compiled after the specs it uses, and again whenever one of them is (§11)
    ordered, uses = order_by_uses(specs)
    changed: set[Path] = set()
    for spec in ordered:
        key = spec.relative_to(folder)
        modules = state.recorded_modules(key) if not args.force else None
        templates = state.recorded_templates(key) if not args.force else None
        current = (
            modules is not None
            and templates is not None
            and state.is_current(key, _fingerprint(spec, modules, templates))
        )
        if not current or any(used in changed for used in uses[spec]):
            changed.add(spec)
    stale = [spec for spec in ordered if spec in changed]
    show_progress = len(stale) > 3 and args.format == "text"
    written: list[tuple[Path, GeneratedFile, list[str], dict[str, str]]] = []
    failed: set[Path] = set()
    io_failed = False
    for index, spec in enumerate(stale, start=1):
        if show_progress:
            print(f"[{index}/{len(stale)}] {spec}", file=sys.stderr, flush=True)
        before = len(reporter.diagnostics)
        result, target, io = _compile_one(spec, None, reporter)
        io_failed = io_failed or io
        if any(d.is_error for d in reporter.diagnostics[before:]) or result is None or target is None:
            failed.add(spec)
            state.forget(spec.relative_to(folder))
            continue
        assert result.generated is not None
        generated = GeneratedFile(target, str(spec), result.generated.source_map)
        assert result.program is not None
        written.append((spec, generated, _spec_modules(result), template_hashes(result.program)))
    if written and not args.no_mypy:
        findings = run_mypy([generated for _, generated, _, _ in written])
        reporter.add(findings)
        bad_specs = {d.span.path for d in findings if d.is_error}
        for spec, _, _, _ in written:
            if str(spec) in bad_specs:
                failed.add(spec)
    for spec, _, modules, embedded in written:
        if spec not in failed:
            state.record(spec.relative_to(folder), _fingerprint(spec, modules, embedded))
        else:
            state.forget(spec.relative_to(folder))
    try:
        state.save()
    except BuildStateError as exc:
        reporter.add([_write_problem(folder / STATE_DIR, f"{exc}; the next build compiles everything again")])
        io_failed = True
    reporter.flush()
    built = len(stale) - len(failed)
    elapsed = time.perf_counter() - started
    summary = (
        f"mcec build: {built} compiled, {len(specs) - len(stale)} up to date, "
        f"{len(failed)} failed ({len(specs)} specs, {elapsed:.2f}s)"
    )
    print(summary, file=sys.stderr if args.format == "json" else out)
    if io_failed:
        return EXIT_USAGE
    return EXIT_ERRORS if failed or reporter.has_errors else EXIT_OK


# ---------------------------------------------------------------- mcec run


def add_run(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec run FILE PIPELINE --input JSON [--state JSON] [--model NAME=VALUE …]``."""
    command = subparsers.add_parser(
        "run",
        help="compile a spec in memory and run one pipeline",
        description="Compile a spec in memory, run PIPELINE on --input, print the Outcome as JSON.",
    )
    command.add_argument("file", metavar="FILE", help="the .mce spec")
    command.add_argument("pipeline", metavar="PIPELINE", help="the pipeline to run")
    command.add_argument("--input", required=True, metavar="JSON", help="the pipeline's input value, as JSON")
    command.add_argument("--state", default=None, metavar="JSON", help="the initial state, as JSON (default: S())")
    add_model_option(command)
    command.add_argument(
        "--trace",
        nargs="?",
        const="text",
        choices=("text", "json"),
        default=None,
        help="after the result, print the run as a tree on stderr: each step with its .mce line, duration, "
        "tokens and outcome (`--trace json`: as JSON)",
    )
    command.add_argument(
        "--interpret", action="store_true", help="run with the reference interpreter instead of the compiled code"
    )
    add_otel_option(command)
    durable = command.add_argument_group("durable runs (docs/language.md §13)")
    durable.add_argument("--durable", action="store_true", help="record every effect: a killed run resumes where it was")
    durable.add_argument("--run-id", default=None, metavar="ID", help="the run's id (again: resume that run)")
    durable.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
    durable.add_argument(
        "--allow-changed-spec", action="store_true", help="resume a run although its spec changed since it started"
    )
    durable.add_argument("--queue", default=None, metavar="NAME",
                         help="enqueue the run for a worker (`mcec worker`) instead of running it here; print its id")
    durable.add_argument("--wait", action="store_true", help="with --queue: wait for the run's Outcome and print it")
    command.add_argument(
        "--stream",
        action="store_true",
        help="print the answers of `stream llm` steps as they arrive (text as text, a structured "
        "answer's partials as JSON lines, one a change), then the Outcome",
    )
    command.add_argument(
        "--record", default=None, metavar="FILE",
        help="write the run's effects, input and Outcome to FILE, for `mcec replay` (docs/language.md §17)",
    )
    command.set_defaults(func=run_run)


def add_model_option(command: argparse.ArgumentParser) -> None:
    """``--model NAME=VALUE`` (repeatable), as ``mcec run`` and ``mcec serve`` take it."""
    command.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="answer for model NAME (or `*`, every model): `test` (made-up valid answers), `script:PATH` "
        "(replies in a JSON file), `py:MODULE:ATTR` (a backend), or `MODEL_ID[@BASE_URL]`; repeatable",
    )


def compile_to_run(spec: Path) -> CompileResult | int:
    """Compile a spec in memory for running it (``run``, ``serve``).

    Returns the result, or — when the spec cannot be read or does not check —
    the exit status, after printing the diagnostics on stderr (stdout is the
    command's own output: JSON, or the MCP protocol). A generated module beside
    the spec that is older than it (docs/language.md §7) is reported on stderr too:
    this run uses the current spec, but code importing that module does not.
    """
    ensure_importable(spec)
    reporter = Reporter(sys.stderr, "text", DEFAULT_LIMIT, color_wanted(sys.stderr))
    source, problem = load_source(spec)
    if problem is not None:
        reporter.add([problem], source)
        reporter.flush()
        return EXIT_USAGE if problem.code == "MCE005" else EXIT_ERRORS
    assert source is not None
    result = compile_source(source)
    if result.program is None or result.generated is None:
        reporter.add(result.diagnostics, source)
        reporter.flush()
        return EXIT_ERRORS
    stale = stale_module_beside(spec)
    if stale is not None:
        module = output_path(spec, None)
        current = "spec" if stale.spec_changed else "template" if len(stale.templates) == 1 else "templates"
        print(
            f"warning: `{module}` is stale: {stale.reason(quote='`')} after it was generated, so code that "
            f"imports it runs {stale.runs()} (this command uses the current {current})\n"
            f"  = help: {stale.help()}",
            file=sys.stderr,
        )
    return result


def load_compiled(result: CompileResult) -> pytypes.ModuleType | int:
    """Execute a compiled spec's module; on failure print the diagnostic (at the
    declaration or import whose Python side failed) on stderr and return 1."""
    from mcec.run.runner import LoadError, load_module

    assert result.program is not None and result.generated is not None
    try:
        return load_module(result.program, result.generated)
    except LoadError as exc:
        reporter = Reporter(sys.stderr, "text", DEFAULT_LIMIT, color_wanted(sys.stderr))
        reporter.add([exc.diagnostic], result.source)
        reporter.flush()
        return EXIT_ERRORS


def run_run(args: argparse.Namespace, out: TextIO) -> int:
    """Run one pipeline; exit 0 on Ok, 1 on Err, a Defect or a spec whose Python
    side does not load, 2 on bad input. With ``--otel``, its spans are exported."""
    return with_otel("run", args, lambda: _run_run(args, out))


def _run_run(args: argparse.Namespace, out: TextIO) -> int:
    from agentmonad.events import EventSink, Fanout
    from agentmonad.human import ConsoleHuman

    from mcec.run.runner import RunError, dumps, llm_run_config, pipeline_site, prepare, run_pipeline
    from mcec.run.timeline import Timeline

    if args.durable:
        if args.record is not None:
            print("mcec run: --record does not go with --durable (export a durable run with `mcec runs export ID -o FILE`)",
                  file=sys.stderr)
            return EXIT_USAGE
        return run_durable(args, out)
    if args.record is not None and (args.trace is not None or args.stream):
        print("mcec run: --record does not go with --trace or --stream", file=sys.stderr)
        return EXIT_USAGE
    if args.run_id is not None or args.db is not None or args.allow_changed_spec or args.queue is not None or args.wait:
        print("mcec run: --run-id, --db, --allow-changed-spec, --queue and --wait go with --durable", file=sys.stderr)
        return EXIT_USAGE
    result = compile_to_run(Path(args.file))
    if isinstance(result, int):
        return result
    assert result.program is not None and result.generated is not None
    module = load_compiled(result)
    if isinstance(module, int):
        return module
    try:
        value, state = prepare(result.program, args.pipeline, args.input, args.state)
        llm = llm_run_config(result.program, args.model)
    except RunError as exc:
        print(f"mcec run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.record is not None:
        from mcec.cli.replay import run_recorded

        return run_recorded(args, out, result, module, value, state, llm)
    if args.interpret:  # the reference interpreter runs the checked program in the module's place
        from mcec.run.interpret import interpret

        program, pipeline = result.program, args.pipeline
        module = pytypes.SimpleNamespace(**{pipeline: lambda s, v: interpret(program, pipeline, s, v)})  # type: ignore[assignment]
    site = pipeline_site(result.program, args.pipeline)
    timeline = Timeline() if args.trace is not None else None
    printer = _stream_printer(result.program, out) if args.stream else None
    # ask steps (§15) ask on the terminal: the question on stderr, the answer read from stdin
    human = ConsoleHuman() if result.program.asks else None
    if sys.stderr.isatty() and printer is None and human is None:  # on a terminal: the step running and each `each`'s progress
        from mcec.run.progress import ProgressDisplay

        with ProgressDisplay(sys.stderr) as progress:
            sink: EventSink = progress if timeline is None else Fanout(timeline, progress)
            report = run_pipeline(module, args.pipeline, state, value, llm, events=sink, site=site)
    else:  # the streamed answer (--stream) is what a terminal shows then, not the progress
        sinks: list[EventSink] = [s for s in (timeline, printer) if s is not None]
        events = None if not sinks else sinks[0] if len(sinks) == 1 else Fanout(*sinks)
        try:
            report = run_pipeline(module, args.pipeline, state, value, llm, events=events, site=site, human=human)
        finally:
            if printer is not None:
                printer.close()
    out.write(dumps(report.payload) + "\n")
    if timeline is not None:
        out.flush()  # the result first, then the trace
        show_trace(timeline, args.trace, sys.stderr)
    return report.status


def _stream_printer(program: Program, out: TextIO) -> StreamPrinter:
    """``--stream`` (docs/language.md §14): the sink that writes the streamed answers to ``out`` as
    they arrive; says on stderr when no step of the spec streams."""
    from mcec.run.stream import StreamPrinter

    if not any(llm_decl.stream for llm_decl in program.llms):
        print("mcec run: --stream: no llm step of the spec is declared `stream llm`, so nothing streams", file=sys.stderr)
    return StreamPrinter(out)


def show_trace(timeline: Timeline, form: str, stream: TextIO) -> None:
    """``--trace``: the run's tree as text, or as JSON (``--trace json``)."""
    show_tree(timeline.tree(), form, stream)


def show_tree(roots: list[Node], form: str, stream: TextIO) -> None:
    """A run's tree (a timeline's, or a durable run's records') as ``--trace`` prints it."""
    import json

    from mcec.run.timeline import as_json, render_text

    if form == "json":
        stream.write(json.dumps({"trace": as_json(roots)}, indent=2, ensure_ascii=False) + "\n")
    else:
        stream.write(render_text(roots) + "\n")


def run_durable(args: argparse.Namespace, out: TextIO) -> int:
    """``mcec run --durable``: the Outcome JSON plus ``run_id``; a run that cannot start or resume is
    a message on stderr and exit status 2."""
    from mcec.durable import DurableError, run
    from mcec.run.runner import dumps

    ensure_importable(Path(args.file))
    if args.wait and args.queue is None:
        print("mcec run: --wait goes with --queue (a run without --queue runs here, and is waited for)", file=sys.stderr)
        return EXIT_USAGE
    if args.queue is not None:
        if args.stream:  # a worker runs it: its events are in the worker's process, not this one
            print("mcec run: --stream does not go with --queue: a worker runs the run, and its answers stream "
                  "there (run it here, without --queue, to stream it)", file=sys.stderr)
            return EXIT_USAGE
        return _enqueue_durable(args, out)
    printer = None
    try:
        if args.stream:  # the run's events go to the printer while this process runs it (docs §13)
            from mcec.durable import _program  # checked once: the run reuses it

            printer = _stream_printer(_program(args.file, generate=not args.interpret), out)
        payload = run(
            args.file,
            args.pipeline,
            args.input,
            state_json=args.state,
            run_id=args.run_id,
            db=args.db,
            allow_changed_spec=args.allow_changed_spec,
            models=args.model,
            interpret=args.interpret,
            events=printer,
        )
    except DurableError as exc:
        print(f"mcec run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    finally:
        if printer is not None:
            printer.close()
    out.write(dumps(payload) + "\n")
    if args.trace is not None:  # the run as its records have it, every resumed segment included
        from mcec.durable import show_tree as recorded_tree

        out.flush()
        show_tree(recorded_tree(str(payload["run_id"]), db=args.db)[1], args.trace, sys.stderr)
    # a run that waits for people did not fail: it stops until they answer (`mcec runs answer`)
    return 0 if payload.get("ok") or payload.get("status") == "waiting" else EXIT_ERRORS


def _enqueue_durable(args: argparse.Namespace, out: TextIO) -> int:
    """``mcec run --durable --queue NAME``: enqueue the run for a worker; print ``{"run_id",
    "status": "enqueued", "queue"}`` (``--wait``: the Outcome once a worker has run it)."""
    import json

    from mcec.durable import DurableError, enqueue, result
    from mcec.run.runner import dumps

    if args.allow_changed_spec:
        print("mcec run: --allow-changed-spec goes with resuming a run here, not with --queue", file=sys.stderr)
        return EXIT_USAGE
    try:
        queued = enqueue(args.file, args.pipeline, args.input, queue=args.queue, run_id=args.run_id, db=args.db,
                         state_json=args.state, models=args.model, interpret=args.interpret)
        if not args.wait:
            out.write(json.dumps(queued) + "\n")
            return 0
        payload = result(queued["run_id"], db=args.db, wait=True)
    except DurableError as exc:
        print(f"mcec run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    assert payload is not None
    out.write(dumps(payload) + "\n")
    return 0 if payload.get("ok") or payload.get("status") == "waiting" else EXIT_ERRORS


#: The sub-commands this module adds to ``mcec`` (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_compile, add_build, add_run]

__all__ = ["COMMANDS", "add_build", "add_compile", "add_model_option", "add_run", "run_build", "run_compile", "run_run"]
