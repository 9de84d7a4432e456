"""``mcec runs list|show|resume|cancel|waiting|answer|expire|export``: the runtime's ``runs``
commands (:mod:`agentmonad.cli.runs`), with mcec's loader in charge (a run started from a spec is
compiled here to resume), and ``export``, which needs the compiler (docs/language.md §17).

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


#: The sub-commands this module adds (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_runs]
