"""The journal of a durable run (docs/language.md §13): the :class:`~agentmonad.context.Journal`
the effect seam consults, over a :class:`Store` that keeps the records (in memory for tests,
DBOS's database for real runs: :mod:`agentmonad.durable.dbos`).

**Identities.** An effect's identity must be the same on replay whatever order concurrent
branches finish in, so it is not a global call order: it is the effect's *branch path* and its
sequence number within its branch. A branch runs its effects one after another, so the numbers
within it are deterministic; a ``loop``'s next iteration and a ``retry``'s next attempt are
just later numbers. A ``par``/``each`` group takes a number in the branch that starts it and
its element ``i`` is the branch ``<number>.<i>`` below; the effects an effect performs inside
its own call (a ``spawn``'s planner and plan steps, a toolbox pipeline called from a plan) are
in the branch ``<number>`` below it, so replaying the outer effect skips them all. A deadline
takes a number when it is entered; when it fires, that number records the expiry.

A record keeps the effect's kind and step name: a replay that finds another one at the same
identity means the spec changed under the run, which is a :class:`ReplayMismatch`, never a
wrong value.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn, Protocol, Required, TypedDict, TypeVar, final

from pydantic import ValidationError

from ..concurrency import give_up_slot
from ..context import Effect, Guard, RunContext, current_run_context, reset_run_context, set_run_context
from ..control import Deadline, deadlines_around
from ..human import ERRORS, NoAnswer, Question
from ..outcome import Site
from ..usage import record_usage
from .codec import RecordError, RecordResult, SiteTypes, TypeTable, decode_error, decode_result, encode_error, encode_result

__all__ = [
    "DurableJournal", "Store", "MemoryStore", "Record", "ReplayMismatch", "StopAsked", "RecordError", "state_delta", "apply_delta",
    "whole_states", "states_seen", "OpenQuestion", "WAITING", "CANCELLED", "STOPPED", "NOT_EFFECTS", "iso_time", "epoch", "branch_key",
    "ReplayPoint", "DryStop", "RecordResult", "record_from_json",
]

_T = TypeVar("_T")

class Record(TypedDict, total=False):
    """One row of a run's journal, as JSON. An effect's: ``key`` (its identity), ``kind``, ``step``
    (the site's name), ``site`` (where, as text), ``result``, ``usage`` (a model call's
    ``[model, prompt, completion]`` tokens), ``started`` (Unix time) and ``seconds`` (how long it
    ran). Of a run that stopped (:data:`NOT_EFFECTS`): ``questions`` (:data:`WAITING`, each as
    :meth:`OpenQuestion.as_json`, and ``refused``: the answers refused, by question key),
    ``reason`` (:data:`STOPPED`). Read from a database by
    :func:`record_from_json`, which refuses a row of another shape."""

    key: Required[str]
    kind: Required[str]
    step: str | None
    site: str | None
    result: RecordResult
    usage: list[list[object]]
    started: float
    seconds: float
    questions: list[dict[str, object]]
    refused: dict[str, list[str]]
    reason: str


def record_from_json(data: object) -> Record:
    """``data`` (a journal row read from a database) as a :class:`Record`: a JSON object whose
    ``key`` and ``kind`` are strings and whose ``result``, when it has one, is an object; else
    :class:`RecordError` (a row written by something other than this runtime is not guessed at)."""
    if not isinstance(data, dict) or not isinstance(data.get("key"), str) or not isinstance(data.get("kind"), str):
        raise RecordError(f"a journal row is not a record (no key and kind): {str(data)[:200]}")
    if not isinstance(data.get("result", {}), dict) or not isinstance(data.get("usage", []), list):
        raise RecordError(f"the journal row {data['key']} has a result or usage of another shape")
    return data  # type: ignore[return-value]  # its shape checked above; its values are typed JSON


#: The kind of the record a durable run keeps when it stops to wait for people: ``questions``,
#: every :class:`OpenQuestion` open then (as :meth:`OpenQuestion.as_json`). Not an effect: a
#: resumed run does not replay it.
WAITING = "waiting"

#: The kind of the record a waiting run keeps when it is cancelled (``mcec runs cancel``): the run
#: is then ``cancelled``, not ``waiting``. Not an effect either.
CANCELLED = "cancelled"

#: The kind of the record a run keeps when it could not go on in the process that took it up
#: (``reason``: a module that failed to import, a spec that changed under it): the run is then
#: ``stopped``, resumable once the cause is fixed. Not an effect either.
STOPPED = "stopped"

#: The kinds of record that say why a run stopped, not what an effect gave: never replayed.
NOT_EFFECTS = (WAITING, CANCELLED, STOPPED)


def iso_time(epoch: float) -> str:
    """``epoch`` (Unix time) as an ISO 8601 UTC time: what records and ``mcec runs waiting`` show."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def epoch(iso: str) -> float:
    """What :func:`iso_time` wrote, as Unix time."""
    return datetime.fromisoformat(iso).timestamp()


