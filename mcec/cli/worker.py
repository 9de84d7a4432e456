"""``mcec worker SPEC... --db URL [--queue NAME] [--concurrency N]``: serve the durable runs
enqueued for the specs (docs/language.md "Workers").

Bad input (a spec that does not check, an unreachable database, a bad number) is a message on
stderr and exit status 2, never a traceback; a worker stopped by SIGTERM or SIGINT exits 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TextIO

from mcec.cli.common import EXIT_OK, EXIT_USAGE, Subparsers, add_otel_option, with_otel

__all__ = ["COMMANDS", "add_worker", "run_worker"]


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type: a number of ``kind`` more than 0."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text}: give a number more than 0")
        return value

    return parse


def add_worker(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec worker``."""
    command = subparsers.add_parser(
        "worker", help="run the durable runs enqueued for these specs (a long-running process)",
        description="Serve the durable runs enqueued (`mcec run --durable --queue`) for the given specs' versions, "
        "from the run database's queues, until SIGTERM or SIGINT.",
    )
    command.add_argument("specs", nargs="+", metavar="SPEC", help="the .mce specs whose runs this worker runs")
    command.add_argument("--db", default=None, metavar="URL",
                         help="the run database: postgresql://… shared by every worker (default: $MCEC_DB, else "
                         ".mcec/runs.sqlite, for workers on this machine only)")
    command.add_argument("--queue", default="default", metavar="NAME", help="the queue to serve (default: default)")
    command.add_argument("--concurrency", type=_positive(int), default=8, metavar="N",
                         help="runs at once in this worker (default: 8)")
    command.add_argument("--drain-seconds", type=float, default=30.0, metavar="S",
                         help="on SIGTERM, how long runs in flight may take to finish (default: 30)")
    command.add_argument("--heartbeat-seconds", type=_positive(float), default=1.0, metavar="S",
                         help="how often the worker says it is alive and looks for dead workers' runs (default: 1)")
    command.add_argument("--stale-after", type=_positive(float), default=10.0, metavar="S",
                         help="a worker silent this long is dead: its runs are re-enqueued (default: 10)")
    command.add_argument("--poll-seconds", type=_positive(float), default=1.0, metavar="S",
                         help="how often each queue is polled for runs (default: 1)")
    add_otel_option(command)
    command.set_defaults(func=run_worker)


def run_worker(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``mcec worker`` until it is stopped (with ``--otel``, its runs' spans exported)."""
    return with_otel("worker", args, lambda: _run_worker(args, out))


def _run_worker(args: argparse.Namespace, out: TextIO) -> int:
    from agentmonad.durable.worker import serve

    from mcec.durable import DurableError, served_versions

    if args.drain_seconds < 0:
        print(f"mcec worker: --drain-seconds {args.drain_seconds}: give 0 or more seconds", file=sys.stderr)
        return EXIT_USAGE
    try:
        serve(served_versions(args.specs), db=args.db, queue=args.queue, concurrency=args.concurrency, drain_seconds=args.drain_seconds,
              heartbeat_seconds=args.heartbeat_seconds, stale_after=args.stale_after, poll_seconds=args.poll_seconds)
    except DurableError as exc:
        print(f"mcec worker: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


#: The sub-commands this module adds (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_worker]
