"""The run context: everything a run holds while it runs, in one ``ContextVar``.

A run's state that is not the spec's state — the scopes it has open (model
clients, MCP sessions), the meters counting its tokens (usage and budgets), the
deadlines it runs under, the failure a ``retry`` shows its planner, the retry
clock, and the hooks later capabilities attach (a journal of effects, an event
sink, a human-input handler) — is one :class:`RunContext`, held in one
``ContextVar``.

A ``RunContext`` is never changed in place: a construct that opens something
(``llm_scope``, ``budget``) sets a *new* context made with one of the ``with_…``
methods, and resets the variable when it closes. So a ``par`` branch (its task
copies the ``contextvars`` context when it starts) sees what was open where it
started and nothing its siblings open later, exactly as with one variable per
field; what the fields hold may be shared and mutable (the run's ``Usage`` is one
object every branch adds to). Deadlines are the exception: a task's first one sets
the task's clock as a guard and leaves it set, and the clock lists the task's
deadlines as they are entered and left (``agentmonad.control._TaskClock``).

The core imports neither ``agentmonad.llm`` nor ``agentmonad.mcp``: a subpackage
keeps what it needs in :attr:`RunContext.parts`, keyed by a class of its own
(``agentmonad.llm`` keys its scope by its scope class and its configuration by
``LLMConfig``), read back with :meth:`RunContext.part`. Open scopes share one
base, :class:`Scope`, whose :meth:`Scope.close` waits, shielded, until
everything the scope owned is closed.

Module-level globals elsewhere (the openai create parameters, the jinja
environment, the plan engine) are caches of things that do not depend on the run,
not run state, so they stay where they are.
"""

from __future__ import annotations

import asyncio
import contextlib
import random as _random
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from contextvars import ContextVar, Token
from typing import Any, Literal, Protocol, TypeVar, cast, final

from .events import Effect as Effect
from .events import EffectKind as EffectKind
from .events import EventSink as EventSink
from .events import OpenSpan

__all__ = [
    "Effect",
    "EffectKind",
    "Meter",
    "Guard",
    "Budgeted",
    "Branches",
    "Failure",
    "RetryClock",
    "RunContext",
    "Scope",
    "Journal",
    "EventSink",
    "HumanInput",
    "current_run_context",
    "hooks",
    "HOOKS_ALIVE",
    "set_run_context",
    "reset_run_context",
]

_T = TypeVar("_T")


