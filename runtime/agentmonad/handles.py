"""Typed handles on durable runs (docs/language.md §13 "Typed handles"): start a run of a
compiled module's pipeline, answer its questions and read its Outcome with the types its spec
declares, so that ``mypy --strict`` checks a program that drives runs.

Every generated module declares, after its pipelines, a class ``Asks`` (one attribute per ``ask``
of its spec, an :class:`Ask` typed with its question and answer types) and a class ``Runs`` (one
attribute per pipeline, an :class:`Entry` typed with its input and output types)::

    handle = await support_mce.Runs.handle.start(Ticket(...), run_id="t1", db=db)
    question = await handle.question(handle.asks.approve)   # Question[Ticket, Approval]
    await question.answer(Approval(approve=True))
    match await handle.result():                             # RunResult[str]
        case Finished(value=text): ...

The values cross to the durable door (:mod:`agentmonad.durable.runs`) as JSON and come back
decoded with the module's ``SPEC_INFO`` types. The door's calls block (they run the run to where
it ends or waits, in an event loop of their own), so the handle runs them in a thread.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar, final

from .events import Event
from .spec import AskInfo, SpecInfo, spec_info

__all__ = ["Ask", "Cancelled", "Defected", "Entry", "ErrorInfo", "Failed", "Finished", "Question", "RunHandle",
           "RunResult", "Waiting"]

Q = TypeVar("Q")
A = TypeVar("A")
I = TypeVar("I")  # noqa: E741 - the input type, as Outcome's letters
O = TypeVar("O")
AS = TypeVar("AS")


# ----------------------------------------------------------------------------- what a run gives


@final
@dataclass(frozen=True, slots=True)
class ErrorInfo:
    """An error a run failed with, as its report describes it: the error class's name, its
    message, the ``.mce`` site that failed (when known) and its fields as JSON."""

    type: str
    message: str
    site: str | None = None
    fields: Mapping[str, object] = field(default_factory=dict)


@final
@dataclass(frozen=True, slots=True)
class Finished(Generic[O]):
    """The run ended Ok: its output ``value`` (typed as the pipeline's output) and its final
    ``state`` (decoded with the spec's state type)."""

    run_id: str
    value: O
    state: object


@final
@dataclass(frozen=True, slots=True)
class Failed:
    """The run ended with an error its pipeline declares (an ``Err``)."""

    run_id: str
    error: ErrorInfo
    state: object


@final
@dataclass(frozen=True, slots=True)
class Defected:
    """The run ended with a defect (a bug: an exception no step declared)."""

    run_id: str
    message: str
    site: str | None
    cause: ErrorInfo | None


@final
@dataclass(frozen=True, slots=True)
class Waiting:
    """The run waits for people: the names of the questions it waits on
    (:meth:`RunHandle.question` gives them typed)."""

    run_id: str
    asks: tuple[str, ...]


@final
@dataclass(frozen=True, slots=True)
class Cancelled:
    """The run was cancelled (``resume`` takes it up again)."""

    run_id: str


RunResult: TypeAlias = Finished[O] | Failed | Defected | Waiting | Cancelled
"""Where a run is when it stops: ended (``Finished``, ``Failed``, ``Defected``, ``Cancelled``) or
waiting for people (``Waiting``)."""


# ----------------------------------------------------------------------------- asks and questions


@final
class Ask(Generic[Q, A]):
    """An ``ask`` of a spec: its name; typed with its question type ``Q`` and answer type ``A``
    (the generated ``Asks`` class declares one per ``ask``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Ask({self.name!r})"


@final
class Question(Generic[Q, A]):
    """An open question of a waiting run: which ``ask`` (``name``) at which element ``index``
    (inside ``each``/``par``), its ``payload`` (typed as the question type), the rendered
    ``prompt``, its ``deadline`` (ISO UTC time, None: none) and whether it ``expired``."""

    __slots__ = ("run_id", "name", "index", "payload", "prompt", "deadline", "expired", "_handle", "_answer_type")

    def __init__(self, handle: RunHandle[Any, Any], name: str, index: tuple[int, ...], payload: Q, prompt: str | None,
                 deadline: str | None, expired: bool, answer_type: Any) -> None:
        self.run_id = handle.run_id
        self.name = name
        self.index = index
        self.payload = payload
        self.prompt = prompt
        self.deadline = deadline
        self.expired = expired
        self._handle = handle
        self._answer_type = answer_type

    async def answer(self, value: A) -> None:
        """Answer it with ``value`` (typed as the answer type) and let the run go on, here, to
        where it ends or waits again (:meth:`RunHandle.result` then says which).
        :class:`~agentmonad.durable.errors.DurableError` when the run refuses the answer."""
        from pydantic import TypeAdapter

        text = TypeAdapter(self._answer_type).dump_json(value).decode()
        await self._handle._answer(self.name, self.index, text)

    def __repr__(self) -> str:
        return f"Question({self.run_id!r}, {self.name!r}, index={list(self.index)}, payload={self.payload!r})"


# ----------------------------------------------------------------------------- runs


class _Watch:
    """The event sink a handle attaches to the runs this process runs: it hands each event to the
    handle's loop (the run tells it from the thread it runs in)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Event | None]) -> None:
        self._loop = loop
        self._queue = queue

    def emit(self, event: Event) -> None:
        self._put(event)

    def ended(self) -> None:
        """The call that ran the run here returned: :meth:`RunHandle.events` stops after it."""
        self._put(None)

    def _put(self, item: Event | None) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the handle's loop has closed: no one reads its events, and the run goes on
            pass


@final
class RunHandle(Generic[O, AS]):
    """A durable run of a pipeline whose output type is ``O``, of a module whose asks are ``AS``
    (its generated ``Asks`` class: :attr:`asks`). Made by :meth:`Entry.start` (this process runs
    the run) or :meth:`Entry.open` (a run started anywhere). Its methods are coroutines; use a
    handle from one event loop."""

    def __init__(self, module: str, pipeline: str, run_id: str, db: str | None, asks: AS) -> None:
        self.module = module
        self.pipeline = pipeline
        self.run_id = run_id
        self.db = db
        #: The asks of the run's spec, typed: ``handle.asks.approve`` is an ``Ask[Ticket, Approval]``.
        self.asks = asks
        self._task: asyncio.Task[dict[str, Any]] | None = None
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._watch = _Watch(asyncio.get_running_loop(), self._queue)

    def __repr__(self) -> str:
        return f"RunHandle({self.module}.{self.pipeline}, run_id={self.run_id!r})"

    def _info(self) -> SpecInfo:
        return spec_info(importlib.import_module(self.module))

    def _in_thread(self, call: Callable[[], dict[str, Any]]) -> asyncio.Task[dict[str, Any]]:
        """Run the door's ``call`` in a thread, this handle's sink attached to what this process runs."""
        from .durable.watch import watching

        def watched() -> dict[str, Any]:
            try:
                with watching(self.run_id, self._watch):
                    return call()
            finally:
                self._watch.ended()

        self._task = asyncio.create_task(asyncio.to_thread(watched))
        return self._task

    async def _settled(self) -> dict[str, Any] | None:
        """What the door gave the last call this handle ran here (None: none ran here). Its error
        is raised once, to the first to wait for it: the handle goes on after a refused answer."""
        task = self._task
        if task is None:
            return None
        try:
            return await task
        except BaseException:
            if self._task is task:
                self._task = None
            raise

    async def _answer(self, name: str, index: tuple[int, ...], value_json: str) -> None:
        from .durable import runs

        await self._settled()  # the run stops here first (this process runs one of its calls at a time)
        self._in_thread(lambda: runs.answer(self.run_id, name, value_json, index=index, db=self.db))
        await self._settled()

    async def result(self, *, timeout: float | None = None) -> RunResult[O]:
        """Where the run is once it stops — ended, or waiting for people — typed: ``Finished``
        carries the output as the pipeline's output type. What the run database records, so an
        answer another process gave counts; a run another process runs is waited for (up to
        ``timeout`` seconds: then :class:`TimeoutError`)."""
        from .durable import runs
        from .durable.errors import DurableError

        await self._settled()  # what this process runs of it stops first (its error, if any, raised)
        try:
            payload = await asyncio.to_thread(runs.result, self.run_id, db=self.db, wait=True, timeout=timeout)
        except DurableError:
            shown = await asyncio.to_thread(runs.show, self.run_id, db=self.db)
            if shown.get("status") == "cancelled":
                return Cancelled(self.run_id)
            raise
        if payload is None:
            raise TimeoutError(f"run {self.run_id} did not stop within {timeout:g} s")
        return self._decoded(payload)

    def _decoded(self, payload: Mapping[str, Any]) -> RunResult[O]:
        info = self._info()
        if payload.get("status") == "waiting":
            return Waiting(self.run_id, tuple(str(q.get("name")) for q in payload.get("questions", [])))
        if payload.get("status") == "cancelled":
            return Cancelled(self.run_id)
        state = _decoded(info.state if info.state is not None else type(None), payload.get("state"))
        if payload.get("ok") is True:
            pipeline = info.pipeline(self.pipeline)
            if pipeline is None:  # pragma: no cover - Entry.open checks the pipeline
                raise LookupError(f"{self.module} has no pipeline {self.pipeline!r}")
            return Finished(self.run_id, _decoded(pipeline.output, payload.get("value")), state)
        if "defect" in payload:
            defect = payload["defect"]
            cause = defect.get("cause")
            return Defected(self.run_id, str(defect.get("message")), defect.get("site"),
                            _error_info(cause) if isinstance(cause, Mapping) else None)
        return Failed(self.run_id, _error_info(payload.get("error") or {}), state)

    async def questions(self, ask: Ask[Q, A]) -> list[Question[Q, A]]:
        """The open questions of ``ask`` the run waits on now (none: it does not wait on it),
        their payloads typed as its question type. The run this process runs stops first."""
        from .durable import runs

        await self._settled()
        found = await asyncio.to_thread(runs.waiting, run_id=self.run_id, db=self.db)
        asked = self._ask_info(ask)
        return [Question[Q, A](self, ask.name, tuple(q.get("index") or ()), _decoded(asked.question, q.get("question")),
                               q.get("prompt"), q.get("deadline"), bool(q.get("expired")), asked.answer)
                for q in found if q.get("name") == ask.name]

    async def question(self, ask: Ask[Q, A], *, index: Sequence[int] | None = None) -> Question[Q, A]:
        """The open question of ``ask`` (at element ``index`` when the run asks it more than
        once); :class:`LookupError` when the run does not wait on it (or on it more than once)."""
        found = [q for q in await self.questions(ask) if index is None or list(q.index) == list(index)]
        if len(found) != 1:
            how = "does not wait on" if not found else f"waits {len(found)} times on"
            raise LookupError(f"run {self.run_id} {how} {ask.name!r}" + (f" at index {list(index)}" if index else ""))
        return found[0]

    def _ask_info(self, ask: Ask[Any, Any]) -> AskInfo:
        for info in self._info().used():
            for asked in info.asks:
                if asked.name == ask.name:
                    return asked
        raise LookupError(f"{self.module} has no ask {ask.name!r}")

    async def events(self) -> AsyncIterator[Event]:
        """The typed events (:mod:`agentmonad.events`) of what this process runs of the run
        (starting it, answering it) until it stops; each is given once."""
        while True:
            if self._queue.empty() and (self._task is None or self._task.done()):
                return
            event = await self._queue.get()
            if event is None:  # a call ended: its task is done once the loop has run its callback
                if self._task is not None:
                    await asyncio.wait([self._task])
                continue
            yield event

    async def cancel(self) -> None:
        """Cancel the run (:func:`agentmonad.durable.runs.cancel`)."""
        from .durable import runs

        await asyncio.to_thread(runs.cancel, self.run_id, db=self.db)
        await self._settled()


@final
class Entry(Generic[I, O, AS]):
    """A pipeline of a compiled module, to run durably: typed with its input ``I`` and output
    ``O``, and the module's asks ``AS`` (the generated ``Runs`` class declares one per pipeline)."""

    __slots__ = ("module", "pipeline", "asks")

    def __init__(self, module: str, pipeline: str, asks: AS) -> None:
        self.module = module
        self.pipeline = pipeline
        self.asks = asks

    def __repr__(self) -> str:
        return f"Entry({self.module}.{self.pipeline})"

    async def start(self, value: I, *, run_id: str | None = None, db: str | None = None) -> RunHandle[O, AS]:
        """Start a durable run of the pipeline on ``value`` (``run_id``: its id, else a new one;
        ``db``: its database, as :func:`agentmonad.durable.runs.run` takes them). This process
        runs it, in a thread, until it ends or waits for people; the handle is given at once."""
        from pydantic import TypeAdapter

        from .durable import runs

        pipeline = spec_info(importlib.import_module(self.module)).pipeline(self.pipeline)
        if pipeline is None:
            raise LookupError(f"{self.module} has no pipeline {self.pipeline!r}")
        text = TypeAdapter(pipeline.input).dump_json(value).decode()
        chosen = runs.check_run_id(run_id) if run_id is not None else uuid.uuid4().hex[:12]
        handle = RunHandle[O, AS](self.module, self.pipeline, chosen, db, self.asks)
        handle._in_thread(lambda: runs.run(self.module, self.pipeline, text, run_id=chosen, db=db))
        return handle

    async def open(self, run_id: str, *, db: str | None = None) -> RunHandle[O, AS]:
        """A handle on the run ``run_id`` of this pipeline, wherever it was started or runs
        (:class:`~agentmonad.durable.errors.DurableError`: no such run in ``db``, or it runs
        another module or pipeline)."""
        from .durable import runs
        from .durable.errors import DurableError

        shown = await asyncio.to_thread(runs.show, run_id, db=db)
        if (shown.get("spec"), shown.get("pipeline")) != (self.module, self.pipeline):
            raise DurableError(f"run {run_id} runs {shown.get('spec')} {shown.get('pipeline')}, not "
                               f"{self.module} {self.pipeline}")
        return RunHandle[O, AS](self.module, self.pipeline, run_id, db, self.asks)


def _decoded(type_: Any, data: object) -> Any:
    """``data`` (a JSON value as the door gives it) as a value of ``type_``."""
    from pydantic import TypeAdapter

    return TypeAdapter(type_).validate_json(json.dumps(data))


def _error_info(error: Mapping[str, Any]) -> ErrorInfo:
    fields = error.get("fields")
    return ErrorInfo(str(error.get("type")), str(error.get("message")), error.get("site"),
                     dict(fields) if isinstance(fields, Mapping) else {})

