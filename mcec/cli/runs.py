"""``mcec runs list|show|resume|cancel|waiting|answer|expire|upgrade``: the runtime's ``runs``
commands (:mod:`agentmonad.cli.runs`), with mcec's loader in charge (a run started from a spec is
compiled here to resume), and ``runs upgrade``, which needs the compiler: it moves runs in flight
to a new version of their spec (:mod:`mcec.durable.upgrade`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from agentmonad.cli.runs import add_runs as _add_runs
from agentmonad.cli.runs import run_runs as _run_runs

from mcec.cli.common import Subparsers

__all__ = ["COMMANDS", "add_runs", "run_runs"]


def add_runs(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec runs COMMAND``."""
    _add_runs(subparsers, "mcec", run_runs, _add_upgrade)


def _add_upgrade(actions: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec runs upgrade --to SPEC [ID… | --all] [--dry-run] [--db URL]``."""
    text = "move runs in flight to a new version of their spec, where a dry replay of each shows the new version takes it"
    parser = actions.add_parser("upgrade", help=text, description=text)
    parser.add_argument("run_ids", nargs="*", metavar="ID", help="the runs to move")
    parser.add_argument("--to", required=True, metavar="SPEC", help="the new version of the runs' spec")
    parser.add_argument("--all", action="store_true", help="every run that has not ended")
    parser.add_argument("--dry-run", action="store_true", help="say what would move; change nothing")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
    parser.set_defaults(func=run_runs, program="mcec")


def run_runs(args: argparse.Namespace, out: TextIO) -> int:
    """Run one ``mcec runs`` action (importing :mod:`mcec.durable` puts its loader in charge)."""
    import mcec.durable  # noqa: F401

    if args.action == "upgrade":
        return _upgrade(args, out)
    return _run_runs(args, out)


def _upgrade(args: argparse.Namespace, out: TextIO) -> int:
    """Move the runs; print one line per run (moved, or stays: where and why). Exit 0 when every
    named run moved (or would), 1 when some stay, 2 for bad input."""
    from agentmonad.durable.errors import DurableError

    from mcec.durable.upgrade import upgrade

    try:
        done = upgrade(args.to, args.run_ids, all_runs=args.all, dry_run=args.dry_run, db=args.db)
    except DurableError as exc:
        print(f"mcec runs upgrade: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        out.write(json.dumps([d.as_dict() for d in done], indent=2) + "\n")
    else:
        for d in done:
            out.write(("(dry run) " if args.dry_run else "") + d.shown + "\n")
    return 0 if all(d.moved for d in done) else 1


#: The sub-commands this module adds (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_runs]
