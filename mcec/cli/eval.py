"""``mcec eval SPEC PIPELINE DATASET``: score a pipeline over a dataset of cases.

Reads the dataset (``mcec.eval.dataset``: a bad case is a line ``DATASET:LINE:COL: error: …``
on stderr, one a problem, exit 1), compiles and loads the spec as ``mcec run`` does, runs
the pipeline on every case ``--repeat`` times (``--concurrency`` at once), scores each run
with the ``--evaluator`` functions and ``--judge`` pipelines, and writes the report: a table
on stdout, ``report.json`` and ``report.html`` in ``--out`` (beside ``results.sqlite``, the
finished runs a killed eval resumes from); with ``--record DIR`` every run it runs is recorded
there too (``mcec.eval.recordings``). Exit 0; 1 when a case got worse than
``--baseline`` (or the dataset or the spec has errors); 2 for a usage problem.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mcec.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Subparsers, color_wanted
from mcec.cli.compile import add_model_option

if TYPE_CHECKING:
    from mcec.check.typed import Program
    from mcec.eval.evaluators import JudgeEvaluator
    from mcec.eval.report import EvalReport
    from mcec.eval.runner import Price

__all__ = ["COMMANDS", "add_eval", "run_eval_command"]


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def add_eval(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec eval SPEC PIPELINE DATASET [--repeat K] [--concurrency N] [--baseline REPORT] …``."""
    command = subparsers.add_parser(
        "eval",
        help="score a pipeline over a dataset of cases (pass rate, pass@k, a baseline)",
        description="Run PIPELINE of SPEC on every case of DATASET (JSONL or YAML), score each run with the "
        "evaluators, and report: a table on stdout, report.json and report.html in --out.",
    )
    command.add_argument("spec", metavar="SPEC", help="the .mce spec")
    command.add_argument("pipeline", metavar="PIPELINE", help="the pipeline to evaluate")
    command.add_argument("dataset", metavar="DATASET", help="the cases: .jsonl (one a line) or .yaml")
    command.add_argument("--repeat", type=_at_least_one, default=1, metavar="K",
                         help="run every case K times: pass@K and pass^K (default 1)")
    command.add_argument("--concurrency", type=_at_least_one, default=4, metavar="N",
                         help="runs at once (default 4)")
    command.add_argument("--baseline", default=None, metavar="REPORT",
                         help="an earlier report.json: mark every case that got worse (exit 1 if any)")
    command.add_argument("--evaluator", action="append", default=[], metavar="MODULE:FUNCTION",
                         help="a Python evaluator (case, output) -> bool | float | label; repeatable")
    command.add_argument("--judge", action="append", default=[], metavar="SPEC:PIPELINE",
                         help="an LLM judge: a pipeline of a .mce spec whose typed verdict is scores; repeatable")
    add_model_option(command)
    command.add_argument("--price", action="append", default=[], metavar="NAME=PROMPT/COMPLETION",
                         help="model NAME's price in USD per million prompt / completion tokens (NAME may be `*`); "
                         "repeatable; without one, cost is not shown")
    command.add_argument("--state", default=None, metavar="JSON", help="the state every run starts from (default: S())")
    command.add_argument("--out", default=None, metavar="DIR",
                         help="where report.json, report.html and results.sqlite go "
                         "(default: .mcec/eval/PIPELINE-DATASET)")
    command.add_argument("--fresh", action="store_true", help="forget the stored runs: run every case again")
    command.add_argument("--record", default=None, metavar="DIR",
                         help="record every run the eval runs to DIR, one CASE.mcerun.json (CASE.K.mcerun.json with "
                         "--repeat) a run, each replayable by `mcec replay` (runs read back from the results file "
                         "are not run, so not recorded: --fresh records every case)")
    command.set_defaults(func=run_eval_command)