class Meter(Protocol):
    """What counts tokens (``agentmonad.usage``: a run's ``Usage``, a ``Budget``)."""

    def add(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Count one model call's tokens."""
        ...


class Guard(Protocol):
    """What bounds a body and may cancel it: a task's deadlines (``agentmonad.control``: one
    guard per task, its clock, for all the deadlines it enters) or a ``Budget``
    (``agentmonad.usage``). While its cancellation unwinds the body, each await it interrupts
    notes the state it started from (:meth:`_note`, innermost first, each replacing the last):
    the state the guard reports."""

    def _note(self, state: object) -> None:
        """An await of the body was interrupted, starting from ``state`` (kept only while
        this guard's own cancellation is on its way)."""
        ...


@final
@dataclass(frozen=True, slots=True)
class RetryClock:
    """Where retry pauses sleep and where their jitter comes from.

    ``sleep(seconds)`` is awaited for each pause (default ``asyncio.sleep``);
    ``random()`` gives the jitter draw, a number in ``[0, 1]`` (default
    ``random.random``). Install one with :func:`use_retry_clock`.
    """

    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    random: Callable[[], float] = _random.random


@final
@dataclass(frozen=True, slots=True)
class Failure:
    """The error attempt ``attempt`` of the innermost running ``retry`` failed with."""

    error: object
    attempt: int


class Budgeted(Guard, Meter, Protocol):
    """A guard that counts tokens too: a ``Budget`` (``agentmonad.usage``)."""


class Branches(Protocol):
    """The branches of one ``par``/``each`` group, as its :class:`Journal` sees them: the group
    (``agentmonad.concurrency.run_group``) asks for an element's run context when it starts the
    element, and says when it has taken the element's end in. So a journal knows which branches are
    live — started and not yet taken in by their group — from the group itself."""

    def context(self, index: int) -> RunContext:
        """The run context element ``index`` runs in; the element is live from now."""
        ...

    def ended(self, index: int) -> None:
        """The group has taken element ``index``'s end in (decided on its result, or, when the group
        fails, cancelled and awaited its siblings): it is no longer live."""
        ...


class Journal(Protocol):
    """Where a durable run records each effect it performs, and finds it again when it resumes
    (``agentmonad.durable`` attaches one; docs/language.md §13).

    The seam (:mod:`agentmonad.effects`) hands it every effect: a recorded one gives its
    recorded result without running the call; any other is run and recorded. It also sees what
    decides an effect's identity besides call order (a ``par``/``each`` group starting) and
    what else a replay must repeat (a ``timeout`` that fired). ``None`` in
    :attr:`RunContext.journal` (the default): nothing is recorded."""

    def perform(self, effect: Effect, call: Callable[[], Awaitable[_T]]) -> Awaitable[_T]:
        """The result of the async effect ``effect``: its recorded result, or ``call()``'s, recorded."""
        ...

    def perform_sync(self, effect: Effect, call: Callable[[], _T]) -> _T:
        """:meth:`perform` for a sync effect."""
        ...

    def branches(self, context: RunContext) -> Branches:
        """A ``par``/``each`` group starts in ``context``: what names its elements' branches."""
        ...

    def deadline_entered(self, deadline: Guard) -> None:
        """A ``timeout``'s deadline was entered here (it takes its place in the run's sequence)."""
        ...

    def deadline_expired(self, deadline: Guard) -> None:
        """``deadline`` fired: its ``timeout`` failed with ``Timeout``."""
        ...


class HumanInput(Protocol):
    """Who answers when a run asks a person (an ``ask`` step, :mod:`agentmonad.human`):
    ``agentmonad.human.ConsoleHuman`` (a terminal), ``agentmonad.testing.ScriptedHuman``.

    ``None`` in :attr:`RunContext.human` (the default): a run cannot ask (``NoOneToAsk``,
    unless a journal makes the run wait)."""

    # ``question`` is an ``agentmonad.human.Question`` (typed Any here: agentmonad.human builds on
    # this module, which must not import it back)
    def ask(self, question: Any) -> Awaitable[object]:
        """The person's answer to ``question``, an ``agentmonad.human.Question`` (its site, name, element index, payload, answer
        type and JSON schema, rendered prompt). An interactive handler asks again until the
        answer validates (``question.parse``); whatever it returns is validated by the caller
        (an invalid answer is ``BadAnswer``). Raising ``EOFError``: the input ended."""
        ...


class Scope:
    """An open run scope: what it owns (clients, sessions) lives until the outermost
    scope of its kind closes. Subclasses say what closing starts (:meth:`closing`);
    :meth:`close` waits for all of it."""

    __slots__ = ()

    def closing(self) -> Collection[Awaitable[object]]:
        """Start closing everything this scope owns, without waiting; what to wait for."""
        raise NotImplementedError

    async def close(self) -> None:
        """Close everything this scope owns and wait until each is closed, even if this
        task is cancelled meanwhile (the cancellation is raised once all are closed)."""
        pending = {asyncio.ensure_future(a) for a in self.closing()}
        cancelled = False
        while pending:
            try:
                # asyncio.wait never cancels what it waits for: a second cancellation
                # of this task must not leave anything half closed.
                await asyncio.wait(pending)
            except asyncio.CancelledError:
                cancelled = True
            pending = {t for t in pending if not t.done()}
        if cancelled:
            raise asyncio.CancelledError


#: The hook attachments alive in this process (ids of :class:`_Attachment` objects): empty
#: while no run context with a hook attached exists anywhere, which compiled code tests
#: (one global read, no ``ContextVar``) before it reads its run context at all
#: (``agentmonad.compiled.hooked_run``). A set, not a counter: adding and discarding are
#: atomic, and the one object can be imported by name.
HOOKS_ALIVE: set[int] = set()


@final
class _Attachment:
    """What keeps :data:`HOOKS_ALIVE` non-empty: a hooked run context holds one, every copy
    of it shares it, and it leaves the set when the last of them is gone. So while any
    task anywhere runs under a hooked context — even one started inside a ``with hooks()``
    block that has closed since — the set is not empty; with none alive, it is."""

    __slots__ = ()

    def __init__(self) -> None:
        HOOKS_ALIVE.add(id(self))

    def __del__(self) -> None:
        # before the memory is freed, so the id cannot be another live attachment's yet
        HOOKS_ALIVE.discard(id(self))


_new_context = object.__new__


@final
class RunContext:
    """What one run holds while it runs (see the module docstring). Immutable: the
    ``with_…`` methods make a changed copy, which the caller sets."""

    __slots__ = (
        "parts",
        "meters",
        "guards",
        "failure",
        "clock",
        "journal",
        "events",
        "human",
        "index",
        "hooked",
        "_attachment",
        "span",
    )

    def __init__(
        self,
        parts: Mapping[type, object],
        meters: tuple[Meter, ...],
        guards: tuple[Guard, ...],
        failure: Failure | None,
        clock: RetryClock | None,
        journal: Journal | None = None,
        events: EventSink | None = None,
        human: HumanInput | None = None,
        index: tuple[int, ...] = (),
        span: OpenSpan | None = None,
    ) -> None:
        #: What subpackages keep for the run, keyed by a class of their own (open scopes, settings).
        self.parts = parts
        #: The token meters open here, outermost first: every model call adds to each.
        self.meters = meters
        #: The budgets the current code runs under and the clocks of the tasks whose deadlines
        #: it runs under (``agentmonad.control.deadlines_around``), outermost first.
        self.guards = guards
        #: Inside attempt k > 1 of a ``retry``: how attempt k−1 failed.
        self.failure = failure
        #: The retry clock installed here (``None``: the real one).
        self.clock = clock
        #: Hooks the next capabilities attach; ``None``: nothing attached, the fast path.
        self.journal = journal
        self.events = events
        self.human = human
        #: Whether any hook is attached: the one test a caller makes before an effect; false,
        #: it makes the plain call; true, it goes through :mod:`agentmonad.effects`.
        self.hooked = journal is not None or events is not None or human is not None
        #: Held while hooked, shared by every copy: keeps :data:`HOOKS_ALIVE` non-empty.
        self._attachment = _Attachment() if self.hooked else None
        #: The element indices of the ``each``/``par`` branches the current code runs in,
        #: outermost first; kept only while hooked (no hook, no one reads it).
        self.index = index
        #: The innermost span open here (a run, an effect, a ``par``/``each`` group) while an
        #: event sink is attached (:mod:`agentmonad.observe`); ``None`` otherwise.
        self.span = span

    def _copy(self) -> RunContext:
        # slot by slot, not through __init__: a copy is made at every budget and meter
        # entered, and this is a third of the cost of the call with keywords
        new = _new_context(RunContext)
        new.parts = self.parts
        new.meters = self.meters
        new.guards = self.guards
        new.failure = self.failure
        new.clock = self.clock
        new.journal = self.journal
        new.events = self.events
        new.human = self.human
        new.index = self.index
        new.hooked = self.hooked
        new._attachment = self._attachment
        new.span = self.span
        return new

    def part(self, key: type[_T]) -> _T | None:
        """What was kept under ``key`` (see :meth:`with_part`), or ``None``."""
        return cast("_T | None", self.parts.get(key))

    def with_part(self, key: type[_T], value: _T | None) -> RunContext:
        """This context with ``value`` kept under ``key`` (``None``: removed)."""
        new = self._copy()
        parts: dict[type, Any] = dict(self.parts)
        if value is None:
            parts.pop(key, None)
        else:
            parts[key] = value
        new.parts = parts
        return new

    def with_meter(self, meter: Meter) -> RunContext:
        """This context with ``meter`` counting the tokens of every model call inside."""
        new = self._copy()
        new.meters = (*self.meters, meter)
        return new

    def with_guard(self, guard: Guard) -> RunContext:
        """This context under one more guard, innermost (a task's deadline clock)."""
        new = self._copy()
        new.guards = (*self.guards, guard)
        return new

    def with_budget(self, budget: Budgeted) -> RunContext:
        """This context under one more budget: a guard that is a meter too."""
        new = self._copy()
        new.guards = (*self.guards, budget)
        new.meters = (*self.meters, budget)
        return new

    def with_failure(self, failure: Failure | None) -> RunContext:
        """This context inside a ``retry`` attempt that follows ``failure``."""
        new = self._copy()
        new.failure = failure
        return new

    def with_clock(self, clock: RetryClock) -> RunContext:
        """This context with ``clock`` for every retry pause inside."""
        new = self._copy()
        new.clock = clock
        return new

    def with_index(self, index: int) -> RunContext:
        """This context inside element ``index`` of an ``each``/``par`` group."""
        new = self._copy()
        new.index = (*self.index, index)
        return new

    def with_span(self, span: OpenSpan) -> RunContext:
        """This context inside ``span`` (an event sink is attached)."""
        new = self._copy()
        new.span = span
        return new

    def with_hooks(
        self, *, journal: Journal | None = None, events: EventSink | None = None, human: HumanInput | None = None
    ) -> RunContext:
        """This context with the given hooks attached (the others as they were)."""
        new = self._copy()
        new.journal = journal if journal is not None else self.journal
        new.events = events if events is not None else self.events
        new.human = human if human is not None else self.human
        new.hooked = new.journal is not None or new.events is not None or new.human is not None
        if new.hooked and new._attachment is None:
            new._attachment = _Attachment()
        return new

    def __repr__(self) -> str:
        return (
            f"<RunContext parts={[k.__name__ for k in self.parts]} meters={len(self.meters)}"
            f" guards={len(self.guards)} failure={self.failure!r}>"
        )


#: Outside any run: nothing open, nothing attached.
EMPTY = RunContext({}, (), (), None, None)

#: The one run-scoped variable of the runtime.
_RUN: ContextVar[RunContext] = ContextVar("agentmonad_run", default=EMPTY)


def current_run_context() -> RunContext:
    """The run context in effect here (:data:`EMPTY` outside any run)."""
    return _RUN.get()


def set_run_context(context: RunContext) -> Token[RunContext]:
    """Make ``context`` the run context of the current code, until :func:`reset_run_context`."""
    return _RUN.set(context)


@contextlib.contextmanager
def hooks(
    *, journal: Journal | None = None, events: EventSink | None = None, human: HumanInput | None = None
) -> Iterator[RunContext]:
    """Attach hooks to the runs started inside the ``with`` block (and the tasks they start):
    every effect then goes through :mod:`agentmonad.effects`."""
    token = set_run_context(current_run_context().with_hooks(journal=journal, events=events, human=human))
    try:
        yield current_run_context()
    finally:
        reset_run_context(token)


def reset_run_context(token: Token[RunContext]) -> None:
    """Undo the :func:`set_run_context` that gave ``token``. A token made in another context
    (a scope closed from a task that never saw it opened) is ignored: that context is gone."""
    try:
        _RUN.reset(token)
    except ValueError:
        pass
