"""``mcec replay FILE``, and ``mcec run … --record FILE`` (docs/language.md §17): recorded runs.

A replay prints ``{"replayed": N, "performed": M, "same_outcome": bool, "outcome": …}`` (effects
answered from the file, effects run for real) and exits 0 when the
Outcome is the recorded one (or, with ``--allow-different-outcome``, whatever it is: the
difference is shown on stderr); 1 when it differs, or when the run asked for an effect the
recording does not hold, or holds as another effect or with a value of another type (a
diagnostic, MCE040, at the spec line of that effect); 2 for a file that is not a recording or
a spec that does not check.
"""

from __future__ import annotations

import argparse
import sys
import types as pytypes
from pathlib import Path
from typing import Any, TextIO

from mcec.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Reporter, Subparsers, color_wanted
from mcec.render import DEFAULT_LIMIT

__all__ = ["COMMANDS", "add_replay", "run_replay", "run_recorded"]


def add_replay(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec replay FILE [--spec SPEC] [--interpret] [--allow-different-outcome] [--live-models | --only-tools]``."""
    from mcec.cli.compile import add_model_option

    command = subparsers.add_parser(
        "replay",
        help="run a recorded run again, every effect answered from its recording (no network)",
        description="Run a recording's pipeline again on its input, every effect answered from the recording "
        "(`mcec run --record FILE`, `mcec runs export ID -o FILE`); exit 0 when the Outcome is the recorded one.",
    )
    command.add_argument("file", metavar="FILE", help="the recording (a .mcerun.json file)")
    command.add_argument("--spec", default=None, metavar="SPEC", help="the spec to run (default: the recorded one)")
    runner = command.add_mutually_exclusive_group()
    runner.add_argument("--interpret", action="store_true",
                        help="run with the reference interpreter (default: as the run was recorded)")
    runner.add_argument("--compiled", action="store_true", help="run the compiled code (default: as recorded)")
    command.add_argument("--allow-different-outcome", action="store_true",
                         help="pass whatever the Outcome: show how it differs from the recorded one")
    which = command.add_mutually_exclusive_group()
    which.add_argument("--live-models", action="store_true",
                       help="call the models for real (as --model says, else as recorded) and show each answer that "
                       "differs from the recorded one")
    which.add_argument("--only-tools", action="store_true",
                       help="answer only the tool calls from the recording: steps and models run for real")
    add_model_option(command)
    command.set_defaults(func=run_replay)


def _diagnostic_reporter() -> Reporter:
    return Reporter(sys.stderr, "text", DEFAULT_LIMIT, color_wanted(sys.stderr))


def run_replay(args: argparse.Namespace, out: TextIO) -> int:
    """Replay one recording (see the module docstring)."""
    from agentmonad.record import Recording, RecordingError
    from agentmonad.spec import InputError

    from mcec.cli.compile import compile_to_run, ensure_importable, load_compiled
    from mcec.run.recorded import outcome_diff, replay_diagnostic, replay_run, resolve_spec
    from mcec.run.runner import RunError, dumps, llm_run_config, pipeline_site

    try:
        recording = Recording.read(args.file)
    except RecordingError as exc:
        print(f"mcec replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    spec = resolve_spec(recording, Path(args.file), args.spec)
    ensure_importable(spec)
    result = compile_to_run(spec)
    if isinstance(result, int):
        return result
    assert result.program is not None
    module = load_compiled(result)
    if isinstance(module, int):
        return module
    interpreted = args.interpret or (recording.runner == "interpreted" and not args.compiled)
    live = ("model",) if args.live_models else ("model", "step") if args.only_tools else ()
    try:
        llm = llm_run_config(result.program, args.model or list(recording.models)) if live else None
        replayed = replay_run(module, result.program, recording, interpreted=interpreted, live=live, llm=llm,
                              site=pipeline_site(result.program, recording.pipeline))
    except (RunError, InputError) as exc:
        print(f"mcec replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for difference in replayed.differences:  # first: they say why the run went elsewhere
        print(f"mcec replay: effect {difference.key} ({difference.kind} at {difference.site}) gave another result than "
              f"recorded:\n  recorded: {difference.recorded}\n  now:      {difference.now}", file=sys.stderr)
    failure = replayed.failure
    if failure is not None:
        from agentmonad import Defect

        assert isinstance(replayed.ran.result, Defect)
        reporter = _diagnostic_reporter()
        reporter.add([replay_diagnostic(failure, replayed.ran.result, result.program, recording)], result.source)
        reporter.flush()
        return EXIT_ERRORS
    out.write(dumps({"replayed": replayed.replayed, "performed": replayed.performed, "same_outcome": replayed.same, "outcome": replayed.ran.encoded}) + "\n")
    if not replayed.same:
        print(outcome_diff(dict(recording.outcome), replayed.ran.encoded), file=sys.stderr)
        return EXIT_OK if args.allow_different_outcome else EXIT_ERRORS
    return EXIT_OK


def run_recorded(args: argparse.Namespace, out: TextIO, result: Any, module: pytypes.ModuleType,
                 value: Any, state: Any, llm: Any) -> int:
    """``mcec run … --record FILE``: run as ``mcec run`` does, print the report, write the recording."""
    from agentmonad.human import ConsoleHuman
    from agentmonad.record import RecordingError

    from mcec.run.recorded import record_run
    from agentmonad.report import report

    from mcec.run.runner import defect_report, dumps, pipeline_site

    program = result.program
    human = ConsoleHuman() if program.asks else None
    ran, recording = record_run(
        module, program, spec=args.file, pipeline=args.pipeline, input_json=args.input, state_json=args.state,
        state=state, value=value, interpreted=args.interpret, llm=llm, models=tuple(args.model), human=human,
        site=pipeline_site(program, args.pipeline),
    )
    from agentmonad import Defect

    shown = defect_report(ran.result) if isinstance(ran.result, Defect) else report(ran.result)
    out.write(dumps(shown.payload) + "\n")  # the run happened: its report is printed whatever becomes of the file
    try:
        recording.write(args.record)
    except (OSError, RecordingError) as exc:
        print(f"mcec run: --record {args.record}: cannot write it: {getattr(exc, 'strerror', None) or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    return shown.status


COMMANDS = [add_replay]
