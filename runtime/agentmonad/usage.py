"""Token usage: the run's accumulator and ``budget(N) e``.

In the core layer, not in ``agentmonad.llm``: ``budget`` is a construct of the
language that the combinators run, and the core imports neither subpackage
(``agentmonad.llm.usage`` re-exports this module's names).

Every model call adds its prompt and completion tokens to each *meter* open
around it: the run's :class:`Usage` (``llm_scope``'s, and any ``with usage()``
a caller opened) and every :class:`Budget` it runs inside. The meters live in
the run context (:mod:`agentmonad.context`) as a tuple of shared objects, so ``par``/``each``
branches (whose tasks copy the context) add to the same meters as the code
that started them.

``budget(N)`` (for the compiled ``budget(N) e``) is an async context manager
like ``asyncio.timeout``::

    spending = budget(1000)
    try:
        async with spending:
            ...                      # the body of e, updating `state`
            return spending.ending(Ok(v, state))   # every return of the body
    except BudgetExceeded as exc:
        return Err(exc, spending.state_after(state))

As soon as the tokens used inside pass ``N`` (``used > N``), the task that
entered the budget is cancelled — which cancels and awaits whatever it is
waiting for: a model call in flight, every branch of a ``par`` — and the
budget's exit turns that cancellation into ``BudgetExceeded(limit, used)``.
The cancellation is scheduled (``call_soon``), never delivered inside the
call that recorded the tokens, so that call finishes its bookkeeping; if the
body ends before the next await, the exit raises ``BudgetExceeded`` all the
same. LLM steps wait at :func:`budget_checkpoint` before each request and
after each reply, so once a budget is spent no further request starts. A
cancellation from outside (a ``timeout``, a failing sibling) is told
apart with ``Task.uncancel``, as ``asyncio.timeout`` does, and propagates.

The failure keeps the state after the body's last completed step (docs/language.md
§6: a failed step keeps the state it failed with): when the cancellation
arrives, that is the generated code's ``state``; when the body had already
returned its outcome through :meth:`Budget.ending`, it is that outcome's state
(:meth:`Budget.state_after`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import Token
from dataclasses import dataclass
from types import TracebackType

from typing import Any, TypeVar, cast

from .context import RunContext, current_run_context, reset_run_context, set_run_context
from .control import _UNNOTED
from .events import count_tokens
from .outcome import Err, Ok
from .errors import BudgetExceeded

_O = TypeVar("_O", bound="Ok[Any, Any] | Err[Any, Any]")
_T = TypeVar("_T")

__all__ = [
    "is_token_count",
    "Usage", "ModelUsage", "usage", "current_usage", "record_usage", "Budget", "budget", "budget_checkpoint"]


def is_token_count(value: object) -> bool:
    """A token count is a whole number ≥ 0 (an ``int``; ``True`` is no count)."""
    return type(value) is int and value >= 0


@dataclass(frozen=True)
class ModelUsage:
    """One model's share of a :class:`Usage`."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Usage:
    """Tokens used by the model calls inside one meter (a run, a ``with usage()``).

    ``requests`` counts the requests answered (a repair is a request),
    ``prompt_tokens``/``completion_tokens``/``total_tokens`` as the endpoint
    reported them; :meth:`by_model` splits them by the spec's model names.

    >>> u = Usage()
    >>> u.add("fast", 12, 3); u.add("fast", 10, 5)
    >>> u
    Usage(requests=2, prompt_tokens=22, completion_tokens=8, total_tokens=30)
    """

    __slots__ = ("requests", "prompt_tokens", "completion_tokens", "_models")

    def __init__(self) -> None:
        self.requests = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._models: dict[str, ModelUsage] = {}

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Count one answered request of ``model``."""
        self.requests += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        old = self._models.get(model, ModelUsage())
        self._models[model] = ModelUsage(
            old.requests + 1, old.prompt_tokens + prompt_tokens, old.completion_tokens + completion_tokens
        )

    def by_model(self) -> dict[str, ModelUsage]:
        """Each model's usage, by the spec's model name."""
        return dict(self._models)

    def as_dict(self) -> dict[str, int]:
        """The totals as plain data (what ``mcec run`` prints)."""
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }

    def __repr__(self) -> str:
        return (
            f"Usage(requests={self.requests}, prompt_tokens={self.prompt_tokens}, "
            f"completion_tokens={self.completion_tokens}, total_tokens={self.total_tokens})"
        )


@contextmanager
def usage() -> Iterator[Usage]:
    """A :class:`Usage` counting every model call inside (also in tasks started inside).

    It may wrap a synchronous ``asyncio.run(...)``::

        with usage() as u:
            asyncio.run(pipeline(state, value))
        print(u.total_tokens)
    """
    meter = Usage()
    token = set_run_context(current_run_context().with_meter(meter))
    try:
        yield meter
    finally:
        reset_run_context(token)


def current_usage() -> Usage | None:
    """The innermost :class:`Usage` open here (``llm_scope``'s or a ``usage()``), if any."""
    for meter in reversed(current_run_context().meters):
        if isinstance(meter, Usage):
            return meter
    return None


def record_usage(model: str, prompt_tokens: int, completion_tokens: int, *, model_id: str | None = None) -> None:
    """Add one request's tokens to every meter open here (LLM steps call this; so may user steps
    that call a model themselves, so that budgets see their tokens).

    With an event sink attached, the request is a ``ModelRequest`` event (``model_id``: the
    model the request named, when known) and its tokens are counted to the effect it is made
    in (``EffectEnded``'s tokens).

    The counts must be whole numbers ≥ 0 (``ValueError`` otherwise): a negative count would
    take back tokens other calls spent, and let a budget's body spend more than its limit.
    """
    for label, count in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens)):
        if not is_token_count(count):
            raise ValueError(f"{label} must be a token count (an int ≥ 0), not {count!r}")
    run = current_run_context()
    for meter in run.meters:
        meter.add(model, prompt_tokens, completion_tokens)
    if run.events is not None:  # a ModelRequest event, its tokens counted to the effect making it
        count_tokens(run.events, run.span, model, model_id, prompt_tokens, completion_tokens)


class Budget:
    """``budget(N)``: see the module docstring. ``used`` counts the tokens inside so far."""

    __slots__ = (
        "limit", "used", "_task", "_cancelling", "_handle", "_cancelled", "_token", "_loop", "_closed", "_ending",
        "_noted",
    )

    def __init__(self, limit: int) -> None:
        if type(limit) is not int or limit < 0:
            raise ValueError(f"a token budget must be an int ≥ 0, not {limit!r}")
        self.limit = limit
        self.used = 0
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancelling = 0
        self._handle: asyncio.Handle | None = None
        self._cancelled = False
        self._token: Token[RunContext] | None = None
        self._closed: asyncio.Event | None = None
        self._ending: Ok[Any, Any] | Err[Any, Any] | None = None
        self._noted: object = _UNNOTED  # what the await its cancellation interrupted noted

    @property
    def exceeded(self) -> bool:
        return self.used > self.limit

    def add(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        was = self.exceeded
        self.used += prompt_tokens + completion_tokens
        if not was and self.exceeded and self._task is not None and self._loop is not None:
            self._handle = self._loop.call_soon(self._expire)

    def _expire(self) -> None:
        self._handle = None
        if self._task is not None and not self._task.done():
            self._cancelled = True
            self._task.cancel()

    async def __aenter__(self) -> Budget:
        if self._task is not None:
            raise RuntimeError("a Budget can be entered only once")
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("budget() must be used inside a task")
        self._task = task
        self._loop = asyncio.get_running_loop()
        self._cancelling = task.cancelling()
        self._closed = asyncio.Event()
        self._token = set_run_context(current_run_context().with_budget(self))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._task is not None and self._closed is not None
        self._closed.set()
        if self._token is not None:
            reset_run_context(self._token)  # one left from another context is ignored
        if self._handle is not None:  # exceeded, but the body ended before the cancellation came
            self._handle.cancel()
            self._handle = None
        if self._cancelled:
            self._cancelled = False
            if self._task.uncancel() <= self._cancelling and exc_type in (None, asyncio.CancelledError):
                raise BudgetExceeded(self.limit, self.used) from None
            return None
        if self.exceeded and exc_type is None:
            raise BudgetExceeded(self.limit, self.used)
        return None

    def ending(self, outcome: _O) -> _O:
        """The body is returning ``outcome`` (generated code returns through this): should the
        budget find itself spent as it closes, its failure keeps ``outcome``'s state."""
        self._ending = outcome
        return outcome

    def state_after(self, state: _T) -> _T:
        """The state a ``BudgetExceeded`` of this budget keeps: the state of the outcome the body
        returned (see :meth:`ending`); when the cancellation came before the body returned, the
        state the interrupted await noted, however deep in helpers (``agentmonad.control``'s
        ``note_reached``), or ``state`` (the generated code's state after the last completed
        step) when that await noted none.

        >>> spending = Budget(10)
        >>> spending.state_after("reached")
        'reached'
        >>> _ = spending.ending(Ok("done", "returned"))
        >>> spending.state_after("reached")
        'returned'
        """
        if self._ending is not None:
            return self._ending.state  # type: ignore[no-any-return]
        noted = self._noted
        # the note came from an await of the same body, in the body's state type
        return state if noted is _UNNOTED else cast(_T, noted)

    def _note(self, state: object) -> None:
        """Keep ``state`` if this budget's own cancellation is unwinding the body."""
        if self._cancelled:
            self._noted = state

    def __repr__(self) -> str:
        return f"Budget(limit={self.limit}, used={self.used})"


async def budget_checkpoint() -> None:
    """Wait here while a budget open around this code is exceeded and not yet closed.

    The budget's cancellation then arrives at this await (in the task that
    entered it, or through the ``par`` that runs this branch), so no further
    request starts once a budget is spent. Should nothing cancel this task
    (it runs detached from the budget's task), it goes on when the budget has
    closed. LLM steps call this before each request and after each reply;
    a user step that calls a model itself may too.
    """
    while True:
        spent = next(
            (m for m in reversed(current_run_context().meters) if type(m) is Budget and m.exceeded and m._closed is not None and not m._closed.is_set()),
            None,
        )
        if spent is None:
            return
        assert spent._closed is not None
        await spent._closed.wait()


def budget(limit: int) -> Budget:
    """An async context manager failing with ``BudgetExceeded`` once the tokens used inside pass ``limit``."""
    return Budget(limit)