@final
@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """A question of an ``ask`` step (a ``"human"`` effect) that a durable run waits on: ``key``
    is the effect's identity (what an answer is recorded under), ``payload`` the question value
    as JSON and ``schema`` the answer's JSON schema, exactly as the run asked them. ``asked`` is
    when the run first asked it (Unix time; kept from one wait to the next), ``within`` the ask's
    ``within S`` (None: no deadline), so its deadline is ``asked + within``."""

    key: str
    name: str
    site: str | None
    index: tuple[int, ...]
    payload: object
    schema: dict[str, Any]
    prompt: str | None
    asked: float = field(default=0.0, compare=False)
    within: float | None = field(default=None, compare=False)

    @property
    def deadline(self) -> float | None:
        """When the question expires (Unix time), or None: it waits as long as it takes."""
        return None if self.within is None else self.asked + self.within

    def as_json(self) -> dict[str, Any]:
        """As JSON (what the waiting record and ``mcec runs waiting`` show): times as ISO UTC."""
        deadline = self.deadline
        return {"key": self.key, "name": self.name, "site": self.site, "index": list(self.index),
                "question": self.payload, "schema": self.schema, "prompt": self.prompt,
                "asked": iso_time(self.asked), "within": self.within,
                "deadline": iso_time(deadline) if deadline is not None else None}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> OpenQuestion:
        """What :meth:`as_json` wrote (a record from before deadlines were kept: asked at 0, no deadline)."""
        asked = data.get("asked")
        within = data.get("within")
        return OpenQuestion(str(data["key"]), str(data["name"]), data.get("site"), tuple(data.get("index", ())),
                            data.get("question"), dict(data.get("schema", {})), data.get("prompt"),
                            epoch(asked) if isinstance(asked, str) else 0.0,
                            float(within) if within is not None else None)


class StopAsked(BaseException):
    """Someone asked the run to stop (``mcec runs cancel``): raised where its next effect would
    start, which does not. Not an :class:`Exception`, so no ``catch``/``orelse`` of the pipeline
    takes it: it ends the run's task (its sibling branches cancelled) and the run is recorded
    ``cancelled``; every effect that completed before it is recorded."""


