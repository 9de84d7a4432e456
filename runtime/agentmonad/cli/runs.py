"""``runs list|show|resume|cancel|waiting|answer|expire``: the durable runs in a run database
(docs/language.md §13), as ``python -m agentmonad runs …`` and ``mcec runs …`` both give them.

Bad input (an unknown run id, an unreachable database, a spec changed since the run started) is
a message on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import TextIO

from .common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, Subparsers, dumps

__all__ = ["add_runs", "run_runs"]


def add_runs(subparsers: Subparsers[argparse.ArgumentParser], program: str,
             handler: Callable[[argparse.Namespace, TextIO], int] | None = None) -> Subparsers[argparse.ArgumentParser]:
    """``PROGRAM runs COMMAND`` (``program``: how messages name the command line, ``mcec`` or
    ``python -m agentmonad``; ``handler``: what runs an action, :func:`run_runs` unless given); its
    actions, for a command line to add its own to."""
    command = subparsers.add_parser(
        "runs", help="list, show, resume, cancel and answer durable runs", description="The durable runs in a run database."
    )
    actions = command.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_text: str, with_id: bool) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_text, description=help_text)
        if with_id:
            parser.add_argument("run_id", metavar="ID", help="the run's id")
        parser.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
        parser.set_defaults(func=handler or run_runs, program=program)
        return parser

    action("list", "every run: id, spec, pipeline, status, started, last step", False).add_argument(
        "--format", choices=("text", "json"), default="text"
    )
    action("show", "every recorded effect of a run, in order", True).add_argument(
        "--format", choices=("text", "json"), default="text"
    )
    resume = action("resume", "resume a run from its last completed effect; print its Outcome", True)
    resume.add_argument("--allow-changed-spec", action="store_true", help="resume although the spec changed")
    action("cancel", "cancel a run (a process running it stops at its next effect)", True)
    waiting = action("waiting", "every open question of every waiting run", False)
    waiting.add_argument("--format", choices=("text", "json"), default="json")
    waiting.add_argument("--about", action="append", default=None, metavar="FIELD=VALUE",
                         help="only the questions whose payload has FIELD equal to VALUE (repeatable: all must hold)")
    answer = action("answer", "answer an open question of a waiting run and resume it; print its Outcome", True)
    answer.add_argument("name", metavar="NAME", help="the ask step's name")
    answer.add_argument("--value", required=True, metavar="JSON", help="the answer, as JSON for the answer type")
    answer.add_argument("--index", default=None, metavar="I[,J…]",
                        help="the element index of the question inside each/par (when it is asked more than once)")
    answer.add_argument("--about", action="append", default=None, metavar="FIELD=VALUE",
                        help="the question whose payload has FIELD equal to VALUE, e.g. --about order=A-1 (when it is "
                        "asked more than once; repeatable: all must hold)")
    answer.add_argument("--allow-changed-spec", action="store_true", help="resume although the spec changed")
    action("expire", "resume every waiting run whose question's deadline (within S) passed: it goes on with NoAnswer",
           False)
    return actions


def run_runs(args: argparse.Namespace, out: TextIO) -> int:
    """Run one ``runs`` action."""
    from ..durable.codec import RecordError
    from ..durable.errors import DurableError

    handlers: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
        "list": _list, "show": _show, "resume": _resume, "cancel": _cancel, "waiting": _waiting, "answer": _answer,
        "expire": _expire,
    }
    try:
        return handlers[args.action](args, out)
    except (DurableError, RecordError) as exc:  # a record error: a row of the run database is not one
        print(f"{args.program} runs {args.action}: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _list(args: argparse.Namespace, out: TextIO) -> int:
    from ..durable.runs import list_runs

    runs = [r.as_dict() for r in list_runs(db=args.db)]
    if args.format == "json":
        out.write(json.dumps(runs, indent=2) + "\n")
        return EXIT_OK
    columns = ("run_id", "spec", "pipeline", "status", "started", "last_step")
    rows = [[str(run[c] if run[c] is not None else "-") for c in columns] for run in runs]
    _table(out, [c.replace("_", " ") for c in columns], rows)
    return EXIT_OK


def _table(out: TextIO, header: list[str], rows: list[list[str]]) -> None:
    # a cell is data from the run database: a control character in it must not start a line of its own
    rows = [[_printable(cell) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    for row in [header, *rows]:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")


def _printable(text: str) -> str:
    """``text`` with every unprintable character escaped (``\\n``, ``\\x1b``…)."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _show(args: argparse.Namespace, out: TextIO) -> int:
    """The run as ``mcec run --trace`` draws it: each recorded effect under its ``par``/``each``
    element, with its duration, outcome, tokens, identity and the state after it."""
    from ..durable.runs import show, show_tree
    from ..timeline import render_text

    if args.format == "json":
        out.write(json.dumps(show(args.run_id, db=args.db), indent=2) + "\n")
        return EXIT_OK
    shown, tree = show_tree(args.run_id, db=args.db)
    spec = str(shown["spec"]) if shown["spec"] else "?"  # absolute, as `mcec runs list` names it
    out.write(f"run {shown['run_id']}: {shown['pipeline']} of {spec} ({shown['status']}, started {shown['started']})\n")
    out.write(render_text(tree) + "\n")
    return EXIT_OK