def run_eval_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``mcec eval`` (see the module docstring)."""
    try:
        import pydantic_evals  # noqa: F401
        import jinja2  # noqa: F401
    except ImportError as exc:
        print(f"mcec eval: {exc.name} is missing: install mcec's eval extra (pip install 'mcec[eval]')", file=sys.stderr)
        return EXIT_USAGE
    return _run(args, out)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    import sqlite3

    from agentmonad.spec import InputError

    from mcec.cli.compile import compile_to_run, load_compiled
    from mcec.eval.dataset import DatasetError, load_dataset
    from mcec.eval.evaluators import EvaluatorError, python_evaluator
    from mcec.eval.recordings import EvalRecorder, RecordingClash
    from mcec.eval.report import ReportError, build_report, read_report
    from mcec.eval.runner import EvalRun, Target, run_eval, run_name
    from mcec.eval.store import ResultStore
    from mcec.run.pyobjects import python_type

    spec = Path(args.spec)
    result = compile_to_run(spec)  # also puts the working directory and the spec's root on sys.path
    if isinstance(result, int):
        return result
    program = result.program
    assert program is not None
    declared = {p.name: p for p in program.pipelines}
    if args.pipeline not in declared:
        print(f"mcec eval: {spec} has no pipeline `{args.pipeline}` (pipelines: {', '.join(sorted(declared))})",
              file=sys.stderr)
        return EXIT_USAGE
    module = load_compiled(result)
    if isinstance(module, int):
        return module
    signature = declared[args.pipeline].sig
    input_type, output_type = python_type(signature.input), python_type(signature.output)
    try:
        cases = load_dataset(Path(args.dataset), input_type, output_type)
    except OSError as exc:
        print(f"mcec eval: cannot read {args.dataset}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except DatasetError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_ERRORS
    try:
        prices = _prices(args.price)
        judges = [_judge(reference) for reference in args.judge]
        options = _model_options(args.model, [program, *(j[1] for j in judges)])
        llm = _llm(program, options)
        for judge, judge_program in judges:
            judge.llm = _llm(judge_program, options)
        state = _state(program, args.state)
        python = [python_evaluator(reference) for reference in args.evaluator]
        baseline = read_report(Path(args.baseline)) if args.baseline is not None else None
        recorder = None
        if args.record is not None:
            recorder = EvalRecorder(Path(args.record), module, spec=args.spec, pipeline=args.pipeline,
                                    models=tuple(_for_program(options, program)), repeats=args.repeat, state=state)
            recorder.check_names(str(loaded.case.name) for loaded in cases)
            _writable(Path(args.record))
    except (_Usage, EvaluatorError, ReportError, InputError, RecordingClash) as exc:
        print(f"mcec eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # a Python evaluator is given the dataset's case, whatever run of it it scores
    case_names = {
        run_name(str(loaded.case.name), index, args.repeat): str(loaded.case.name)
        for loaded in cases
        for index in range(1, args.repeat + 1)
    }
    for evaluator in python:
        evaluator.case_names = case_names
    digest = _digest(args, program, [j[1] for j in judges])
    out_dir = Path(args.out) if args.out is not None else Path(".mcec") / "eval" / f"{args.pipeline}-{Path(args.dataset).stem}"
    try:
        store = ResultStore(out_dir / "results.sqlite", input_type, output_type)
    except (OSError, sqlite3.Error) as exc:
        print(f"mcec eval: cannot use {out_dir / 'results.sqlite'}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.fresh:
            store.forget()
        plan = EvalRun(
            name=args.pipeline, cases=cases, repeat=args.repeat, concurrency=args.concurrency, fingerprint=digest,
            target=Target(getattr(module, args.pipeline), state, llm, prices, recorder),
            evaluators=[*python, *(j[0] for j in judges)], store=store, judge_prices=prices,
        )
        runs, resumed = run_eval(plan)
    finally:
        store.close()
    if recorder is not None:
        print(f"mcec eval: recorded {len(runs) - resumed} run{'s' if len(runs) - resumed != 1 else ''} in {args.record}"
              + (f"; {resumed} read back from the results file {'were' if resumed != 1 else 'was'} not run, so not "
                 f"recorded (--fresh runs and records every case)" if resumed else ""), file=sys.stderr)
    report = build_report(
        spec=str(spec), pipeline=args.pipeline, dataset=str(args.dataset), evaluators=[*args.evaluator, *args.judge],
        fingerprint=digest, cases=cases, repeat=args.repeat, runs=runs, resumed=resumed, baseline=baseline,
        baseline_name=args.baseline,
    )
    return _write(report, out_dir, out)


def _digest(args: argparse.Namespace, program: Program, judges: list[Program]) -> str:
    """The fingerprint stored runs are keyed by (with each case's own digest): see mcec.eval.store."""
    from mcec.eval.runner import eval_fingerprint
    from mcec.fingerprint import fingerprint

    return eval_fingerprint({
        "scheme": "mcec-eval/1",
        "spec": fingerprint(program).digest,
        "pipeline": args.pipeline,
        "evaluators": args.evaluator,
        "judges": [[ref, fingerprint(judge).digest] for ref, judge in zip(args.judge, judges)],
        "models": sorted(args.model),
        "prices": sorted(args.price),
        "state": args.state,
    })


def _write(report: EvalReport, out_dir: Path, out: TextIO) -> int:
    """Write report.json and report.html, print the table; the exit status (1: a case got worse)."""
    from mcec.eval.render import render_html, render_terminal

    try:
        (out_dir / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        (out_dir / "report.html").write_text(render_html(report), encoding="utf-8")
    except OSError as exc:
        print(f"mcec eval: cannot write the report in {out_dir}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    render_terminal(report, out, color=color_wanted(out))
    print(f"mcec eval: wrote {out_dir / 'report.json'} and {out_dir / 'report.html'}", file=sys.stderr)
    return EXIT_ERRORS if report.summary.worse else EXIT_OK


class _Usage(Exception):
    """A usage problem of ``mcec eval`` (exit 2)."""


def _writable(folder: Path) -> None:
    """Make ``--record``'s folder (before any run, so a folder that cannot be is said at once)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _Usage(f"--record {folder}: cannot make the folder: {exc.strerror or exc}") from None
    if not folder.is_dir():
        raise _Usage(f"--record {folder}: not a folder")


_PRICE = re.compile(r"^(?P<name>[^=]+)=(?P<prompt>[0-9.]+)/(?P<completion>[0-9.]+)$")


def _prices(options: list[str]) -> dict[str, Price]:
    from mcec.eval.runner import Price

    prices: dict[str, Price] = {}
    for option in options:
        match = _PRICE.match(option)
        try:
            if match is None:
                raise ValueError
            prices[match["name"]] = Price(float(match["prompt"]), float(match["completion"]))
        except ValueError:
            raise _Usage(f"--price {option}: expected NAME=PROMPT/COMPLETION, USD per million tokens") from None
    return prices


def _judge(reference: str) -> tuple[JudgeEvaluator, Program]:
    """The judge ``SPEC:PIPELINE``: its evaluator, and its checked program."""
    from mcec.cli.compile import compile_to_run, load_compiled
    from mcec.eval.evaluators import JudgeEvaluator, judge_input_problem, verdict_fields
    from mcec.run.pyobjects import python_type

    spec_text, _, pipeline = reference.rpartition(":")
    if not spec_text or not pipeline:
        raise _Usage(f"--judge {reference}: expected SPEC:PIPELINE")
    result = compile_to_run(Path(spec_text))
    if isinstance(result, int):
        raise _Usage(f"--judge {reference}: the spec has errors (above)")
    program = result.program
    assert program is not None
    declared = {p.name: p for p in program.pipelines}
    if pipeline not in declared:
        raise _Usage(f"--judge {reference}: {spec_text} has no pipeline `{pipeline}` "
                     f"(pipelines: {', '.join(sorted(declared))})")
    signature = declared[pipeline].sig
    input_type, verdict_type = python_type(signature.input), python_type(signature.output)
    problem = judge_input_problem(input_type) or verdict_fields(verdict_type)
    if problem is not None:
        raise _Usage(f"--judge {reference}: {problem}")
    module = load_compiled(result)
    if isinstance(module, int):
        raise _Usage(f"--judge {reference}: the spec's Python side does not load (above)")
    evaluator = JudgeEvaluator(reference, pipeline=pipeline, run=getattr(module, pipeline), state=_state(program, None),
                               input_type=input_type)
    return evaluator, program


def _model_options(options: list[str], programs: list[Program]) -> list[str]:
    """``--model`` options, each checked to name a model one of the specs declares."""
    from agentmonad.llm.options import parse_model_option

    declared = {model.name for program in programs for model in program.models}
    for option in options:
        try:
            name, _ = parse_model_option(option)
        except (ValueError, ImportError) as exc:
            raise _Usage(f"--model {option}: {exc}") from None
        if name != "*" and name not in declared:
            raise _Usage(f"--model {option}: neither the spec nor a judge declares a model `{name}` "
                         f"(they declare {', '.join(sorted(declared)) or 'none'})")
    return options


def _for_program(options: list[str], program: Program) -> list[str]:
    declared = {model.name for model in program.models}
    return [o for o in options if o.partition("=")[0].strip() in declared or o.partition("=")[0].strip() == "*"]


def _llm(program: Program, options: list[str]) -> Any:
    from mcec.run.runner import RunError, llm_run_config

    try:
        return llm_run_config(program, _for_program(options, program)) if program.llms else None
    except RunError as exc:
        raise _Usage(str(exc)) from None


def _state(program: Program, state_json: str | None) -> Any:
    from agentmonad.spec import validated

    from mcec.run.pyobjects import python_type

    if program.state is None:
        if state_json is not None:
            raise _Usage("--state: the spec declares no state")
        return None
    state_type = python_type(program.state)
    if state_json is not None:
        return validated(state_type, state_json, "--state")
    try:
        return state_type()
    except Exception as exc:
        raise _Usage(f"the state type cannot be built without arguments ({exc}); pass --state") from None


COMMANDS = [add_eval]
