"""Errors of the runtime: the built-in error types and ``Defect``.

Built-in *errors* (``MergeConflict``, ``ToolFailed``, ``ToolUnavailable``) travel
on the failure track inside an ``Err``. They compare by value, so two runs that
fail the same way give equal outcomes.

A ``Defect`` is not an error: it is a bug (an undeclared exception escaping a
step, or an ``Err`` of an undeclared type) and propagates as a Python exception,
carrying the step, its ``.mce`` site, the state at that point and the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .outcome import Site

__all__ = ["Defect", "MergeConflict", "ToolFailed", "ToolUnavailable"]


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

    def __repr__(self) -> str:
        args = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._fields)
        return f"{type(self).__name__}({args})"


class MergeConflict(_ValueError):
    """Parallel branches changed the same state field to different values.

    ``field`` is the field's name (``"<state>"`` for a state that is not a
    dataclass or model), ``values`` the branches' values of it, in branch order,
    and ``states`` the branches' whole states.

    >>> str(MergeConflict("answer", ["a", "b"], [1, 2]))
    "par branches changed field 'answer' to different values: ['a', 'b']"
    """

    _fields = ("field", "values", "states")

    def __init__(self, field: str, values: Sequence[object], states: Sequence[object]) -> None:
        self.field = field
        self.values = list(values)
        self.states = list(states)
        super().__init__(
            f"par branches changed field {field!r} to different values: {self.values!r}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.field, self.values, self.states))


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
        super().__init__(f"{server}.{tool} failed: {text}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.server, self.tool, self.text))


class ToolUnavailable(_ValueError):
    """An MCP tool could not be reached, is not listed, or its result is invalid.

    >>> str(ToolUnavailable("search", "web_search", "server exited"))
    'search.web_search unavailable: server exited'
    """

    _fields = ("server", "tool", "reason")

    def __init__(self, server: str, tool: str, reason: str) -> None:
        self.server = server
        self.tool = tool
        self.reason = reason
        super().__init__(f"{server}.{tool} unavailable: {reason}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.server, self.tool, self.reason))


class Defect(Exception):
    """A bug, not an error: propagates through ``catch``/``orelse`` untouched.

    ``Defect(where, state, cause)``: ``where`` is the step's ``Site`` (or just its
    name when the location is unknown), ``state`` the state the step received
    (or failed with), ``cause`` the original exception (also ``__cause__``).
    ``others`` holds Defects that other ``par`` branches raised meanwhile.

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
        reason: str | None = None,
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
        self.reason = reason
        self.others: list[Defect] = list(others)
        self.__cause__ = cause
        super().__init__(self._message())

    def _message(self) -> str:
        at = f" at {self.site.location}" if self.site is not None else ""
        what = self.reason
        if what is None:
            what = (
                f"{type(self.cause).__name__}: {self.cause}"
                if self.cause is not None
                else "unknown defect"
            )
        return f"defect in step {self.step!r}{at}: {what}"

    def __str__(self) -> str:
        text = self._message()
        if self.others:
            n = len(self.others)
            text += f" (+{n} other defect{'s' if n != 1 else ''} in sibling branches: "
            text += "; ".join(o._message() for o in self.others) + ")"
        return text

    def attach(self, other: Defect) -> None:
        """Record a Defect a sibling branch raised while this one propagated."""
        self.others.append(other)
