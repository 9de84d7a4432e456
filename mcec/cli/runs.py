"""``mcec runs list|show|resume|cancel|waiting|answer|expire``: the runtime's ``runs`` commands
(:mod:`agentmonad.cli.runs`), with mcec's loader in charge (a run started from a spec is compiled
here to resume)."""

from __future__ import annotations

import argparse
from typing import TextIO

from agentmonad.cli.runs import add_runs as _add_runs
from agentmonad.cli.runs import run_runs as _run_runs

from mcec.cli.common import Subparsers

__all__ = ["COMMANDS", "add_runs", "run_runs"]


def add_runs(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec runs COMMAND``."""
    _add_runs(subparsers, "mcec", run_runs)


def run_runs(args: argparse.Namespace, out: TextIO) -> int:
    """Run one ``mcec runs`` action (importing :mod:`mcec.durable` puts its loader in charge)."""
    import mcec.durable  # noqa: F401

    return _run_runs(args, out)


#: The sub-commands this module adds (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_runs]
