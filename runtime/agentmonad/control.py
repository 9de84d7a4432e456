"""The runtime side of v2 control flow (docs/language.md §5–§6): retry pauses and deadlines.

Both the generated code and the reference interpreter (``AgentMonad.retry`` and
``AgentMonad.timeout``) use exactly these pieces, so the two cannot drift apart
on when a retry waits or how a deadline cancels.

**Retry pauses.** Before attempt k+1 of ``retry(N, backoff=S) e`` the run waits
``retry_delay(k, S)`` seconds: nominally ``S·2^(k−1)``, capped at
:data:`MAX_DELAY` (30 s), with *equal jitter* — half of the nominal pause is
kept and the other half is drawn uniformly, so the pause lies in
``[nominal/2, nominal]``. Equal jitter (rather than "full" jitter, uniform in
``[0, nominal]``) keeps every pause at least half as long as the spec says, so a
retry never hammers a struggling service at once, while concurrent runs that
failed together still spread out. ``backoff=0`` never waits (and never
suspends). Generated code calls ``await retry_pause(attempt, backoff)`` between
attempts.

Where the pause sleeps and where the jitter comes from is a :class:`RetryClock`
held in a context variable, so a test (or an embedding application) can install
its own for a block of code; :func:`fake_retry_clock` installs one that records
the pauses it is asked for and returns at once:

>>> with fake_retry_clock() as pauses:
...     asyncio.run(retry_pause(3, 0.5))
>>> pauses
[2.0]
>>> retry_delay(1, 0.5, jitter=0.0), retry_delay(1, 0.5, jitter=1.0), retry_delay(40, 0.5, jitter=1.0)
(0.25, 0.5, 30.0)

**Deadlines.** :class:`Deadline` behaves as ``asyncio.timeout``, with the one extra fact
generated code needs: whether the ``TimeoutError`` leaving the block is this
deadline's own (:meth:`Deadline.expired`). It is cheaper: the deadlines of a
task share one timer, armed lazily (``_TaskClock``), where ``asyncio.timeout``
makes, arms and cancels one per entry. Cancellation is asyncio's: at the
deadline the running task is cancelled, so whatever the body is awaiting — a
``par``/``each`` group (which cancels *and awaits* every branch), an MCP tool
call, a retry pause — is cancelled as a losing ``par`` branch is. A sync step
that is running is not interrupted (nothing can be, on an event loop): the
cancellation lands at the next await. A ``Defect`` raised while the body is
being cancelled is not turned into a timeout: it propagates, as in groups.
A task's deadlines are found through its clock, which its first deadline sets in
the run context as their one guard (the context is not copied, set and reset per
deadline); a ``par``/``each`` branch finds its parent's clock in the context it
copied, and so the deadlines it runs under (:func:`deadlines_around`).
The deadlines around the current code can be held (:func:`deadlines_held`)
while it waits for something a deadline does not cover: an MCP server's start
(``agentmonad.tools``), which its own start timeout bounds. A held deadline's
clock stops and resumes with the time it had left.

**The state a timeout reports.** ``timeout(S) e`` fails with the state after
the last step of ``e`` that completed (docs/language.md §6). Generated code keeps
that state in a local variable of whichever function the interrupted step
runs in — often a helper several calls below the ``timeout`` (a pipeline, a
``catch``, a ``loop`` in mid-chain). So the cancellation carries it out: each
await inside a timed body that a deadline can interrupt (an async step, a
``par``/``each`` group, a retry pause) notes the state it started from
(:func:`note_reached`) to the guards of the run context (:mod:`agentmonad.context`:
the budgets around it and the deadlines, through their tasks' clocks), a ``local``
on the way out replaces it with its own start state (it gives that back on any
failure), and the deadline that turns the cancellation into its timeout reads the
last note (:meth:`Deadline.reached`). Notes are written only in ``except`` clauses, so the
success path pays nothing. A guard keeps a note only while its *own*
cancellation unwinds the body (another cancellation — a losing ``par`` branch,
a caller's cancel — leaves no stale note behind), and a ``par`` group notes its
start state after it has cancelled and awaited every branch, so whatever its
branches noted is replaced, as the innermost-first order wants.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random as _random
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextvars import Token
from dataclasses import dataclass
from time import monotonic as _monotonic
from threading import get_ident as _thread_id
from types import TracebackType
from typing import TypeVar, cast, final

from .context import Failure as Failure  # defined beside the run context that holds one
from .context import RetryClock as RetryClock
from .context import _RUN, RunContext, current_run_context, reset_run_context, set_run_context
from .effects import perform

__all__ = [
    "MAX_DELAY",
    "retry_delay",
    "retry_pause",
    "RetryClock",
    "retry_clock",
    "use_retry_clock",
    "fake_retry_clock",
    "Deadline",
    "deadlines_held",
    "deadlines_around",
    "note_reached",
    "Failure",
    "previous_failure",
    "remember_failure",
    "forget_failure",
]

_S = TypeVar("_S")

#: The longest pause between two attempts, in seconds (before jitter).
MAX_DELAY = 30.0

#: "No state": a stateless spec's state is None, so None cannot say it.
_UNNOTED: object = object()


def note_reached(state: object) -> None:
    """An await of a timed body was interrupted by a cancellation, starting from ``state``:
    tell every guard (``Deadline``, ``Budget``) around the current code, through the run
    context. A guard keeps the note only while its own cancellation is on its way, and a
    later note replaces an earlier one (see the module docstring).

    Replacing, not keeping the first: notes are written innermost first, and whatever
    ran below the await (a step's own code, which may run other compiled pipelines)
    is not the spec's; an outer ``local`` replaces the note with its start state in turn.
    """
    for guard in current_run_context().guards:
        guard._note(state)


#: The real clock, used where no block installed another.
_REAL_CLOCK = RetryClock()


def retry_clock() -> RetryClock:
    """The :class:`RetryClock` in effect here (the real one unless a block installed another)."""
    return current_run_context().clock or _REAL_CLOCK


@contextlib.contextmanager
def use_retry_clock(clock: RetryClock) -> Iterator[RetryClock]:
    """Use ``clock`` for every retry pause inside the ``with`` block.

    It is a context variable, so it applies to the code run in the block and to
    the tasks it starts (``par`` branches, ``asyncio.run`` inside the block),
    and never leaks into other tasks or threads.
    """
    token = set_run_context(current_run_context().with_clock(clock))
    try:
        yield clock
    finally:
        reset_run_context(token)


@contextlib.contextmanager
def fake_retry_clock(jitter: float | Callable[[], float] = 1.0) -> Iterator[list[float]]:
    """Retry pauses that do not wait: yields the list of pauses asked for, in seconds.

    Each pause still yields to the event loop once (``asyncio.sleep(0)``), so it
    stays a point where a deadline or a cancellation can land, as a real pause
    is. ``jitter`` is the random draw (a fixed number in ``[0, 1]`` or a
    function giving one); the default ``1.0`` makes every pause its nominal
    ``backoff·2^(k−1)``, which keeps expectations readable.
    """
    delays: list[float] = []
    draw: Callable[[], float] = jitter if callable(jitter) else (lambda: jitter)

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        await asyncio.sleep(0)

    with use_retry_clock(RetryClock(sleep=sleep, random=draw)):
        yield delays


def retry_delay(attempt: int, backoff: float, *, jitter: float | None = None) -> float:
    """Seconds to wait after attempt ``attempt`` (1-based) failed, before the next one.

    ``min(backoff·2^(attempt−1), 30) · (1 + jitter) / 2``: equal jitter (see the
    module docstring). ``jitter`` is the random draw in ``[0, 1]``; ``None``
    draws it from the current :class:`RetryClock`. ``backoff=0`` gives ``0.0``
    without drawing. ``attempt`` may be arbitrarily large (the cap holds).

    >>> [retry_delay(k, 1.0, jitter=1.0) for k in (1, 2, 3, 4, 5, 6)]
    [1.0, 2.0, 4.0, 8.0, 16.0, 30.0]
    """
    if attempt < 1:
        raise ValueError(f"retry_delay: attempt must be at least 1, got {attempt}")
    if not (math.isfinite(backoff) and backoff >= 0):
        raise ValueError(f"retry_delay: backoff must be a finite number of seconds >= 0, got {backoff}")
    if backoff == 0:
        return 0.0
    try:
        # ldexp, not backoff * 2 ** (attempt - 1): no huge int, and an overflow is caught
        nominal = min(math.ldexp(backoff, attempt - 1), MAX_DELAY)
    except OverflowError:
        nominal = MAX_DELAY
    draw = retry_clock().random() if jitter is None else jitter
    if not 0.0 <= draw <= 1.0:  # also refuses NaN
        raise ValueError(f"retry_delay: the jitter draw must be in [0, 1], got {draw!r}")
    return nominal * (1.0 + draw) / 2.0


async def retry_pause(attempt: int, backoff: float, state: object = _UNNOTED) -> None:
    """Wait :func:`retry_delay` ``(attempt, backoff)`` seconds on the current
    :class:`RetryClock`; with ``backoff=0``, return at once without suspending.

    Generated code calls it between attempts: ``await retry_pause(attempt, backoff)``;
    inside a ``timeout`` it passes the failed attempt's ``state`` too, noted on a
    cancellation that lands in the pause (:func:`note_reached`).
    """
    delay = retry_delay(attempt, backoff)
    if delay > 0:
        try:
            run = current_run_context()
            if run.journal is None:
                await retry_clock().sleep(delay)
            else:  # a durable run records the pause: on replay it neither sleeps nor draws again
                await perform(run, "pause", None, lambda: retry_clock().sleep(delay))
        except asyncio.CancelledError:
            if state is not _UNNOTED:
                note_reached(state)
            raise


def previous_failure() -> Failure | None:
    """Inside attempt k > 1 of a ``retry``, how attempt k−1 failed; None elsewhere.

    A planner inside ``retry(N, on=PlanRejected)`` is shown its last rejection
    this way (docs/language.md §12). Tasks started inside the attempt (``par``
    branches) see it too: they copy the context they start in.
    """
    return current_run_context().failure


def remember_failure(error: object, attempt: int, first: Token[RunContext] | None) -> Token[RunContext]:
    """Before the next attempt of a ``retry``: attempt ``attempt`` failed with ``error``.

    Returns the token that :func:`forget_failure` undoes when the ``retry``
    ends: ``first``, the token of the retry's first remembered failure, when
    there is one (so the retry leaves the context as it found it).
    """
    token = set_run_context(current_run_context().with_failure(Failure(error, attempt)))
    return token if first is None else first


def forget_failure(token: Token[RunContext] | None) -> None:
    """A ``retry`` ended: the failures it remembered are forgotten (see :func:`remember_failure`);
    ``None``: it remembered none (its first attempt did not fail)."""
    if token is not None:
        reset_run_context(token)  # one made in another context (a run resumed elsewhere) is left


#: A Deadline's life: made, running (entered), its cancellation on its way, ended by it, left.
_NEW, _RUNNING, _EXPIRING, _EXPIRED, _DONE = "new", "running", "expiring", "expired", "done"


@final
class _TaskClock:
    """The one timer of a task's deadlines, armed lazily (issue 30), and their one guard in the
    run context (issue 48).

    The timer: entering a deadline arms it only when nothing is armed to fire by then, and
    leaving one disarms nothing — a timer that fires finds what is due among the deadlines
    still active, cancels the task for the outermost of them, and arms itself again for the
    next. ``asyncio.timeout`` makes, arms and cancels a timer per entry; here a ``timeout`` run
    over and over in one task arms one timer per ``seconds``, not per entry, and allocates
    nothing but the deadline itself (which also keeps the garbage collector's allocation
    count, and so its collections, down).

    The guard: the first deadline a task enters sets a run context holding the task's clock
    (:meth:`RunContext.with_guard`) and leaves it set; later ones find it there and touch the
    run context no more (a copy, a set and a reset per deadline were a third of its cost).
    Whoever looks for the deadlines around the current code (:func:`note_reached`,
    :func:`deadlines_held`, the durable journal) reads each clock's :attr:`active` deadlines
    (:func:`deadlines_around`): a ``par``/``each`` branch, whose task copies the context it
    starts in, finds its parent's clock there, and so its parent's deadlines, before its own.
    (It finds those active *now*, where it used to find those active when it started: the
    same for a branch: its group awaits it, so its parent enters and leaves none meanwhile.)

    It holds its task only weakly (the task's context holds the clock: that would be a cycle,
    left to the cycle collector at every task's end); each deadline holds its task."""

    __slots__ = ("time", "active", "handle", "armed", "loop", "owner", "thread")

    def __init__(self, task: asyncio.Task[object]) -> None:
        loop = task.get_loop()
        self.loop = loop
        #: Its task, weakly, and the thread its loop runs in: what tells a deadline entered in
        #: this task from one entered in a task that copied its context (a branch) without
        #: asking asyncio for the running loop (see Deadline.__enter__).
        self.owner = weakref.ref(task)
        self.thread = _thread_id()
        #: The loop's clock: ``time.monotonic`` itself when the loop's is asyncio's (the same
        #: clock, without the Python frame of ``BaseEventLoop.time``), else the loop's own.
        self.time: Callable[[], float] = (
            _monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        )
        #: The deadlines entered in this task and not yet left, outermost first.
        self.active: list[Deadline] = []
        self.handle: asyncio.TimerHandle | None = None
        #: When the armed timer fires (``inf``: none armed).
        self.armed = math.inf
        task.add_done_callback(_forget_clock)

    def _note(self, state: object) -> None:
        """Tell each of the task's active deadlines (see :func:`note_reached`)."""
        for deadline in self.active:
            deadline._note(state)

    def arm(self, when: float) -> None:
        """Make sure the timer fires at ``when`` or before."""
        if when < self.armed:
            if self.handle is not None:
                self.handle.cancel()
            self.armed = when
            self.handle = self.loop.call_at(when, self.fire)

    def leave(self, deadline: Deadline) -> None:
        """``deadline`` is left (innermost first, in one task); the timer stays as armed."""
        active = self.active
        if active and active[-1] is deadline:
            active.pop()
        else:
            with contextlib.suppress(ValueError):
                active.remove(deadline)

    def fire(self) -> None:
        """The timer is up: expire the outermost due deadline (those inside it end with it),
        and arm again for the next of those around it, or of all when none was due."""
        self.handle = None
        self.armed = math.inf
        now = self.time()
        following = math.inf
        for deadline in self.active:  # outermost first
            if deadline._state is not _RUNNING:
                continue
            if deadline._when <= now:
                deadline._expire()
                break
            following = min(following, deadline._when)
        if following < math.inf:
            self.arm(following)

    def __repr__(self) -> str:
        return f"<task clock: {len(self.active)} deadlines>"


#: Each task's clock, while the task lives (a done task's is dropped).
_CLOCKS: dict[asyncio.Task[object], _TaskClock] = {}


def _forget_clock(task: asyncio.Task[object]) -> None:
    clock = _CLOCKS.pop(task, None)
    if clock is not None and clock.handle is not None:
        clock.handle.cancel()


def deadlines_around(run: RunContext) -> list[Deadline]:
    """The deadlines the code running in ``run`` is under, outermost first: those of the tasks
    it was started from (a ``par``/``each`` branch's parent), then its own task's (see
    :class:`_TaskClock`). Left ones are not among them; a held one is, with no time running."""
    return [deadline for guard in run.guards if type(guard) is _TaskClock for deadline in guard.active]


@final
class Deadline:
    """``async with Deadline(seconds):`` (or ``with``: entering and leaving never wait) —
    ``asyncio.timeout(seconds)`` that knows whether the ``TimeoutError`` it raises is its
    own, on the task's shared timer.

    The clock starts when the block is entered. At the deadline the task running
    the block is cancelled; when that cancellation leaves the block, it becomes
    ``TimeoutError`` (as with ``asyncio.timeout``) and :meth:`expired` is true.
    Anything else leaving the block passes unchanged — in particular a
    ``Defect`` raised while the body was being cancelled, and a cancellation
    that came from outside (a losing ``par`` branch, a caller's cancel), which
    an enclosing deadline or group handles. Generated ``timeout(S) e``::

        deadline = Deadline(S)
        try:
            with deadline:
                ...  # e's steps, inline, each updating `state`
                return Ok(v, state)
        except TimeoutError:
            if not deadline.expired():
                raise
            return Err(Timeout(S), deadline.reached(state), SITE)

    A ``Deadline`` is entered at most once.
    """

    __slots__ = ("seconds", "_when", "_task", "_clock", "_cancelling", "_state", "_noted", "_holds", "_left")

    # Set when entered (a new one has only ``seconds`` and its state: each store is paid on
    # every ``timeout``'s success path, issue 48), or later where said.
    #: When it runs out, on the loop's clock (``inf`` while held).
    _when: float
    #: The task running the block, and its clock.
    _task: asyncio.Task[object]
    _clock: _TaskClock
    #: The task's cancel requests when entered: what tells its own cancellation apart.
    _cancelling: int
    #: Set by the first note while its cancellation unwinds: the state the last interrupted
    #: await noted.
    _noted: object
    #: Set when first held: how many holders hold it now (:func:`deadlines_held`), and the
    #: seconds it had left.
    _holds: int
    _left: float

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:  # also refuses NaN
            raise ValueError(f"Deadline: seconds must be > 0, got {seconds}")
        self.seconds = seconds
        self._state = _NEW

    def reached(self, state: _S) -> _S:
        """The state the timed body had reached when this deadline ended it: the last
        one noted while its cancellation unwound (:func:`note_reached`), else ``state`` (the
        state of the function the ``timeout`` is written in, when the interrupted
        await was there and noted nothing)."""
        noted = getattr(self, "_noted", _UNNOTED)  # unset: nothing noted
        # the note came from an await of the same body, in the body's state type
        return state if noted is _UNNOTED else cast(_S, noted)

    def _note(self, state: object) -> None:
        """Keep ``state`` if this deadline's own cancellation is unwinding the body."""
        if self._state is _EXPIRING:
            self._noted = state

    def expired(self) -> bool:
        """True when this deadline ended the block: its cancellation became the
        ``TimeoutError`` that left it. False before, on time, and when the block
        ended some other way (a Defect, an outer cancellation) even if the time
        had run out meanwhile."""
        return self._state is _EXPIRED

    def __enter__(self) -> Deadline:
        if self._state is not _NEW:
            raise RuntimeError("a Deadline can be entered only once")
        run = _RUN.get()
        guards = run.guards
        # the task's clock is the innermost guard when this is not the task's first deadline
        # and nothing set since (the common case: a `timeout` run over and over): it is this
        # task's if its task is its loop's current one and the loop runs in this thread — a
        # branch started in the clock's task copied it but runs as another task
        clock = guards[-1] if guards else None
        if (
            type(clock) is _TaskClock
            and clock.thread == _thread_id()
            and (task := asyncio.current_task(clock.loop)) is not None
            and task is clock.owner()
        ):
            pass
        else:
            # asking for the running loop costs a system call (asyncio checks the process id)
            task = asyncio.current_task()
            if task is None:
                raise RuntimeError("a Deadline must be entered in a task")
            clock = _CLOCKS.get(task)
            if clock is None:
                clock = _CLOCKS[task] = _TaskClock(task)
            if clock not in guards:
                # the task's first deadline (or the first since a construct around reset the
                # run context to one made before): the clock stays in the context, the guard
                # of this deadline and of every later one of the task (see _TaskClock)
                _RUN.set(run.with_guard(clock))
        self._task = task
        self._cancelling = task.cancelling()
        self._state = _RUNNING
        self._clock = clock
        self._when = when = clock.time() + self.seconds
        clock.active.append(self)
        if when < clock.armed:  # else the timer fires first, and finds this one then
            clock.arm(when)
        if run.journal is not None:  # a durable run: the deadline takes its place in the run's sequence
            try:
                run.journal.deadline_entered(self)
            except BaseException:  # a replay that does not match: the block is not entered
                clock.leave(self)
                self._state = _DONE
                raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._state is _NEW:
            raise RuntimeError("Deadline exited without being entered")
        clock = self._clock
        active = clock.active
        if active and active[-1] is self:  # left innermost first, as blocks nest
            active.pop()
        else:
            clock.leave(self)
        if self._state is _EXPIRING:
            self._state = _EXPIRED
            # as asyncio.timeout: the cancellation leaving the block is this deadline's own
            # when taking back its request leaves no more than the task had on entry
            # (cancel requests are counted, so a nested or an outer one is told apart)
            if self._task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError:
                journal = _RUN.get().journal
                if journal is not None:  # a durable run replays the expiry where it happened
                    journal.deadline_expired(self)
                raise TimeoutError from exc
            self._state = _DONE  # its time ran out, but something else ended the block
        else:
            self._state = _DONE

    async def __aenter__(self) -> Deadline:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def _expire(self) -> None:
        """The time is up (the task's clock found it due): cancel the task running the block."""
        self._state = _EXPIRING
        self._task.cancel()

    def _hold(self) -> bool:
        """Stop the clock (nested holds count); False when it has already run out."""
        if self._state is not _RUNNING:
            # not running (a task that outlived the block still sees it), or its
            # cancellation is on its way, which a hold cannot take back
            return False
        holds = getattr(self, "_holds", 0)
        if holds == 0:
            self._left = self._when - self._clock.time()
            self._when = math.inf
        self._holds = holds + 1
        return True

    def _release(self) -> None:
        """Undo one :meth:`_hold`; the last one restarts the clock with the time it had left."""
        self._holds -= 1
        if self._holds == 0 and self._state is _RUNNING:
            self._when = when = self._clock.time() + self._left
            self._clock.arm(when)

    def __repr__(self) -> str:
        state = "expired" if self._state is _EXPIRED else "new" if self._state is _NEW else "entered"
        return f"<Deadline {self.seconds} s ({state})>"


@contextlib.contextmanager
def deadlines_held() -> Iterator[None]:
    """Stop the clocks of every :class:`Deadline` around the current code while inside.

    For a wait that the ``timeout``s around it do not cover: ``agentmonad.tools``
    holds them while a call waits for its MCP server to start (which has a start
    timeout of its own), so that ``timeout(1) tool`` times the call, not the start.
    On the way out each deadline resumes with the time it had left when held
    (when several tasks hold one, when the last lets go). A deadline that has
    already run out is not held: its cancellation is already on its way. Other
    cancellations (a losing ``par`` branch, a caller's cancel) are not affected.
    Must be entered in a task running on an event loop.
    """
    held = [d for d in deadlines_around(current_run_context()) if d._hold()]
    try:
        yield
    finally:
        for deadline in reversed(held):
            deadline._release()