class ReplayMismatch(Exception):
    """A resumed run reached an effect whose record is of another kind or step: the spec changed.
    ``key`` is the effect's identity and ``record`` what the run recorded there (a replay of a
    recorded run, :mod:`agentmonad.record`, names it)."""

    def __init__(self, message: str, key: str | None = None, record: Record | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.record = record


@final
@dataclass(frozen=True, slots=True)
class ReplayPoint:
    """Where a dry replay (:class:`DurableJournal` with ``dry=True``) stopped: the effect at
    ``key`` (its ``kind``, ``step`` and ``site`` text in the version replayed), the ``record`` the
    run has there (None: none), and ``why``. ``frontier``: it stopped only because the run has no
    record there (the first effect the run would perform next), not because a record diverges."""

    key: str
    kind: str
    step: str
    site: str | None
    record: Record | None
    why: str
    frontier: bool


class DryStop(BaseException):
    """A dry replay stopped (:class:`ReplayPoint`). Not an :class:`Exception`, so no
    ``catch``/``orelse`` of the pipeline takes it: it ends the replay."""

    def __init__(self, point: ReplayPoint) -> None:
        super().__init__(point.why)
        self.point = point


class Store(Protocol):
    """Where a journal's records are kept. Records of one run only."""

    async def step(self, key: str, body: Callable[[], Awaitable[Record]]) -> Record:
        """Run ``body`` (an effect's call, giving its record) and keep the record. Records
        left with :meth:`later` are kept first."""
        ...

    def keep(self, record: Record) -> None:
        """Keep ``record`` now, before returning: a sync effect's, which completed and must be
        recorded before the run's next effect starts (a crash then must not run it again)."""
        ...

    def later(self, record: Record) -> None:
        """Keep ``record`` at the next :meth:`step` or :meth:`flush` (for what happens outside
        the run's own flow: a deadline's expiry, fired by the event loop's timer)."""
        ...

    async def flush(self) -> None:
        """Keep every record left with :meth:`later`."""
        ...


@final
class MemoryStore:
    """A :class:`Store` in a list: for tests, and to see what a run would record."""

    __slots__ = ("records", "_pending")

    def __init__(self, records: list[Record] | None = None) -> None:
        #: What was kept, in the order it was kept.
        self.records: list[Record] = records if records is not None else []
        self._pending: list[Record] = []

    async def step(self, key: str, body: Callable[[], Awaitable[Record]]) -> Record:
        if self._pending:
            await self.flush()
        record = await body()
        self.records.append(record)
        return record

    def keep(self, record: Record) -> None:
        self.records.append(record)

    def later(self, record: Record) -> None:
        self._pending.append(record)

    async def flush(self) -> None:
        self.records.extend(self._pending)
        self._pending.clear()

    def flushed(self) -> list[Record]:
        """:attr:`records` with the records left with :meth:`later` kept too (:meth:`flush`
        without an event loop: what a run that ended recorded, its last deadline's expiry too)."""
        self.records.extend(self._pending)
        self._pending.clear()
        return self.records


@final
class _GroupBranches:
    """One group's branches as the journal names them (``NUMBER.i`` below the group's branch) and
    keeps them live while the group has them (:meth:`DurableJournal.until_waiting`)."""

    __slots__ = ("_journal", "_context", "_prefix")

    def __init__(self, journal: DurableJournal, context: RunContext, prefix: tuple[str, ...]) -> None:
        self._journal = journal
        self._context = context
        self._prefix = prefix  # the group's branch path with its number last

    def _path(self, index: int) -> tuple[str, ...]:
        return (*self._prefix[:-1], f"{self._prefix[-1]}.{index}")

    def context(self, index: int) -> RunContext:
        """Element ``index``'s run context: its index and its branch."""
        path = self._path(index)
        self._journal._branch_started(path)
        return self._context.with_index(index).with_part(_Branch, _Branch(path))

    def ended(self, index: int) -> None:
        """The group has taken element ``index`` in."""
        self._journal._branch_ended(self._path(index))


@final
@dataclass(frozen=True, slots=True)
class _Branch:
    """The branch path of the code running here (kept in ``RunContext.parts``)."""

    path: tuple[str, ...]


_ROOT = _Branch(())


@final
class _Capture:
    """A meter that keeps the tokens of one model call, to record them with its result."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: list[list[object]] = []

    def add(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls.append([model, prompt_tokens, completion_tokens])


def _site_text(effect: Effect) -> str | None:
    site = effect.site
    if site is None:
        return None
    # by identity first: a generated module's sites are constants, and hashing a Site (a dataclass
    # of four fields) costs more than the rest of this
    known = _SITE_TEXTS.get(id(site))
    if known is not None and known[0] is site:
        return known[1]
    return _site_str(site)


#: ``str(site)`` by the site's id (with the site, so a reused id is never taken for it).
_SITE_TEXTS: dict[int, tuple[Site, str]] = {}


@functools.lru_cache(maxsize=4096)
def _site_str(site: Site) -> str:
    """``str(site)``, formatted once per site (every record of a site names it)."""
    text = str(site)
    if len(_SITE_TEXTS) >= 4096:  # sites made on the fly (a checked plan's) must not pile up
        _SITE_TEXTS.clear()
    _SITE_TEXTS[id(site)] = (site, text)
    return text


@final
class DurableJournal:
    """The journal of one durable run: replays ``recorded`` (the records of the run so far, from
    its store), records every other effect in ``store``. ``types`` gives each site's types."""

    def __init__(self, store: Store, types: TypeTable, recorded: Mapping[str, Record] = {},
                 answers: Mapping[str, tuple[object, object]] = {}, *, clock: Callable[[], float] = time.time,
                 stop_asked: Callable[[], bool] | None = None,
                 missing: Callable[[str, Effect], BaseException | None] | None = None,
                 asks_people: bool = False,
                 defect: Callable[[str, Effect, BaseException], None] | None = None,
                 dry: bool = False) -> None:
        self.store = store
        #: For an effect with no record (its identity, the effect): the exception to raise instead of
        #: running it, or None to run it (a replay of a recorded run, :mod:`agentmonad.record`).
        self._missing = missing
        #: Whether an ``ask`` with no record asks the run's person (its answer recorded) rather than
        #: waiting for an answer given to the run later (a recorded run, not a durable one).
        self._asks_people = asks_people
        #: Told of an effect whose call raised an error its site does not declare (a defect: not
        #: recorded here, it runs again on resume) or was cancelled, with its identity (a recorded
        #: run keeps both).
        self._defect = defect
        #: A dry replay (``mcec runs upgrade``): it performs nothing; it stops (:class:`DryStop`) at
        #: the first effect with no record (a question is parked on, as in a run) or whose record
        #: does not fit this version (another kind or step, a value its types refuse).
        self._dry = dry
        #: Where a dry replay stopped (None: it did not).
        self.stopped_at: ReplayPoint | None = None
        #: The records a replay met, by key: the site text of the effect that met each.
        self.met: dict[str, str | None] = {}
        #: Whether someone asked the run to stop: consulted before each effect starts (:class:`StopAsked`).
        self._stop_asked = stop_asked
        self.types = types
        # a waiting (or cancelled) record is not an effect: a resumed run does not replay it
        self._recorded = {k: r for k, r in recorded.items() if r.get("kind") not in NOT_EFFECTS}
        #: When each question was first asked (by key: its payload and the time), from the waiting
        #: records: an ask's deadline counts from there, however often the run waited since.
        self._first_asked: dict[str, tuple[object, float]] = {}
        for record in recorded.values():
            for question in record.get("questions", ()) if record.get("kind") == WAITING else ():
                asked = OpenQuestion.from_json(question)
                known = self._first_asked.get(asked.key)
                if asked.asked and (known is None or (known[0] == asked.payload and asked.asked < known[1])):
                    self._first_asked[asked.key] = (asked.payload, asked.asked)
        self._clock = clock
        #: Answers given to open questions since the run waited: by question key, the question
        #: payload they answer (JSON) and the answer (JSON, validated against the answer type).
        self._answers = dict(answers)
        #: The questions this run waits on now (their branches parked until the run stops).
        self.open: list[OpenQuestion] = []
        #: Answers given that did not validate, by question key: pydantic's errors (the question stays open).
        self.refused: dict[str, list[str]] = {}
        #: The keys of the effects running now: each one's own call is a live branch (below its key).
        self._running: set[str] = set()
        #: The ``par``/``each`` elements live now — started by their group and not yet taken in by
        #: it — by branch path (see :meth:`until_waiting`).
        self._live: set[tuple[str, ...]] = set()
        self._stopping = False
        self._changed: asyncio.Event | None = None
        self._counters: dict[tuple[str, ...], int] = {}
        self._deadlines: dict[int, str] = {}
        self._doomed: dict[int, Deadline] = {}
        #: The state (JSON) of the last record of each branch that has one: a record keeps only
        #: what changed since (:func:`state_delta`), so records stay small as the state grows.
        self._states: dict[tuple[str, ...], object] = {}
        #: How many effects were replayed, and how many ran (tests and ``mcec runs show``).
        self.replayed = 0
        self.performed = 0

    # -- identities ----------------------------------------------------------------------------

    def _take(self) -> tuple[tuple[str, ...], int, str]:
        """The next number in the current branch: the branch path, the number, the identity."""
        path = (current_run_context().part(_Branch) or _ROOT).path
        number = self._counters.get(path, 0)
        self._counters[path] = number + 1
        return path, number, "/".join((*path, str(number)))

    def branches(self, context: RunContext) -> _GroupBranches:
        """A group starts: it takes a number, its element ``i`` is the branch ``number.i``, live
        from when the group starts it until the group has taken its end in (:meth:`until_waiting`)."""
        path, number, _ = self._take()
        return _GroupBranches(self, context, (*path, str(number)))

    def _branch_started(self, path: tuple[str, ...]) -> None:
        if self._changed is not None:  # watched: the run cannot be waiting while it is live and not parked
            self._live.add(path)

    def _branch_ended(self, path: tuple[str, ...]) -> None:
        if path in self._live:
            self._live.discard(path)
            self._change()

    # -- deadlines -----------------------------------------------------------------------------

    def deadline_entered(self, deadline: Guard) -> None:
        _, _, key = self._take()
        if not isinstance(deadline, Deadline):
            return
        self._deadlines[id(deadline)] = key
        record = self._recorded.get(key)
        if record is not None:
            if self._dry:
                try:
                    self._check(record, "timeout", None, key)
                except ReplayMismatch as exc:
                    self._stop_dry(key, "timeout", "timeout", None, record, str(exc), frontier=False)
                self.met[key] = None
            else:
                self._check(record, "timeout", None, key)
            self._doomed[id(deadline)] = deadline  # it fired: it fires again at the same place

    def deadline_expired(self, deadline: Guard) -> None:
        key = self._deadlines.get(id(deadline))
        if key is None or key in self._recorded:
            return  # a replayed expiry is recorded already
        self.store.later({"key": key, "kind": "timeout", "step": "timeout", "site": None, "result": {"timeout": True},
                          "usage": [], "started": time.time(), "seconds": 0.0})

    async def _expire_doomed(self) -> None:
        """Inside a deadline that fired in the recorded run, the first effect with no record is
        where it fired (every effect before it completed in time): fire it here, and wait for
        the cancellation it sends (to this task, or to the task of the group around this one)."""
        for deadline in deadlines_around(current_run_context()):  # outermost first
            doomed = self._doomed.pop(id(deadline), None)
            if doomed is not None:
                doomed._expire()
                await asyncio.get_running_loop().create_future()

    # -- effects -------------------------------------------------------------------------------

    def _check(self, record: Record, kind: str, step: str | None, key: str) -> None:
        if record.get("kind") != kind or (step is not None and record.get("step") != step):
            was = f"{record.get('kind')} {record.get('step')!r}"
            raise ReplayMismatch(
                f"effect {key} of this run was {was} and is now {kind} {step!r}: the spec changed since the run started",
                key, record,
            )

    def _types(self, effect: Effect) -> SiteTypes:
        types = self.types.get(effect.site)
        if types is None:
            raise RecordError(f"no recorded types for the {effect.kind} at {effect.site}")
        return types

    def _replay(self, path: tuple[str, ...], record: Record, effect: Effect) -> object:
        """The result ``record`` recorded (its tokens counted again, so budgets decide the same)."""
        self.replayed += 1
        for model, prompt, completion in record.get("usage", ()):
            if not (isinstance(model, str) and isinstance(prompt, int) and isinstance(completion, int)):
                raise RecordError(f"the record {record['key']} has tokens of another shape: {[model, prompt, completion]}")
            record_usage(model, prompt, completion)
        result = self._full_state(path, record["result"])
        if effect.kind == "pause":
            return None
        types = self._types(effect)
        if "raised" in result:
            raise decode_error(result["raised"], types.errors)
        return decode_result(result, types)

    def _encode(self, effect: Effect, result: object) -> RecordResult:
        return {"none": True} if effect.kind == "pause" else encode_result(result, self._types(effect))

    def _raised(self, effect: Effect, exc: Exception) -> RecordResult | None:
        """A raised error's record when the step declares it (else None: it is a defect, not recorded)."""
        if effect.kind == "pause":
            return None
        types = self.types.get(effect.site)
        if types is None or not isinstance(exc, types.errors):
            return None
        return {"raised": encode_error(exc)}

    def _full_state(self, path: tuple[str, ...], result: RecordResult) -> RecordResult:
        """``result`` with its state whole (a record keeps the change since its branch's last state)."""
        if "delta" in result:
            result = result.copy()
            result["state"] = apply_delta(self._states.get(path), result.pop("delta"))
        if "state" in result:
            self._states[path] = result["state"]
        return result

    def _delta_state(self, path: tuple[str, ...], result: RecordResult) -> RecordResult:
        """``result`` with its state as the change since its branch's last state, when there is one."""
        if "state" not in result:
            return result
        state = result["state"]
        before = self._states.get(path, _NO_STATE)
        self._states[path] = state
        if before is _NO_STATE:
            return result
        changed = result.copy()
        del changed["state"]
        changed["delta"] = state_delta(before, state)
        return changed

    def _record(self, path: tuple[str, ...], key: str, effect: Effect, result: RecordResult,
                usage: list[list[object]], started: float) -> Record:
        result = self._delta_state(path, result)
        return {
            "key": key,
            "kind": effect.kind,
            "step": effect.site.step if effect.site is not None else effect.kind,
            "site": _site_text(effect),
            "result": result,
            "usage": usage,
            "started": started,
            "seconds": time.time() - started,
        }

    def _inside(self, path: tuple[str, ...], number: int, effect: Effect) -> tuple[RunContext, _Capture | None]:
        """The run context of the effect's own call: its inner effects in the branch below it, and
        a model call's tokens kept for its record."""
        context = current_run_context().with_part(_Branch, _Branch((*path, str(number))))
        if effect.kind != "model" and effect.kind != "element":  # an element's tokens come back with its result
            return context, None
        capture = _Capture()
        return context.with_meter(capture), capture

    async def perform(self, effect: Effect, call: Callable[[], Awaitable[_T]]) -> _T:
        path, number, key = self._take()
        record = self._recorded.get(key)
        if record is not None and self._dry:
            return self._dry_replay(path, key, record, effect, lambda: self._replay_human(record, effect))  # type: ignore[return-value]
        if record is not None:
            self._check(record, effect.kind, effect.site.step if effect.site is not None else effect.kind, key)
            if effect.kind == "human":
                return self._replay_human(record, effect)  # type: ignore[return-value]
            return _keyed(lambda: self._replay(path, record, effect), key, record)  # type: ignore[return-value]  # validated as the site's type
        self.stop_if_asked()
        if self._dry and effect.kind != "human":  # a question is parked on, as in a run: nothing is performed
            self._unrecorded(key, effect)
        if self._doomed:
            await self._expire_doomed()
        self._raise_missing(key, effect)
        if effect.kind == "human" and not self._asks_people:
            return await self._asked(key, effect)  # type: ignore[return-value]  # the answer type the run asks with
        self.performed += 1
        context, capture = self._inside(path, number, effect)
        raised: list[Exception] = []
        returned: list[_T] = []

        async def body() -> Record:
            started = time.time()
            token = set_run_context(context)
            try:
                result = await call()
            except asyncio.CancelledError as exc:
                if self._defect is not None:
                    self._defect(key, effect, exc)
                raise
            except Exception as exc:
                declared = self._raised(effect, exc)
                if declared is None:
                    if self._defect is not None and effect.kind != "pause":
                        self._defect(key, effect, exc)
                    raise  # a defect (or a cancellation): not recorded, it runs again on resume
                raised.append(exc)
                return self._record(path, key, effect, declared, capture.calls if capture else [], started)
            finally:
                reset_run_context(token)
            returned.append(result)
            return self._record(path, key, effect, self._encode(effect, result), capture.calls if capture else [], started)

        self._running.add(key)
        try:
            await self.store.step(key, body)
        finally:
            self._running.discard(key)
            self._change()
        if raised:
            raise raised[0]
        return returned[0]

    def _raise_missing(self, key: str, effect: Effect) -> None:
        """With a ``missing`` hook, raise what it says for an effect with no record (if anything)."""
        if self._missing is not None:
            problem = self._missing(key, effect)
            if problem is not None:
                raise problem

    # -- dry replays ---------------------------------------------------------------------------

    def _replay_human(self, record: Record, effect: Effect) -> object:
        """A recorded answer, checked against the answer type the run asks with (or its recorded
        ``NoAnswer``, raised)."""
        self.replayed += 1
        if "raised" in record["result"]:  # no answer came in time (its deadline passed)
            raise decode_error(record["result"]["raised"], ERRORS)
        return _question(effect).parse(record["result"]["value"])

    def _dry_replay(self, path: tuple[str, ...], key: str, record: Record, effect: Effect,
                    human: Callable[[], object] | None) -> object:
        """A dry replay of ``record`` for ``effect``: its result (or its recorded error, raised),
        or :class:`DryStop` when the record is of another kind or step, or its value, state or
        error does not fit this version's types."""
        step = effect.site.step if effect.site is not None else effect.kind
        try:
            self._check(record, effect.kind, step, key)
            self.met[key] = _site_text(effect)
            if effect.kind == "human" and human is not None:
                return human()
            return self._replay(path, record, effect)
        except (ReplayMismatch, RecordError, ValidationError) as exc:
            why = str(exc) if isinstance(exc, ReplayMismatch) else _first_line(str(exc))
            self.met.pop(key, None)
            self._stop_dry(key, effect.kind, step, _site_text(effect), record, why, frontier=False)

    def _unrecorded(self, key: str, effect: Effect) -> None:
        """A dry replay reached an effect the run has no record of: it stops there."""
        step = effect.site.step if effect.site is not None else effect.kind
        self._stop_dry(key, effect.kind, step, _site_text(effect), None, "the run has no record of it", frontier=True)

    def _stop_dry(self, key: str, kind: str, step: str, site: str | None, record: Record | None, why: str, *,
                  frontier: bool) -> NoReturn:
        point = ReplayPoint(key, kind, step, site, record, why, frontier)
        if self.stopped_at is None:
            self.stopped_at = point
        raise DryStop(point)

    def stop_if_asked(self) -> None:
        """Raise :class:`StopAsked` when someone asked the run to stop (what each effect does before it starts)."""
        if self._stop_asked is not None and self._stop_asked():
            raise StopAsked()

    # -- people's answers ----------------------------------------------------------------------

    def _change(self) -> None:
        if self._changed is not None:
            self._changed.set()

    async def _asked(self, key: str, effect: Effect) -> object:
        """A ``"human"`` effect with no record: record the answer given since the run waited
        (when it answers this very question: same payload); else, when the ask's deadline
        (``within S``, counted from when the run first asked it) has passed, record and raise
        ``NoAnswer(reason="deadline")``; else park this branch on the open question until the
        run stops to wait (:meth:`until_waiting`). The handler is never called."""
        question = _question(effect)
        payload = question.payload_json
        given = self._answers.get(key)
        answer: object = _REFUSED
        if given is not None and given[0] == payload:
            try:  # the answer's check is the answer type's own, as the run asks it
                answer = question.parse(given[1])
            except ValidationError as exc:
                self.refused[key] = [f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()]
        first = self._first_asked.get(key)
        now = self._clock()
        asked = first[1] if first is not None and first[0] == payload else now
        expired = given is None and question.deadline is not None and now >= asked + question.deadline
        if (given is not None and answer is not _REFUSED) or expired:
            self.performed += 1
            result: RecordResult = (
                {"raised": encode_error(NoAnswer(question.name, "deadline", question.deadline))} if expired
                else {"value": given[1] if given is not None else None}
            )

            async def body() -> Record:
                return self._record(tuple(key.split("/")[:-1]), key, effect, result, [], now)

            self._running.add(key)  # recording it is an effect running: the run is not still
            try:
                await self.store.step(key, body)
            finally:
                self._running.discard(key)
                self._change()
            if expired:  # its outcome is recorded: a replay raises it again (perform)
                raise NoAnswer(question.name, "deadline", question.deadline)
            return answer
        site = _site_text(effect)
        await self.park([OpenQuestion(key, question.name, site, tuple(question.index), payload, question.schema,
                                      question.prompt, asked, question.deadline)], {})
        raise AssertionError("unreachable")

    async def park(self, questions: Sequence[OpenQuestion], refused: Mapping[str, list[str]]) -> NoReturn:
        """Park the branch running here on ``questions`` (with the answers to them ``refused``,
        by key) until the run stops to wait (:meth:`until_waiting`): an ``ask`` with no answer yet,
        or an ``each`` element a worker ran that waits for people (each key below the element's
        own). Its ``each`` slot goes to the next element at once."""
        self.open.extend(questions)
        self.refused.update(refused)
        self._change()
        give_up_slot()  # it waits on a person: the next element of its `each` starts now
        try:
            await asyncio.get_running_loop().create_future()  # parked until the run stops (cancelled)
        finally:
            if not self._stopping:  # its branch was cancelled by the run itself (a sibling failed): not open
                for question in questions:
                    self.open.remove(question)
                self._change()
        raise AssertionError("unreachable")

    def answered(self, key: str, payload: object) -> bool:
        """Whether an answer was given to the question ``key`` asked with ``payload`` since the run waited."""
        given = self._answers.get(key)
        return given is not None and given[0] == payload

    async def until_waiting(self, run: Awaitable[_T]) -> _T | list[OpenQuestion]:
        """Run ``run`` (the pipeline) until it ends — its result — or until it waits: then the
        run is cancelled and the open questions are the result (nothing of it stays in memory).

        The run waits when every live branch with no live branch below it is parked on an open
        question. The live branches are the run's own (the root), each ``par``/``each`` element
        its group has started and not yet taken in (the group tells, :class:`_GroupBranches`),
        and the call of each effect running now (a step that asks runs its question in the
        branch below it). A branch between two effects is not parked, however long its pure work
        takes, and an element that ended stays live until its group has decided on its result
        (a failing group first cancels and awaits its parked siblings); so the rule is exact, not
        a guess from how long the run stayed still. It is decided each time something changes
        (an effect starts or ends, a question is parked, a group takes an element in)."""
        self._changed = asyncio.Event()
        task = asyncio.ensure_future(run)
        try:
            while True:
                changed = asyncio.ensure_future(self._changed.wait())
                await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                self._changed.clear()
                if task.done():
                    return task.result()
                if self.open and self._waits():
                    waiting = sorted(self.open, key=lambda q: (q.index, q.key))
                    self._stopping = True
                    task.cancel()
                    try:
                        await task
                    except BaseException:  # the cancellation, however the pipeline reports it
                        pass
                    await self.store.flush()
                    return waiting
        finally:
            self._changed = None
            self._live.clear()

    def _waits(self) -> bool:
        """Whether every live branch with no live branch below it is parked on an open question."""
        live = {(), *self._live, *(tuple(key.split("/")) for key in self._running)}
        parked = {tuple(q.key.split("/")[:-1]) for q in self.open}
        below = {path[:n] for path in live for n in range(len(path))}  # the branches with one below them
        return all(path in parked for path in live - below)

    def perform_sync(self, effect: Effect, call: Callable[[], _T]) -> _T:
        path, number, key = self._take()
        record = self._recorded.get(key)
        if record is not None and self._dry:
            return self._dry_replay(path, key, record, effect, None)  # type: ignore[return-value]
        if record is not None:
            self._check(record, effect.kind, effect.site.step if effect.site is not None else effect.kind, key)
            return _keyed(lambda: self._replay(path, record, effect), key, record)  # type: ignore[return-value]
        self.stop_if_asked()
        if self._dry:
            self._unrecorded(key, effect)
        self._raise_missing(key, effect)
        self.performed += 1
        context, capture = self._inside(path, number, effect)
        started = time.time()
        token = set_run_context(context)
        try:
            result = call()
        except Exception as exc:
            raised = self._raised(effect, exc)
            if raised is not None:
                self.store.keep(self._record(path, key, effect, raised, capture.calls if capture else [], started))
            elif self._defect is not None and effect.kind != "pause":
                self._defect(key, effect, exc)
            raise
        finally:
            reset_run_context(token)
        self.store.keep(self._record(path, key, effect, self._encode(effect, result), capture.calls if capture else [], started))
        return result


def _keyed(replay: Callable[[], _T], key: str, record: Record) -> _T:
    """``replay()``; a recorded value that no longer validates (:class:`RecordError`) is told
    with the effect's identity and record."""
    try:
        return replay()
    except RecordError as exc:
        exc.key, exc.record = key, record
        raise

def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return " ".join(line.strip() for line in lines[:3]) if lines else text


def branch_key() -> str:
    """The identity of the code running here (its branch path; inside an effect's call, the
    effect's own identity): what names an ``each`` element run elsewhere (its workflow id)."""
    return "/".join((current_run_context().part(_Branch) or _ROOT).path)


_NO_STATE = object()
_REFUSED = object()
#: A task whose suspension this Python does not show (not CPython): taken as suspended.


def _question(effect: Effect) -> Question[Any]:
    """The question a ``"human"`` effect asks (it travels on the effect)."""
    if not isinstance(effect.question, Question):
        raise RecordError(f"a human effect at {effect.site} carries no question")
    return effect.question


def state_delta(before: object, after: object) -> dict[str, Any]:
    """What changed from the state ``before`` to ``after`` (JSON both): ``{"same": true}``, a list
    that grew at its end (``{"extend": [...]}``), an object with some fields changed
    (``{"fields": {name: delta}, "removed": [...]}``), else the new value (``{"set": value}``). So an
    effect that appends one note to a growing state records the note, not the whole state again."""
    if before == after:
        return {"same": True}
    if isinstance(before, list) and isinstance(after, list) and len(after) > len(before) and after[: len(before)] == before:
        return {"extend": after[len(before):]}
    if isinstance(before, dict) and isinstance(after, dict):
        fields = {k: state_delta(before[k], v) if k in before else {"set": v} for k, v in after.items()
                  if k not in before or before[k] != v}
        removed = [k for k in before if k not in after]
        return {"fields": fields, "removed": removed} if removed else {"fields": fields}
    return {"set": after}


def apply_delta(before: object, delta: dict[str, Any]) -> object:
    """The state :func:`state_delta` went to from ``before``."""
    if "same" in delta:
        return before
    if "extend" in delta and isinstance(before, list):
        return [*before, *delta["extend"]]
    if "fields" in delta and isinstance(before, dict):
        removed = set(delta.get("removed", ()))
        after = {k: v for k, v in before.items() if k not in removed}
        for name, change in delta["fields"].items():
            after[name] = apply_delta(before.get(name), change)
        return after
    if "set" in delta:
        return delta["set"]
    raise RecordError(f"a recorded state change does not apply to the state before it: {delta}")


def whole_states(records: list[Record]) -> list[object]:
    """The state after each of ``records`` (None where a record has none), its changes applied in
    each branch's order. Each state is a value of its own: the whole of them grows with the square
    of the run (a state that grows by one note an effect); :func:`states_seen` does not."""
    return states_seen(records, copy.deepcopy)[0]


def states_seen(records: list[Record], see: Callable[[object], _T]) -> tuple[list[_T | None], object]:
    """``see`` of the state after each of ``records`` (None where a record has none), in each
    branch's order, and the state the run's own branch ended with: in time linear in the run
    (the changes are applied in place, so ``see`` must not keep the state it is shown)."""
    states: dict[tuple[str, ...], object] = {}
    seen: dict[str, _T] = {}

    def number(record: Record) -> tuple[tuple[str, ...], int]:
        *path, n = str(record["key"]).split("/")
        return tuple(path), int(n)

    for record in sorted((r for r in records if r.get("kind") not in NOT_EFFECTS), key=number):
        path, _ = number(record)
        result = record.get("result", {})
        if "delta" in result:
            states[path] = _applied_in_place(states.get(path), result["delta"])
        elif "state" in result:
            states[path] = copy.deepcopy(result["state"])
        else:
            continue
        seen[str(record["key"])] = see(states[path])
    return [seen.get(str(r["key"])) for r in records], states.get(())


def _applied_in_place(before: object, delta: dict[str, Any]) -> object:
    """:func:`apply_delta`, changing ``before`` where it can rather than copying it."""
    if "same" in delta:
        return before
    if "extend" in delta and isinstance(before, list):
        before.extend(copy.deepcopy(delta["extend"]))
        return before
    if "fields" in delta and isinstance(before, dict):
        for name in delta.get("removed", ()):
            before.pop(name, None)
        for name, change in delta["fields"].items():
            before[name] = _applied_in_place(before.get(name), change)
        return before
    if "set" in delta:
        return copy.deepcopy(delta["set"])
    raise RecordError(f"a recorded state change does not apply to the state before it: {delta}")
