"""The stdio transport of an MCP server: its process, its pipes and its end.

``tools._Connection`` runs each server through ``open_stdio`` rather than the
SDK's ``stdio_client``, because it needs three things that one does not give:

- **The whole process group ends with the connection.** The server starts in
  a session of its own (so its process group is its pid), and when the
  connection closes the group is sent SIGTERM and, after a grace period,
  SIGKILL — also when the server already exited by itself on stdin close, so a
  process it started cannot outlive the tool scope. (A process that leaves the
  group on purpose, e.g. a daemon calling ``setsid``, escapes by design.)
  Only an idle server (it has answered, and no request of ours waits for an
  answer) is given time to exit by itself on end of input: one that is busy
  with a request — in particular one a time-out abandoned — or that never
  answered is ended at once, since a ``timeout`` exists to bound the run's
  latency. A member of the group that has exited counts as gone, reaped or
  not: where nothing reaps orphans (a container's init that does not), a
  zombie would otherwise hold the shutdown for its whole grace period.
- **A started process is always waited for.** Spawning is shielded from
  cancellation: asyncio, cancelled while it connects a new process's pipes,
  kills the process without waiting for it, which then exits after the event
  loop has closed (``Loop … that handles pid N is closed`` on stderr).
- **Only a bounded tail of stderr is kept.** stderr is a pipe, read as it
  comes into the connection's ``tools.Tail``, which keeps only its last bytes,
  so a chatty server in a long-lived scope holds no growing file or buffer.
- **Whether the connection really ended.** ``Link.closed`` is set when the
  server closed its stdout or its stdin broke, and always *before* the session
  learns of it, so a caller that gets an error can tell a lost connection from
  an error *response*, whatever code the response carries.

Messages are newline-delimited JSON-RPC, parsed with the SDK's own message
adapter. A line that cannot be parsed (say, a result nested deeper than the
parser allows) but whose top-level ``id`` can be found is answered to its
caller as an error marked ``UNPARSED``, instead of leaving the call waiting
for its time-out.

This module imports ``anyio`` and ``mcp``: ``tools`` imports it only when a
server is first started.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from subprocess import PIPE
from typing import TYPE_CHECKING, TypeAlias

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import (
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
    jsonrpc_message_adapter,
)

from .._show import exception_text, truncate
from ._tail import Tail

__all__ = ["Link", "open_stdio", "UNPARSED"]

#: Seconds a server gets to exit by itself once its stdin is closed.
EXIT_GRACE = 2.0
#: Seconds between SIGTERM and SIGKILL to what is left of a process group.
KILL_GRACE = 2.0
#: Seconds to wait for the rest of a stopped server's stderr to arrive.
_DRAIN_GRACE = 0.5
_POLL = 0.01

#: ``ErrorData.data`` of the error answered for a response that could not be parsed.
UNPARSED = "agentmonad: the server's answer could not be parsed"

Incoming: TypeAlias = "SessionMessage | Exception"


@dataclass(eq=False)
class Link:
    """What the connection's owner knows about the server process."""

    pid: int
    stderr: Tail
    #: The connection has ended: the server closed its stdout, or its stdin broke.
    closed: bool = False
    #: Set once the server's stderr has reached its end (every writer is gone).
    stderr_done: anyio.Event = field(default_factory=anyio.Event)
    stopped: bool = False
    #: Ids of our requests the server has not answered (abandoned ones included:
    #: a server answers no cancelled request).
    in_flight: set[RequestId] = field(default_factory=set)
    #: The server has answered at least once (it got as far as serving).
    answered: bool = False

    @property
    def idle(self) -> bool:
        """Serving and owing us no answer: such a server may exit by itself on end of input."""
        return self.answered and not self.in_flight


@asynccontextmanager
async def open_stdio(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], stderr: Tail
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Incoming], MemoryObjectSendStream[SessionMessage], Link]]:
    """Start ``argv`` in a session of its own and talk JSON-RPC over its stdio.

    Yields the session's read and write streams and the ``Link``. On exit —
    also on an error or a cancellation — stdin is closed, an idle server gets
    ``EXIT_GRACE`` seconds to exit, and then its whole process group is ended
    (see the module docstring). Every wait is bounded and shielded, so a
    cancelled caller can neither leak the processes nor hang on them.
    Raises ``OSError`` when the program cannot be started.
    """
    # Shielded: cancelled in here, asyncio kills the new process but does not
    # wait for it (see the module docstring). A cancellation pending now is
    # delivered at the first await below, inside the try that stops the server.
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(
            list(argv), stdin=PIPE, stdout=PIPE, stderr=PIPE, cwd=cwd, env=env, start_new_session=True
        )
    link = Link(process.pid, stderr)
    to_session, from_server = anyio.create_memory_object_stream[Incoming](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read_stdout, process, to_session, link)
            tasks.start_soon(_write_stdin, process, from_session, to_session, link)
            tasks.start_soon(_read_stderr, process, link)
            try:
                yield from_server, to_server, link
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, link)
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, link)  # no-op when done above
            for stream in (to_session, from_server, to_server, from_session):
                await stream.aclose()


# ---------------------------------------------------------------- pipes


async def _read_stdout(process: Process, to_session: MemoryObjectSendStream[Incoming], link: Link) -> None:
    """Parse stdout into messages for the session; at its end, tell the session."""
    assert process.stdout is not None
    partial: list[bytes] = []
    listening = True
    try:
        async for chunk in process.stdout:
            if not listening:
                continue  # keep draining, so a server blocked on stdout can still exit
            pieces = chunk.split(b"\n")
            if len(pieces) == 1:
                partial.append(chunk)
                continue
            lines = [b"".join([*partial, pieces[0]]), *pieces[1:-1]]
            partial = [pieces[-1]] if pieces[-1] else []
            for line in lines:
                if line.strip():
                    incoming = _parse(line)
                    _note_answer(incoming, link)
                    try:
                        await to_session.send(incoming)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        listening = False  # the session has gone
                        break
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass  # our own shutdown closed the pipe
    finally:
        link.closed = True  # before the session sees the end: see Link.closed
        to_session.close()


async def _write_stdin(
    process: Process,
    from_session: MemoryObjectReceiveStream[SessionMessage],
    to_session: MemoryObjectSendStream[Incoming],
    link: Link,
) -> None:
    """Send the session's messages, one line each."""
    assert process.stdin is not None
    try:
        async with from_session:
            async for message in from_session:
                if isinstance(message.message, JSONRPCRequest):
                    link.in_flight.add(message.message.id)
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((text + "\n").encode("utf-8"))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: the connection is over even if it lives on.
        link.closed = True
        to_session.close()


async def _read_stderr(process: Process, link: Link) -> None:
    assert process.stderr is not None
    try:
        async for chunk in process.stderr:
            link.stderr.add(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        pass
    finally:
        link.stderr_done.set()


def _note_answer(incoming: Incoming, link: Link) -> None:
    """Keep ``link.in_flight`` and ``link.answered`` up to date with a message from the server."""
    if isinstance(incoming, SessionMessage) and isinstance(incoming.message, (JSONRPCResponse, JSONRPCError)):
        link.answered = True
        if incoming.message.id is not None:
            link.in_flight.discard(incoming.message.id)


def _parse(line: bytes) -> Incoming:
    """One line from the server: a message, or the reason it is not one."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        request_id = _top_level_id(line)
        if request_id is None:
            return exc  # the session logs it; nobody is waiting for this line
        # Answer the waiting call now instead of letting it run into its time-out.
        error = ErrorData(code=PARSE_ERROR, message=f"the answer could not be parsed: {_why(exc)}", data=UNPARSED)
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _why(exc: ValueError) -> str:
    """A parse failure in one short line: pydantic's own messages when it has them."""
    errors = getattr(exc, "errors", None)
    try:
        text = "; ".join(str(e["msg"]) for e in errors()[:3]) if callable(errors) else exception_text(exc)
    except Exception:
        text = exception_text(exc)
    return truncate(" ".join(text.split()), 300)


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_ID_VALUE = re.compile(rb'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def _top_level_id(line: bytes) -> int | str | None:
    r"""The ``id`` of a JSON-RPC object too deep (or otherwise too odd) to parse.

    A linear scan of strings and brackets, which needs no recursion however
    deep the line nests.

    >>> _top_level_id(b'{"jsonrpc": "2.0", "result": {"id": 9, "x": [[[]]]}, "id": 7}')
    7
    >>> _top_level_id(b'{"id": "a\\"b", "result": ' + b"[" * 10_000 + b"]" * 10_000 + b"}")
    'a"b'
    >>> _top_level_id(b'[{"id": 1}]') is None
    True
    """
    if not line.lstrip().startswith(b"{"):
        return None
    depth = 0
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text in (b"{", b"["):
            depth += 1
        elif text in (b"}", b"]"):
            depth -= 1
        elif depth == 1 and text == b'"id"':
            value = _ID_VALUE.match(line, token.end())
            if value is None:
                return None
            raw = value.group(1)
            try:
                parsed = json.loads(raw)
            except ValueError:
                return None
            return parsed if isinstance(parsed, (int, str)) else None
    return None


# ---------------------------------------------------------------- the end


async def _stop(process: Process, link: Link) -> None:
    """Close stdin, let an idle server exit, then end its process group; bounded."""
    if link.stopped:
        return
    link.stopped = True
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if link.idle:
        # A busy server (a request in flight, say one a time-out abandoned) may
        # not read its end of input until that request is done, and one that
        # never answered may be stuck starting: neither is waited for.
        await _exited(process, EXIT_GRACE)
    await _end_group(process)
    # Every writer of the pipes is gone now: what is left of stderr arrives at once.
    with anyio.move_on_after(_DRAIN_GRACE):
        await link.stderr_done.wait()
    for pipe in (process.stdout, process.stderr):
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await pipe.aclose()


async def _exited(process: Process, seconds: float) -> bool:
    """Whether the process ends within ``seconds`` (by polling: ``wait()`` may
    also wait for the pipes, which a surviving child can hold open)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(_POLL)
        return True
    return False


async def _end_group(process: Process) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after ``KILL_GRACE``."""
    if sys.platform == "win32":  # no process groups: the server alone
        with suppress(ProcessLookupError, OSError):
            process.kill()
        return
    pgid = process.pid  # start_new_session: the group is named after the server
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        # The group is empty: the server exited and started nothing that lives.
        # Its exit may not have reached the loop yet: it is awaited all the same.
        await _exited(process, KILL_GRACE)
        return
    except PermissionError:
        pass  # some member cannot be signalled: still wait, then SIGKILL what we may
    with anyio.move_on_after(KILL_GRACE):
        # The server itself first: the group is scanned only for what it leaves behind.
        while process.returncode is None or _group_alive(pgid):
            await anyio.sleep(_POLL)
        return
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    await _exited(process, KILL_GRACE)


def _group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs; an exited one not yet reaped (a zombie) does not.

    Where nothing reaps orphans (an init that does not, a subreaper that never
    waits), a member of the group stays a zombie for as long as the reaper
    lives: it has ended, holds nothing, and no signal can reach it.
    """
    try:
        os.killpg(pgid, 0)  # cheap, and final when the group is empty
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    states = _group_states(pgid)
    if states is None:
        return True  # no /proc to tell a zombie from a live process: assume the worst
    return any(state not in _EXITED for state in states)


#: ``/proc/PID/stat`` states of a process that has exited: zombie, dead.
_EXITED = frozenset({"Z", "X", "x"})


def _group_states(pgid: int) -> list[str] | None:
    """The states (``/proc/PID/stat``) of the processes in group ``pgid``; None without ``/proc``."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    states = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                # "pid (comm) state ppid pgrp …": comm may hold anything, so split after its last ")".
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and int(fields[2]) == pgid:
            states.append(fields[0].decode("ascii", "replace"))
    return states
