"""``mcec console [--db URL] [--host H] [--port P] [--token T]``: a web console over the run database
(docs/language.md §13): the runs, each run's timeline, and the questions people answer (§15).

Bad input (a database it cannot open, a port in use, a host beyond loopback without a token, the
``mcec[console]`` extra missing) is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import TextIO

from mcec.cli.common import EXIT_OK, EXIT_USAGE, Subparsers

__all__ = ["COMMANDS", "add_console", "run_console"]

#: The port the console listens on by default.
DEFAULT_PORT = 8470


def add_console(subparsers: Subparsers[argparse.ArgumentParser]) -> None:
    """``mcec console``."""
    command = subparsers.add_parser(
        "console", help="a web console for durable runs and the people who answer them",
        description="Serve a web application over the run database: the runs (live), each run's timeline, source "
        "and Outcome, cancel and resume, and a form for each open question. Binds 127.0.0.1 unless told otherwise; "
        "any other host needs a token (--token or MCEC_CONSOLE_TOKEN). Needs the mcec[console] extra.",
    )
    command.add_argument("--db", default=None, metavar="URL", help="the run database (default: $MCEC_DB, else .mcec/runs.sqlite)")
    command.add_argument("--host", default="127.0.0.1", metavar="H", help="the address to bind (default 127.0.0.1)")
    command.add_argument("--port", default=DEFAULT_PORT, type=int, metavar="P",
                         help=f"the port (default {DEFAULT_PORT}; 0: any free port, printed)")
    command.add_argument("--token", default=None, metavar="T",
                         help="the token every request must carry (default: $MCEC_CONSOLE_TOKEN); needed beyond loopback")
    command.set_defaults(func=run_console)


def _fail(message: str) -> int:
    print(f"mcec console: {message}", file=sys.stderr)
    return EXIT_USAGE


def run_console(args: argparse.Namespace, out: TextIO) -> int:
    """Check what the console needs, bind its port, then serve until SIGINT/SIGTERM."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        return _fail(f"needs the console extra ({exc.name} is missing): pip install 'mcec[console]'")
    from mcec.console.auth import Guard, is_loopback

    token = args.token or os.environ.get("MCEC_CONSOLE_TOKEN") or None
    if not is_loopback(args.host) and token is None:
        return _fail(f"--host {args.host} serves beyond this machine: give a token (--token or MCEC_CONSOLE_TOKEN)")
    if not 0 <= args.port <= 65535:
        return _fail(f"--port {args.port}: give a port from 0 to 65535")
    from mcec.console.app import Console, make_app
    from mcec.durable import DurableError, database_url
    from mcec.durable.listing import list_page
    from agentmonad.durable.urls import shown

    try:
        url = database_url(args.db)
        list_page(db=url, limit=1)  # the database opens (and has DBOS's tables) before anyone is told to come
    except DurableError as exc:
        return _fail(str(exc))
    try:
        listening = _bound(args.host, args.port)
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    port = listening.getsockname()[1]
    console = Console(url, Guard.made(token), shown(url))
    where = f"[{args.host}]" if ":" in args.host else args.host
    link = f"http://{where}:{port}/" + ("?token=…" if token else "")
    out.write(f"mcec console: serving {console.shown_db} on {link}\n")
    out.flush()
    config = uvicorn.Config(make_app(console), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[listening])
    return EXIT_OK


def _bound(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (an :class:`OSError` when it is taken or not this machine's)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((host.strip("[]"), port))
        listening.listen(128)
    except OSError:
        listening.close()
        raise
    listening.set_inheritable(True)
    return listening


#: The sub-commands this module adds (see ``mcec.cli.COMMAND_MODULES``).
COMMANDS = [add_console]
