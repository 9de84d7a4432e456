"""Errors of the runtime: the built-in error types and ``Defect``.

Built-in *errors* (``MergeConflict``, ``ToolFailed``, ``ToolUnavailable``, and for
the control flow of docs/language.md §5 v2 ``LoopExhausted`` and ``Timeout``) travel
on the failure track inside an ``Err``. They compare by value, so two runs that
fail the same way give equal outcomes.

A ``Defect`` is not an error: it is a bug (an undeclared exception escaping a
step, or an ``Err`` of an undeclared type) and propagates as a Python exception,
carrying the step, its ``.mce`` site, the state at that point and the cause.

Every message here is built when it is read (``str``/``repr``), not when the
error is made, and quotes user values through ``_show``: an error or Defect is
cheap to create even when nobody prints it, printing it never raises (a value
whose ``__repr__`` raises shows as ``<unprintable T object>``), and a message
holds a bounded amount of text however many or large the values it carries.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

from ._show import bounded_list, exception_text, safe_repr, safe_str, short_repr
from .outcome import Site

__all__ = [
    "Defect",
    "MergeConflict",
    "ToolFailed",
    "ToolUnavailable",
    "ToolUnavailableKind",
    "LoopExhausted",
    "Timeout",
    "BudgetExceeded",
]


class _ValueError(Exception):
    """Base of the built-in errors: equality and hash by type and fields."""

    _fields: tuple[str, ...] = ()

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, f) for f in self._fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, _ValueError)
        return self._key() == other._key()

    def __hash__(self) -> int:
        # only the first field: the others (lists, states) may be unhashable
        return hash((type(self).__name__, self._key()[0]))

    def _field_repr(self, name: str) -> str:
        return safe_repr(getattr(self, name))

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={self._field_repr(f)}" for f in self._fields)
        return f"{type(self).__name__}({args})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._key())


class MergeConflict(_ValueError):
    """Parallel branches changed the same state field to different values.

    ``field`` is the field's name (``"<state>"`` for a state that is not a
    dataclass or model), ``values`` the branches' values of it, in branch order,
    and ``states`` the branches' whole states. The message shows a bounded
    number of the values, each cut short, however many branches there were.

    >>> str(MergeConflict("answer", ["a", "b"], [1, 2]))
    "par branches changed field 'answer' to different values: ['a', 'b']"
    >>> str(MergeConflict("n", list(range(100)), list(range(100))))
    "par branches changed field 'n' to different values: [0, 1, 2, 3, 4, 5, 6, 7, … and 92 more]"
    """

    _fields = ("field", "values", "states")

    def __init__(self, field: str, values: Sequence[object], states: Sequence[object]) -> None:
        self.field = field
        self.values = list(values)
        self.states = list(states)
        super().__init__(field, self.values, self.states)

    def __str__(self) -> str:
        return (
            f"par branches changed field {safe_repr(self.field)} to different values: "
            f"{bounded_list(self.values)}"
        )

    def _field_repr(self, name: str) -> str:
        if name == "field":
            return safe_repr(self.field)
        values: list[object] = getattr(self, name)
        return bounded_list(values)


class ToolFailed(_ValueError):
    """An MCP tool call returned ``isError: true``; ``text`` is its error text.

    >>> str(ToolFailed("search", "web_search", "rate limited"))
    'search.web_search failed: rate limited'
    """

    _fields = ("server", "tool", "text")

    def __init__(self, server: str, tool: str, text: str) -> None:
        self.server = server
        self.tool = tool
        self.text = text
        super().__init__(server, tool, text)

    def __str__(self) -> str:
        return f"{safe_str(self.server)}.{safe_str(self.tool)} failed: {safe_str(self.text)}"


class ToolUnavailableKind(enum.Enum):
    """Why a tool was unavailable: ``ToolUnavailable.kind``, for code that
    treats the cases differently (retry a time-out, not an unknown tool).

    >>> ToolUnavailableKind.TIMEOUT
    ToolUnavailableKind.TIMEOUT
    """

    #: The server could not be started: no such command, it exited or failed
    #: during start-up or did not finish it in time, or the run is
    #: misconfigured (no ``mcp`` package, a bad ``$MCEC_TOOL_*`` setting).
    START_FAILED = "start_failed"
    #: The server runs but does not list the tool.
    UNKNOWN_TOOL = "unknown_tool"
    #: The call got no answer within its time-out (the server may be fine).
    TIMEOUT = "timeout"
    #: The server exited, crashed or closed the connection after it had
    #: started; in a run it stays lost (see ``tool_scope(restart_failed=…)``).
    CONNECTION_LOST = "connection_lost"
    #: The answer came, but is not a valid result of the declared type:
    #: it does not validate, has no structured content, or cannot be decoded.
    INVALID_RESULT = "invalid_result"
    #: The server answered with a JSON-RPC error instead of a result, or
    #: otherwise broke the protocol; the connection is still usable.
    PROTOCOL_ERROR = "protocol_error"
    #: Not given: a ``ToolUnavailable(server, tool, reason)`` made by user
    #: code. The runtime always says which of the above it is.
    UNSPECIFIED = "unspecified"

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class ToolUnavailable(_ValueError):
    """An MCP tool could not be reached, is not listed, or its result is invalid.

    ``kind`` says which (a ``ToolUnavailableKind``), ``reason`` says it in
    words; both take part in equality.

    >>> str(ToolUnavailable("search", "web_search", "server exited"))
    'search.web_search unavailable: server exited'
    >>> ToolUnavailable("s", "t", "no answer within 1s", ToolUnavailableKind.TIMEOUT)
    ToolUnavailable(server='s', tool='t', reason='no answer within 1s', kind=ToolUnavailableKind.TIMEOUT)
    """

    _fields = ("server", "tool", "reason", "kind")

    def __init__(
        self,
        server: str,
        tool: str,
        reason: str,
        kind: ToolUnavailableKind = ToolUnavailableKind.UNSPECIFIED,
    ) -> None:
        self.server = server
        self.tool = tool
        self.reason = reason
        self.kind = kind
        super().__init__(server, tool, reason, kind)

    def __str__(self) -> str:
        return f"{safe_str(self.server)}.{safe_str(self.tool)} unavailable: {safe_str(self.reason)}"


class LoopExhausted(_ValueError):
    """A ``loop(N) e`` ran e N times and the N-th result still continued the loop.

    ``iterations`` is N, ``last`` the value that would have continued (the
    N-th run's result). The message quotes ``last`` cut short, so a huge
    transcript does not end up in a log line.

    >>> str(LoopExhausted(8, "still thinking"))
    "loop gave up after 8 iterations; the last value would have continued: 'still thinking'"
    >>> LoopExhausted(3, [1, 2]) == LoopExhausted(3, [1, 2])
    True
    """

    _fields = ("iterations", "last")

    def __init__(self, iterations: int, last: object) -> None:
        self.iterations = iterations
        self.last = last
        super().__init__(iterations, last)

    def __str__(self) -> str:
        n = self.iterations
        one = type(n) is int and n == 1  # a message never runs user code that may raise
        return (
            f"loop gave up after {safe_str(n)} iteration{'' if one else 's'}; "
            f"the last value would have continued: {short_repr(self.last)}"
        )

    def _field_repr(self, name: str) -> str:
        return short_repr(getattr(self, name))


class Timeout(_ValueError):
    """A ``timeout(S) e``: e had not finished ``seconds`` after it started.

    Not a subclass of the builtin ``TimeoutError`` on purpose: generated code
    tells its own deadline's ``TimeoutError`` from others with ``except
    TimeoutError``, and an error value travelling in an ``Err`` (or raised by a
    step that declares it) must never be mistaken for one.

    >>> str(Timeout(10))
    'timed out after 10 s'
    >>> Timeout(0.5) == Timeout(0.5), Timeout(1) == Timeout(2)
    (True, False)
    """

    _fields = ("seconds",)

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(seconds)

    def __str__(self) -> str:
        return f"timed out after {safe_str(self.seconds)} s"


#: How many sibling Defects ``str(defect)`` quotes before "… and N more".
_OTHERS_SHOWN = 5


class BudgetExceeded(_ValueError):
    """``budget(N) e``: the model tokens used inside ``e`` passed ``limit``.

    ``used`` is the count when the budget was found exceeded (prompt plus
    completion tokens of every call inside the budget).

    >>> str(BudgetExceeded(1000, 1042))
    'token budget of 1000 exceeded: 1042 used'
    >>> BudgetExceeded(1000, 1042) == BudgetExceeded(1000, 1042)
    True
    """

    _fields = ("limit", "used")

    def __init__(self, limit: int, used: int) -> None:
        self.limit = limit
        self.used = used
        super().__init__(limit, used)

    def __str__(self) -> str:
        return f"token budget of {safe_str(self.limit)} exceeded: {safe_str(self.used)} used"


class Defect(Exception):
    """A bug, not an error: propagates through ``catch``/``orelse`` untouched.

    ``Defect(where, state, cause)``: ``where`` is the step's ``Site`` (or just its
    name when the location is unknown), ``state`` the state the step received
    (or failed with), ``cause`` the original exception (also ``__cause__``).
    ``reason`` replaces the cause's text in the message; it may be a function
    giving that text, called only when the message is read. ``others`` holds
    Defects that other ``par`` branches raised meanwhile.

    >>> d = Defect(Site("plan", "a.mce", 3, 5), {"n": 1}, ValueError("boom"))
    >>> str(d)
    "defect in step 'plan' at a.mce:3:5: ValueError: boom"
    >>> (d.step, d.site.line, d.state, type(d.cause).__name__)
    ('plan', 3, {'n': 1}, 'ValueError')
    """

    def __init__(
        self,
        where: Site | str,
        state: object,
        cause: BaseException | None = None,
        *,
        reason: str | Callable[[], str] | None = None,
        others: Sequence[Defect] = (),
    ) -> None:
        if isinstance(where, Site):
            self.site: Site | None = where
            self.step: str = where.step
        else:
            self.site = None
            self.step = where
        self.state = state
        self.cause = cause
        self._reason = reason
        self.others: list[Defect] = list(others)
        self.__cause__ = cause
        super().__init__(where, state, cause)

    @property
    def reason(self) -> str | None:
        """The text that replaces the cause's in the message (``None``: the cause's)."""
        reason = self._reason
        if callable(reason):
            try:
                text = reason()
            except Exception as exc:
                text = f"<the message could not be built: {exception_text(exc)}>"
            reason = self._reason = safe_str(text)
        return reason

    def _message(self) -> str:
        at = f" at {self.site.location}" if self.site is not None else ""
        what = self.reason
        if what is None:
            what = exception_text(self.cause) if self.cause is not None else "unknown defect"
        return f"defect in step {safe_repr(self.step)}{at}: {what}"

    def __str__(self) -> str:
        text = self._message()
        if self.others:
            n = len(self.others)
            quoted = [o._message() for o in self.others[:_OTHERS_SHOWN]]
            if n > _OTHERS_SHOWN:
                quoted.append(f"… and {n - _OTHERS_SHOWN} more")
            text += f" (+{n} other defect{'s' if n != 1 else ''} in sibling branches: "
            text += "; ".join(quoted) + ")"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({safe_repr(str(self))})"

    def __reduce__(self) -> tuple[Any, ...]:
        where = self.site if self.site is not None else self.step
        return (type(self), (where, self.state, self.cause), {"_reason": self.reason, "others": self.others})

    def attach(self, other: Defect) -> None:
        """Record a Defect a sibling branch raised while this one propagated."""
        self.others.append(other)