def _resume(args: argparse.Namespace, out: TextIO) -> int:
    from ..durable.runs import resume

    payload = resume(args.run_id, db=args.db, allow_changed_spec=args.allow_changed_spec)
    out.write(dumps(payload) + "\n")
    return EXIT_OK if payload.get("ok") or payload.get("status") == "waiting" else EXIT_ERRORS


def _waiting(args: argparse.Namespace, out: TextIO) -> int:
    from ..durable.runs import waiting

    questions = waiting(db=args.db, about=args.about)
    if args.format == "json":
        out.write(json.dumps(questions, indent=2) + "\n")
        return EXIT_OK
    rows = [[q["run_id"], q["name"], ",".join(map(str, q["index"])) or "-", str(q["site"] or "-"),
             (str(q["deadline"]) + (" (expired)" if q["expired"] else "")) if q.get("deadline") else "-",
             json.dumps(q["question"], separators=(",", ":"))[:60]] for q in questions]
    _table(out, ["run id", "question", "index", "site", "deadline", "payload"], rows)
    return EXIT_OK


def _answer(args: argparse.Namespace, out: TextIO) -> int:
    from ..durable.runs import DurableError, answer

    try:
        index = [int(i) for i in args.index.split(",")] if args.index is not None else None
    except ValueError:
        raise DurableError(f"--index {args.index}: element indices are integers, outermost first (e.g. 0 or 1,2)") from None
    payload = answer(args.run_id, args.name, args.value, index=index, db=args.db,
                     allow_changed_spec=args.allow_changed_spec, about=args.about)
    out.write(dumps(payload) + "\n")
    return EXIT_OK if payload.get("ok") or payload.get("status") == "waiting" else EXIT_ERRORS


def _expire(args: argparse.Namespace, out: TextIO) -> int:
    """Resume the waiting runs whose questions expired; print each one's id and status now, then
    its Outcome JSON (what ``mcec runs resume`` prints, on one line: one run's per line pair)."""
    from ..durable.runs import DurableError, list_runs, result, resume_expired

    resumed = resume_expired(db=args.db)
    statuses = {r.run_id: r.status for r in list_runs(db=args.db)} if resumed else {}
    for run_id in resumed:
        out.write(f"resumed run {run_id}: {statuses.get(run_id, '?')}\n")
        try:  # what the resume ended with, as its run recorded it (no waiting: it has ended or waits again)
            outcome = result(run_id, db=args.db, wait=False)
        except DurableError as exc:
            outcome = {"ok": False, "failed": str(exc), "run_id": run_id}
        out.write(json.dumps(outcome, ensure_ascii=False) + "\n")
    return EXIT_OK


def _cancel(args: argparse.Namespace, out: TextIO) -> int:
    from ..durable.runs import cancel

    cancel(args.run_id, db=args.db)
    out.write(f"cancelled run {args.run_id}\n")
    return EXIT_OK

