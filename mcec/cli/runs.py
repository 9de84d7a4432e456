"""``mcec runs list|show|resume|cancel|waiting|answer|expire|export|upgrade``: the runtime's
``runs`` commands (:mod:`agentmonad.cli.runs`), with mcec's loader in charge (a run started from a
spec is compiled here to resume), and two that need the compiler: ``export`` (docs/language.md
§17) and ``upgrade``, which moves runs in flight to a new version of their spec
(:mod:`mcec.durable.upgrade`).

Bad input (an unknown run id, an unreachable database, a spec changed since the run started) is
a message on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from agentmonad.cli.runs import add_runs as _add_runs
from agentmonad.cli.runs import run_runs as _run_runs

from mcec.cli.common import EXIT_OK, EXIT_USAGE, Subparsers

__all__ = ["COMMANDS", "add_runs", "run_runs"]


def add_runs(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec runs COMMAND``."""
    actions = _add_runs(subparsers, "mcec", run_runs)
    export = actions.add_parser("export", help="write a run that ended as a recording, for `mcec replay` (docs/language.md §17)",
                                description="Write a run that ended as a recording, for `mcec replay` (docs/language.md §17).")
    export.add_argument("run_id", metavar="ID", help="the run's id")
    export.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="the recording to write (a .mcerun.json file)")
    export.set_defaults(func=_export_command, program="mcec")
    _add_upgrade(actions)


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
    parser.set_defaults(func=_upgrade, program="mcec")


def run_runs(args: argparse.Namespace, out: TextIO) -> int:
    """Run one ``mcec runs`` action (importing :mod:`mcec.durable` puts its loader in charge)."""
    import mcec.durable  # noqa: F401

    return _run_runs(args, out)


def _export_command(args: argparse.Namespace, out: TextIO) -> int:
    """``mcec runs export ID -o FILE``: the recording written; its path and effect count printed."""
    from mcec.durable import DurableError
    from mcec.durable.export import export

    try:
        recording = export(args.run_id, db=args.db)
    except DurableError as exc:
        print(f"mcec runs export: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        recording.write(args.output)
    except OSError as exc:
        print(f"mcec runs export: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    out.write(json.dumps({"run_id": args.run_id, "recording": args.output, "effects": len(recording.effects)}) + "\n")
    return EXIT_OK


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
