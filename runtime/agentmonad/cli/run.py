"""``python -m agentmonad run MODULE:PIPELINE`` and ``python -m agentmonad worker MODULE…``: a
compiled module's pipelines run on a production machine, with the runtime alone."""

from __future__ import annotations

import argparse
import importlib
import sys
import types as pytypes
from typing import TextIO

from .common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Subparsers, dumps

__all__ = ["TargetError", "add_run", "add_worker", "imported", "target"]


class TargetError(Exception):
    """A ``MODULE[:PIPELINE]`` that names nothing runnable (the message says why)."""


def imported(name: str) -> pytypes.ModuleType:
    """The compiled module ``name``, imported from the working directory too (as ``python -m``
    would); :class:`TargetError` when it does not import or mcec did not compile it."""
    if "" not in sys.path:
        sys.path.insert(0, "")
    try:
        module = importlib.import_module(name)
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        raise TargetError(f"cannot import {name}: {type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")) from None
    if not hasattr(module, "SPEC_INFO"):
        raise TargetError(f"{name} is not a module mcec compiled (it has no SPEC_INFO); compile the spec with "
                          "`mcec compile` and name the generated module")
    return module


def target(text: str) -> tuple[str, str]:
    """``MODULE:PIPELINE`` as its two names (:class:`TargetError`: it is not of that form)."""
    module, colon, pipeline = text.partition(":")
    if not colon or not module or not pipeline:
        raise TargetError(f"{text}: name a pipeline of a compiled module as MODULE:PIPELINE (e.g. billing_mce:refund)")
    return module, pipeline


def add_run(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``run MODULE:PIPELINE --input JSON [--durable …]``."""
    command = subparsers.add_parser("run", help="run a pipeline of a compiled module; print its Outcome as JSON",
                                    description="Run a pipeline of a compiled module; print its Outcome as JSON.")
    command.add_argument("target", metavar="MODULE:PIPELINE", help="the generated module's import name and a pipeline")
    command.add_argument("--input", required=True, metavar="JSON", help="the pipeline's input, as JSON")
    command.add_argument("--state", default=None, metavar="JSON", help="the starting state, as JSON")
    command.add_argument("--model", action="append", default=[], metavar="NAME=VALUE",
                         help="a model's backend: NAME=openai:MODEL, NAME=py:MODULE:ATTR… (repeatable)")
    durable = command.add_argument_group("durable runs (docs/language.md §13)")
    durable.add_argument("--durable", action="store_true", help="record every effect: a killed run resumes where it was")
    durable.add_argument("--run-id", default=None, metavar="ID", help="the run's id (again: resume that run)")
    durable.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
    durable.add_argument("--allow-changed-spec", action="store_true", help="resume although the module changed")
    durable.add_argument("--queue", default=None, metavar="NAME", help="enqueue the run for a worker instead of running it here")
    durable.add_argument("--wait", action="store_true", help="with --queue: wait for the run's Outcome and print it")
    command.set_defaults(func=run_run)


def run_run(args: argparse.Namespace, out: TextIO) -> int:
    """Run (or enqueue) one pipeline; print its Outcome."""
    from ..durable.errors import DurableError

    try:
        name, pipeline = target(args.target)
        if not args.durable:
            for flag in ("run_id", "db", "queue"):
                if getattr(args, flag) is not None:
                    raise TargetError(f"--{flag.replace('_', '-')} goes with --durable")
            return _run_here(imported(name), pipeline, args, out)
        module = imported(name)
        if args.queue is not None:
            return _enqueue(module, pipeline, args, out)
        if args.wait:
            raise TargetError("--wait goes with --queue (a run without --queue runs here, and is waited for)")
        from ..durable.runs import run

        payload = run(module, pipeline, args.input, state_json=args.state, run_id=args.run_id, db=args.db,
                      allow_changed_spec=args.allow_changed_spec, models=args.model)
    except (TargetError, DurableError) as exc:
        print(f"{args.program} run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    out.write(dumps(payload) + "\n")
    return EXIT_OK if payload.get("ok") or payload.get("status") == "waiting" else EXIT_ERRORS


def _run_here(module: pytypes.ModuleType, pipeline: str, args: argparse.Namespace, out: TextIO) -> int:
    """A run in this process, recording nothing."""
    from ..durable.version import CompiledVersion, VersionError, llm_config_for
    from ..report import run_function
    from ..spec import InputError

    version = CompiledVersion.of(module)
    found = version.info.pipeline(pipeline)
    try:
        if found is None:
            raise InputError(f"{module.__name__} has no pipeline {pipeline!r} (pipelines: "
                             f"{', '.join(p.name for p in version.info.pipelines) or 'none'})")
        value, state = version.prepare(pipeline, args.input, args.state)
        llm = llm_config_for(version, list(args.model))
    except (InputError, VersionError) as exc:
        raise TargetError(str(exc)) from None
    result = run_function(found.function, pipeline, state, value, llm=llm, site=found.site)
    out.write(dumps(result.payload) + "\n")
    return result.status


def _enqueue(module: pytypes.ModuleType, pipeline: str, args: argparse.Namespace, out: TextIO) -> int:
    from ..durable.runs import enqueue, result

    if args.allow_changed_spec:
        raise TargetError("--allow-changed-spec goes with resuming a run here, not with --queue")
    queued = enqueue(module, pipeline, args.input, queue=args.queue, run_id=args.run_id, db=args.db,
                     state_json=args.state, models=args.model)
    if not args.wait:
        out.write(dumps(queued) + "\n")
        return EXIT_OK
    payload = result(queued["run_id"], db=args.db, wait=True)
    assert payload is not None
    out.write(dumps(payload) + "\n")
    return EXIT_OK if payload.get("ok") or payload.get("status") == "waiting" else EXIT_ERRORS


def add_worker(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``worker MODULE… [--queue NAME] …``."""
    command = subparsers.add_parser("worker", help="run the durable runs enqueued for compiled modules",
                                    description="Run the durable runs enqueued for these compiled modules until stopped.")
    command.add_argument("modules", nargs="+", metavar="MODULE", help="a compiled module's import name")
    command.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
    command.add_argument("--queue", default="default", metavar="NAME", help="the queue to serve (default: default)")
    command.add_argument("--concurrency", type=int, default=8, metavar="N", help="runs at once (default: 8)")
    command.add_argument("--drain-seconds", type=float, default=30.0, metavar="S",
                         help="on SIGTERM, how long runs in flight may finish (default: 30)")
    command.add_argument("--heartbeat-seconds", type=float, default=1.0, metavar="S", help="(default: 1)")
    command.add_argument("--stale-after", type=float, default=10.0, metavar="S",
                         help="a worker silent this long is dead: its runs are taken up (default: 10)")
    command.add_argument("--poll-seconds", type=float, default=1.0, metavar="S", help="(default: 1)")
    command.set_defaults(func=run_worker)


def run_worker(args: argparse.Namespace, out: TextIO) -> int:
    """Serve until stopped."""
    from ..durable.errors import DurableError
    from ..durable.version import CompiledVersion, VersionError
    from ..durable.worker import serve

    try:
        versions = [(name, CompiledVersion.of(imported(name))) for name in args.modules]
        serve(versions, db=args.db, queue=args.queue, concurrency=args.concurrency, drain_seconds=args.drain_seconds,
              heartbeat_seconds=args.heartbeat_seconds, stale_after=args.stale_after, poll_seconds=args.poll_seconds)
    except (TargetError, DurableError, VersionError) as exc:
        print(f"{args.program} worker: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK
