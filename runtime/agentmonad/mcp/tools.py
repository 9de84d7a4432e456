"""MCP tools as typed async steps (docs/language.md §9).

A spec's ``server n = stdio "CMD"`` becomes ``n = StdioServer("n", "CMD")`` and
``tool t : A -> B = n.name`` becomes ``t = tool(n, "name", B)``, an async step
that sends its input as the tool's arguments and turns the ``CallToolResult``
into an ``Outcome``. Every pipeline that reaches a tool runs its body inside
``tool_scope()``.

The command line
----------------
``CMD`` is split like a POSIX shell would (``shlex.split``) and run without a
shell. A leading ``python`` or ``python3`` means the interpreter that runs the
pipeline (``sys.executable``), as in the MCP SDK's own examples: a spec's
``stdio "python -m pkg.server"`` then finds the packages of the environment the
run uses, also when that environment's ``bin/`` is not on ``PATH`` (a venv's
``bin/python`` run without activating it). Any other program, and an explicit
path such as ``/usr/bin/python3``, is looked up and run as written.

Scopes, sessions and cleanup
----------------------------
The *outermost* ``tool_scope()`` of a run owns the MCP sessions (the
run context, :mod:`agentmonad.context`, holds it, so concurrent ``par`` branches, which
copy the context, see the same scope; nested scopes are no-ops). A server starts at its
first use in the scope: the process is spawned in the current working
directory with the current environment, in a session (process group) of its
own, then ``initialize`` and ``tools/list`` run. Each server gets one
background task that owns its process and ``ClientSession`` for the scope's
whole life (the SDK's task groups and cancel scopes must be entered and left
by the same task); calls from any task of the run share that session, so
concurrent calls to one server overlap. When the outermost scope exits —
normally, on an error, a ``Defect`` or a cancellation — every owner task is
cancelled and awaited: it closes the server's stdin, gives an idle server a
grace period to exit (a busy one, still working on a request, gets none), and
then ends its whole process group (SIGTERM, then SIGKILL), so neither the
server nor a process it started outlives the scope (see ``_stdio``).

A caller that runs several pipelines in a row can open a scope itself to keep
the servers up across the calls::

    async with tool_scope():
        first = await research_mce.answer(AgentState(), "what is a monad")
        second = await research_mce.answer(AgentState(), "what is mcp")

Within one scope a server that failed stays failed (every later call is
``ToolUnavailable``), which is what a single run wants. A long-lived scope
(``mcec serve`` holds one for its whole life) passes ``restart_failed=True``:
the next call after a server has failed starts it again.

Errors and timeouts
-------------------
``isError: true`` → ``Err(ToolFailed(server, tool, text))``. Everything else
that keeps a call from giving a valid result is
``Err(ToolUnavailable(server, tool, reason, kind))``, whose ``kind`` (a
``ToolUnavailableKind``) says what happened: the server could not be started
(``START_FAILED``), does not list the tool (``UNKNOWN_TOOL``), did not answer
in time (``TIMEOUT``), exited or closed the connection (``CONNECTION_LOST``),
answered something that is not a valid result of the declared type
(``INVALID_RESULT``), or answered with a JSON-RPC error (``PROTOCOL_ERROR``).
A lost connection is told from an error response by what happened to the
connection, never by the error's code: a server that answers ``-32000`` is
still up, and the next call uses it.

A call never hangs: it waits at most ``timeout`` seconds for its answer (the
tool's ``timeout=``, else the scope's, else ``$MCEC_TOOL_TIMEOUT``, else 30),
and a server gets ``start_timeout`` seconds to start (the scope's, else
``$MCEC_TOOL_START_TIMEOUT``, else 30); one that does not is
``START_FAILED``, and the reason says how long it was given. Neither the call's
``timeout`` nor a spec's ``timeout(S)`` around the call covers the server's
start: while the first call waits for it, the deadlines around it are held
(``control.deadlines_held``), so ``timeout(1) search`` times the search, even
when starting the server takes ten seconds on a busy machine. A call that
times out or is cancelled (e.g. a ``par`` sibling failed) is abandoned with a
``notifications/cancelled`` to the server; a server that still owes an answer
when the scope closes is stopped at once rather than given time to finish.
Of a server's stderr only the last 16 KiB are kept (in memory, read from a
pipe as it comes), and the end of that is quoted in the reason when the
server fails.

This module imports the ``mcp`` package (and ``_stdio``, the transport) only
when a server is first used, so ``import agentmonad.tools`` needs nothing
beyond the standard library.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from .._show import exception_text, safe_str, type_name
from ..context import Scope, current_run_context, reset_run_context, set_run_context
from ..control import deadlines_held
from ..errors import ToolFailed, ToolUnavailable, ToolUnavailableKind
from ..events import ToolCalled
from ._tail import Tail
from .mcp_result import from_tool_result, to_jsonable
from ..outcome import Err, Ok, Outcome

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import CallToolResult

    from ._stdio import Link

__all__ = [
    "StdioServer",
    "ToolStep",
    "tool",
    "tool_scope",
    "call_tool",
    "DEFAULT_TIMEOUT",
    "DEFAULT_START_TIMEOUT",
    "TIMEOUT_ENV",
    "START_TIMEOUT_ENV",
]

_S = TypeVar("_S")
_A = TypeVar("_A")
_B = TypeVar("_B")

Kind = ToolUnavailableKind

#: Seconds a tool call may wait for its answer, unless configured otherwise.
DEFAULT_TIMEOUT = 30.0
#: Seconds a server may take to start (spawn, ``initialize``, ``tools/list``).
DEFAULT_START_TIMEOUT = 30.0
#: Environment variable overriding :data:`DEFAULT_TIMEOUT` (seconds, > 0).
TIMEOUT_ENV = "MCEC_TOOL_TIMEOUT"
#: Environment variable overriding :data:`DEFAULT_START_TIMEOUT` (seconds, > 0).
START_TIMEOUT_ENV = "MCEC_TOOL_START_TIMEOUT"

#: Bytes of a server's stderr that are kept (the last ones).
STDERR_KEEP = 16 * 1024
#: How much of a failed server's stderr a reason quotes.
_STDERR_TAIL = 800
#: Seconds a lost connection waits for the server's last stderr words before quoting them.
_LAST_WORDS = 0.5

#: The program names that mean "the interpreter running this pipeline".
_PYTHON = frozenset({"python", "python3"})

ToolStep: TypeAlias = Callable[[_S, _A], Awaitable[Ok[_S, _B] | Err[_S, ToolFailed | ToolUnavailable]]]
"""The type of a tool step: ``async (state, A) -> Outcome[S, ToolFailed | ToolUnavailable, B]``."""


@dataclass(frozen=True, slots=True)
class StdioServer:
    """An MCP server reached over stdio: ``server name = stdio "command"``.

    ``command`` is split like a POSIX shell would (``shlex.split``) but never
    run through a shell; a leading ``python``/``python3`` is the running
    interpreter (see the module docstring). Two equal ``StdioServer`` values
    are the same server: in one scope they share one process and session.

    >>> import sys
    >>> argv = StdioServer("search", "python -m examples.research.search_server").argv
    >>> argv == (sys.executable, "-m", "examples.research.search_server")
    True
    >>> StdioServer("s", "/usr/bin/python3 server.py").argv
    ('/usr/bin/python3', 'server.py')
    """

    name: str
    command: str

    @property
    def argv(self) -> tuple[str, ...]:
        """The command line as a program and its arguments."""
        argv = shlex.split(self.command)
        if argv and argv[0] in _PYTHON and sys.executable:
            argv[0] = sys.executable
        return tuple(argv)


class _Unavailable(Exception):
    """Internal: why a call could not get an answer (becomes ``ToolUnavailable``)."""

    def __init__(self, reason: str, kind: ToolUnavailableKind) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kind = kind

    def error(self, server: str, tool: str) -> ToolUnavailable:
        return ToolUnavailable(server, tool, self.reason, self.kind)


# ---------------------------------------------------------------- settings


def _env_seconds(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:  # also rejects NaN
        raise _Unavailable(
            f"${name} must be a positive number of seconds, not {raw!r}", Kind.START_FAILED
        )
    return value


def _describe(exc: BaseException) -> str:
    """A one-line account of an exception, looking inside exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in exc.exceptions)
    text = safe_str(exc)
    return f"{type_name(exc)}: {text}" if text else type_name(exc)


# ---------------------------------------------------------------- connections


class _Connection:
    """One server in one scope: a background task owning the process and session."""

    def __init__(self, server: StdioServer, start_timeout: float) -> None:
        self.server = server
        self.start_timeout = start_timeout
        self.session: ClientSession | None = None
        self.tools: tuple[str, ...] = ()
        #: The server's process, once started (``None`` before, or if it could not be).
        self.link: Link | None = None
        #: Set once the connection has failed for good: why, and which kind of failure.
        self.failure: _Unavailable | None = None
        #: The end of what the server wrote to stderr.
        self.stderr: Tail = Tail(STDERR_KEEP)
        self._ready = asyncio.Event()
        self._closing = False
        self._cancel: Callable[[], None] | None = None
        self.task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp server {server.name}")

    def stderr_tail(self) -> str:
        """The end of what the server wrote to stderr."""
        return self.stderr.text(_STDERR_TAIL)

    def _fail(self, reason: str, kind: ToolUnavailableKind) -> None:
        if self.failure is None:
            tail = self.stderr_tail()
            self.failure = _Unavailable(f"{reason}; its stderr ends with: {tail}" if tail else reason, kind)
        self.session = None
        self._ready.set()

    async def _own(self) -> None:
        """Start the server, keep the session open until the scope closes, then stop it."""
        try:
            import anyio
            from mcp import ClientSession

            from ._stdio import open_stdio
        except ImportError as exc:
            self._fail(
                f"the `mcp` package is needed to call MCP tools ({exc}); pip install 'agentmonad[mcp]'",
                Kind.START_FAILED,
            )
            return
        argv = self.server.argv
        if not argv:
            self._fail("the server's command line is empty", Kind.START_FAILED)
            return
        try:
            with anyio.CancelScope() as cancel_scope:
                self._cancel = cancel_scope.cancel
                if self._closing:
                    cancel_scope.cancel()
                async with open_stdio(argv, cwd=os.getcwd(), env=dict(os.environ), stderr=self.stderr) as (
                    read,
                    write,
                    link,
                ):
                    self.link = link
                    async with ClientSession(read, write) as session:
                        try:
                            with anyio.fail_after(self.start_timeout):
                                await session.initialize()
                                names = await _list_tool_names(session)
                        except TimeoutError:
                            self._fail(
                                f"the server did not start (initialize, tools/list) within {self.start_timeout:g}s"
                                f" (its start timeout: ${START_TIMEOUT_ENV} or tool_scope(start_timeout=...))",
                                Kind.START_FAILED,
                            )
                            return
                        self.session, self.tools = session, names
                        self._ready.set()
                        # Serve calls (they run in the callers' tasks) until the scope closes.
                        await anyio.sleep_forever()
        except Exception as exc:
            if self.session is not None:  # it had started: the connection broke afterwards
                self._fail(f"the connection broke: {_describe(exc)}", Kind.CONNECTION_LOST)
            else:
                self._fail(self._start_failure(exc), Kind.START_FAILED)
        finally:
            if self.failure is None:
                self.failure = _Unavailable("the run's tool scope has closed", Kind.CONNECTION_LOST)
            self.session = None
            self._ready.set()

    def _start_failure(self, exc: BaseException) -> str:
        leaves = _leaves(exc)
        command = self.server.command
        if self.link is None:  # the process never started
            if any(isinstance(e, FileNotFoundError) for e in leaves):
                return f"cannot start `{command}`: command not found"
            if any(isinstance(e, OSError) for e in leaves):
                return f"cannot start `{command}`: {_describe(exc)}"
        elif self.link.closed:
            return "the server exited during start-up"
        return f"the server failed during start-up: {_describe(exc)}"

    @property
    def started(self) -> bool:
        """Whether the start is over: ``ready()`` answers at once."""
        return self._ready.is_set()

    async def ready(self) -> ClientSession:
        """The session, once the server has started; ``_Unavailable`` when it cannot."""
        await self._ready.wait()
        if self.session is None:
            failure = self.failure or _Unavailable("the server is not running", Kind.CONNECTION_LOST)
            raise _Unavailable(failure.reason, failure.kind)
        return self.session

    @property
    def ended(self) -> bool:
        """Whether the connection is over: closed by the server, failed, or being closed by us."""
        return self._closing or self.failure is not None or (self.link is not None and self.link.closed)

    async def lost(self, reason: str) -> _Unavailable:
        """The connection broke during a call: later calls fail at once with the same failure.

        The server's last words on stderr are awaited briefly, so that the
        reason quotes them. The owner task is told to stop now (the process is
        gone or unusable), so that its cleanup runs and a scope with
        ``restart_failed`` can start the server again.
        """
        import anyio

        if self.failure is None and self.link is not None:
            with anyio.move_on_after(_LAST_WORDS):
                await self.link.stderr_done.wait()
        self._fail(reason, Kind.CONNECTION_LOST)
        if self._cancel is not None:
            self._cancel()
        assert self.failure is not None
        return _Unavailable(self.failure.reason, self.failure.kind)

    def close(self) -> None:
        """Ask the owner task to stop the server (it is awaited by the scope)."""
        self._closing = True
        if self._cancel is not None:
            self._cancel()


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _list_tool_names(session: ClientSession) -> tuple[str, ...]:
    """Every tool the server lists, following pagination."""
    from mcp.types import PaginatedRequestParams

    names: list[str] = []
    listing = await session.list_tools()
    while True:
        names.extend(t.name for t in listing.tools)
        if not listing.next_cursor:
            return tuple(names)
        listing = await session.list_tools(params=PaginatedRequestParams(cursor=listing.next_cursor))


# ---------------------------------------------------------------- scopes


@dataclass(eq=False)
class _Scope(Scope):
    """The sessions of one run (the outermost ``tool_scope``), kept in the run context
    under this class."""

    timeout: float | None
    start_timeout: float | None
    #: Start a server again at the next call after it has failed.
    restart_failed: bool = False
    connections: dict[StdioServer, _Connection] = field(default_factory=dict)
    #: Failed connections replaced under ``restart_failed``: still awaited when the scope closes.
    retired: list[_Connection] = field(default_factory=list)

    def connection(self, server: StdioServer) -> _Connection:
        # No await between the lookup and the insert: concurrent first calls share one start.
        found = self.connections.get(server)
        if found is not None and self.restart_failed and found.failure is not None:
            # Its owner task may still be tearing the old process down: start afresh
            # beside it, and keep it to be awaited when the scope closes.
            found.close()
            # Only the ones still stopping need awaiting: a server that keeps
            # failing in a long-lived scope must not pile up connections.
            self.retired = [c for c in self.retired if not c.task.done()]
            self.retired.append(found)
            found = None
        if found is None:
            start = self.start_timeout or _env_seconds(START_TIMEOUT_ENV, DEFAULT_START_TIMEOUT)
            found = self.connections[server] = _Connection(server, start)
        return found

    def abandon(self) -> None:
        """Tell every server to stop, without waiting (the caller cannot await)."""
        for connection in [*self.connections.values(), *self.retired]:
            connection.close()

    def closing(self) -> list[Awaitable[object]]:
        """Tell every server to stop; their owner tasks (the shared :meth:`Scope.close` waits for them)."""
        self.abandon()
        return [c.task for c in [*self.connections.values(), *self.retired]]


def _current() -> _Scope | None:
    """The tool scope open here, if any."""
    return current_run_context().part(_Scope)


@asynccontextmanager
async def tool_scope(
    *, timeout: float | None = None, start_timeout: float | None = None, restart_failed: bool = False
) -> AsyncIterator[None]:
    """The run scope of MCP sessions (see the module docstring).

    The outermost scope starts servers at first use, shares one session per
    server among all calls inside it, and stops every server when it exits,
    whatever the reason. Nested scopes do nothing (their settings are ignored).
    ``timeout`` / ``start_timeout`` (seconds) set the defaults of this run's
    calls and server starts, over ``$MCEC_TOOL_TIMEOUT`` /
    ``$MCEC_TOOL_START_TIMEOUT``. ``restart_failed``: a server that failed is
    started again at its next call (for long-lived scopes; by default it stays
    failed for the scope's life); the failed process is still stopped and
    awaited when the scope exits.
    """
    if current_run_context().part(_Scope) is not None:
        yield
        return
    for value in (timeout, start_timeout):
        if value is not None and not value > 0:
            raise ValueError(f"tool_scope timeouts must be positive, got {value!r}")
    scope = _Scope(timeout, start_timeout, restart_failed)
    token = set_run_context(current_run_context().with_part(_Scope, scope))
    abandoned = False
    try:
        yield
    except GeneratorExit:
        abandoned = True
        raise
    finally:
        reset_run_context(token)  # one closed from another context, which never saw this scope, is ignored
        if abandoned:
            # The run's coroutine was dropped and is being closed (e.g. garbage
            # collected): it may not await any more, so the servers are only told to stop.
            scope.abandon()
        else:
            await scope.close()


# ---------------------------------------------------------------- calls


async def _call(
    server: StdioServer, name: str, arguments: dict[str, Any], timeout: float | None
) -> CallToolResult:
    """One ``tools/call`` on the current scope's session; ``_Unavailable`` when there is no answer."""
    scope = _current()
    if scope is None:
        # Outside any run: a scope for this one call, so the server does not leak.
        async with tool_scope():
            return await _call(server, name, arguments, timeout)
    connection = scope.connection(server)
    if connection.started:
        session = await connection.ready()
    else:
        # The `timeout`s around this call time the call, not the server's start,
        # which its own start timeout bounds (a slow start on a busy machine
        # must not turn `timeout(1) tool` into a Timeout).
        with deadlines_held():
            session = await connection.ready()
    if name not in connection.tools:
        listed = ", ".join(sorted(connection.tools)) or "none"
        raise _Unavailable(f"the server has no tool {name!r} (it lists: {listed})", Kind.UNKNOWN_TOOL)
    seconds = timeout or scope.timeout or _env_seconds(TIMEOUT_ENV, DEFAULT_TIMEOUT)
    from mcp import MCPError

    from ._stdio import UNPARSED

    # Our own deadline rather than the SDK's read timeout: whether the time ran
    # out is then a fact, not read off an error code the server could send too.
    # Running out cancels the call, which tells the server with notifications/cancelled.
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await session.call_tool(name, arguments)
    except TimeoutError as exc:
        if deadline.expired():
            raise _Unavailable(f"no answer within {seconds:g}s", Kind.TIMEOUT) from exc
        raise _Unavailable(f"the call failed: {_describe(exc)}", Kind.PROTOCOL_ERROR) from exc
    except MCPError as exc:
        # What happened to the connection decides, not the code: -32000 is also
        # the standard "server error" a healthy server may answer with.
        if connection.ended:
            raise await connection.lost("the server closed the connection (it exited or crashed)") from exc
        if exc.error.data == UNPARSED:
            raise _Unavailable(f"invalid result: {exc.error.message}", Kind.INVALID_RESULT) from exc
        message = safe_str(exc.error.message)
        raise _Unavailable(f"protocol error {exc.error.code}: {message}", Kind.PROTOCOL_ERROR) from exc
    except RuntimeError as exc:
        # The SDK checks structuredContent against the tool's outputSchema.
        raise _Unavailable(f"invalid result: {safe_str(exc)}", Kind.INVALID_RESULT) from exc
    except (ValueError, TypeError) as exc:  # a malformed result (pydantic.ValidationError is a ValueError)
        raise _Unavailable(f"malformed result: {_describe(exc)}", Kind.INVALID_RESULT) from exc


def _told(server: StdioServer, name: str, ok: bool, started: float) -> None:
    """Tell the event sink attached here, if any, that tool ``name`` of ``server`` was called at
    ``started`` (``time.monotonic()``) and answered now (``ok``: not with an error result)."""
    run = current_run_context()
    if run.events is not None:
        opened = run.span
        effect, span = (opened.effect, opened.span) if opened is not None else (None, None)
        run.events.emit(ToolCalled(effect, name, server.name, ok, time.monotonic() - started, span))


def _arguments(value: object) -> dict[str, Any]:
    """A step's input as tool arguments: a pydantic model's JSON dump, or a dict."""
    data = to_jsonable(value)
    if not isinstance(data, dict):
        raise TypeError(
            f"MCP tool arguments must be a pydantic model or a dict, not {type(value).__name__}"
        )
    return {str(k): v for k, v in data.items()}


def _validation_text(exc: Exception) -> str:
    """A pydantic ``ValidationError`` in one line (``loc: message; …``), anything else as is."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            return "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors()
            )
        except Exception:
            pass
    return _describe(exc)


def _decode(
    result: CallToolResult, state: _S, server: str, name: str, output: Any
) -> Outcome[_S, ToolFailed | ToolUnavailable, Any]:
    """A ``CallToolResult`` as an ``Outcome``, validated against ``output``.

    Total: a result that cannot be read as ``output`` for any reason (it does
    not validate, lacks structured content, nests too deeply to decode, …) is
    ``Err(ToolUnavailable(kind=INVALID_RESULT))``, never an exception.
    """
    try:
        return _decode_as(result, state, server, name, output)
    except Exception as exc:  # RecursionError included
        reason = f"the result cannot be decoded: {_describe(exc)}"
        return Err(ToolUnavailable(server, name, reason, Kind.INVALID_RESULT), state)


def _decode_as(
    result: CallToolResult, state: _S, server: str, name: str, output: Any
) -> Outcome[_S, ToolFailed | ToolUnavailable, Any]:
    wire = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    if wire.get("isError") or output is str or output is Any or output is object:
        return from_tool_result(wire, state, server=server, tool=name, output=output)
    model_validate = getattr(output, "model_validate", None)
    if model_validate is not None:
        data = wire.get("structuredContent")
        if data is None:
            reason = f"the result has no structuredContent to read as {getattr(output, '__name__', output)}"
            return Err(ToolUnavailable(server, name, reason, Kind.INVALID_RESULT), state)
        validate: Callable[[Any], Any] = model_validate
    else:
        # Another type (int, list[str], …): pydantic, which mcp depends on, validates it.
        from pydantic import TypeAdapter

        outcome = from_tool_result(wire, state, server=server, tool=name, output=Any)
        if type(outcome) is Err:
            return outcome
        assert type(outcome) is Ok
        data, validate = outcome.value, TypeAdapter(output).validate_python
    try:
        return Ok(validate(data), state)
    except Exception as exc:  # pydantic.ValidationError (or a validator's own error)
        reason = f"the result does not validate: {_validation_text(exc)}"
        return Err(ToolUnavailable(server, name, reason, Kind.INVALID_RESULT), state)


async def call_tool(
    server: StdioServer,
    name: str,
    arguments: Mapping[str, Any] | object,
    output: Any = Any,
    *,
    timeout: float | None = None,
) -> Any:
    """Call tool ``name`` on ``server`` from inside a step; returns the result or raises.

    For steps that choose a tool at run time (a planner's tool call). Uses the
    current run's session (starting the server if needed; outside any
    ``tool_scope`` the server lives for this call only). ``arguments`` is a dict
    or a pydantic model; ``output`` decodes the result as ``tool`` does
    (a pydantic model, ``str``, or ``Any`` for the structured content).

    Raises ``ToolFailed`` (``isError: true``) or ``ToolUnavailable`` (cannot
    start, unknown tool, no answer in time, connection lost, invalid result,
    an error response; its ``kind`` says which). Both are built-in
    error types, so a step that declares them may simply let them propagate:
    raising a declared error is the same as returning ``Err`` (docs/language.md §3).
    """
    started = time.monotonic()
    try:
        result = await _call(server, name, _arguments(arguments), timeout)
    except _Unavailable as exc:
        _told(server, name, False, started)
        raise exc.error(server.name, name) from None
    _told(server, name, not result.is_error, started)
    outcome = _decode(result, None, server.name, name, output)
    if type(outcome) is Err:
        raise outcome.error
    assert type(outcome) is Ok
    return outcome.value


def tool(
    server: StdioServer, tool_name: str, output: Any, *, timeout: float | None = None
) -> ToolStep[_S, _A, _B]:
    """The async step of ``tool n : A -> B = server.tool_name``.

    It sees no state (it returns the state it got), sends its input — a
    pydantic model (``model_dump(mode="json")``) or a dict — as the arguments,
    and decodes the result as ``output``: a pydantic model is validated from
    ``structuredContent``, ``str`` is the text content, ``Any`` the structured
    content (a lone ``result`` key unwrapped) or else the text. Failures are
    values: ``Err(ToolFailed)`` for ``isError: true``, ``Err(ToolUnavailable)``
    for everything else (see the module docstring). ``timeout`` overrides the
    run's call timeout for this tool.
    """
    if timeout is not None and not timeout > 0:
        raise ValueError(f"tool timeout must be positive, got {timeout!r}")

    async def step(state: _S, value: _A) -> Ok[_S, _B] | Err[_S, ToolFailed | ToolUnavailable]:
        started = time.monotonic()
        try:
            result = await _call(server, tool_name, _arguments(value), timeout)
        except _Unavailable as exc:
            _told(server, tool_name, False, started)
            return Err(exc.error(server.name, tool_name), state)
        _told(server, tool_name, not result.is_error, started)
        return _decode(result, state, server.name, tool_name, output)

    step.__name__ = step.__qualname__ = f"tool_{tool_name}"
    step.__doc__ = f"MCP tool {server.name}.{tool_name} (`{server.command}`)."
    return step
