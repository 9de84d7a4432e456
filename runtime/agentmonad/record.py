"""Recorded runs (docs/language.md §17): a run's effects written to a file, and the run again
with every effect answered from it.

A *recording* is one run of one pipeline: the spec it ran (its path and source digest), the
pipeline, its input and first state, every effect it performed — each model, tool, step and
ask result by its identity and site, as typed JSON — and its Outcome. The effects are the
records of the durable journal (:mod:`agentmonad.durable.journal`): the same identities (branch
path and number), the same typed values (:mod:`agentmonad.durable.codec`), the same check
that a record is of the effect a run asks for. A run is recorded by attaching a
:class:`Recorder`'s journal (a :class:`~agentmonad.durable.DurableJournal` over a memory store
that asks people rather than waiting for them, and keeps the effects that ended in a defect or
were cancelled) and replayed by attaching a :class:`Replayer` (the same journal given the
records, which raises :class:`NotRecorded` for an effect it does not hold instead of running it).

A recording holds no secret: every string in it has the run's model keys and the user info of
its endpoints' URLs replaced by ``***`` (:func:`redacted`), and any URL's ``user:password@``
too. So a model that quoted its key back is recorded quoting ``***``, and its replay does too.

Nothing here imports mcec: ``mcec run --record``, ``mcec replay`` and the pytest plugin build
on it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar, final

from pydantic_core import to_json

from .context import Branches, Effect, Guard, RunContext
from .durable.codec import RecordError, RecordResult, SiteTypes, TypeTable, encode_error, encode_result
from .durable.journal import DurableJournal, MemoryStore, Record, ReplayMismatch, branch_key, whole_states
from .errors import Defect
from .outcome import Err, Ok, Outcome

__all__ = [
    "RECORDING_VERSION", "RECORDING_SUFFIX", "Recording", "RecordingError", "Recorder", "Replayer", "NotRecorded",
    "EffectDifference", "RecordedDefect", "DEFECT", "CANCELLED", "encode_outcome", "same_outcome", "redacted", "model_secrets", "MASK", "LIVE_KINDS",
]

_T = TypeVar("_T")

#: The version of the recording format this runtime writes and reads.
RECORDING_VERSION = 1

#: How a recording's file name ends (what the pytest plugin collects).
RECORDING_SUFFIX = ".mcerun.json"

#: What a secret is replaced with in a recording.
MASK = "***"

#: The effect kinds a replay may run for real instead of answering from the file.
LIVE_KINDS = ("model", "tool", "step")

def kept_of(record: Record) -> Record:
    """What a recording keeps of a journal record: what the effect was and gave, not when it ran
    nor for how long (a recording of the same run is the same file)."""
    kept: Record = {"key": record["key"], "kind": record["kind"]}
    if "step" in record:
        kept["step"] = record["step"]
    if "site" in record:
        kept["site"] = record["site"]
    if "result" in record:
        kept["result"] = record["result"]
    if "usage" in record:
        kept["usage"] = record["usage"]
    return kept


class RecordingError(Exception):
    """A recording file that cannot be read: not JSON, not a recording, another version."""


@final
@dataclass(frozen=True, slots=True)
class Recording:
    """One recorded run (see the module docstring). ``spec`` is the spec's path as the run named
    it, ``spec_sha256`` its source's digest then; ``runner`` ``"compiled"`` or ``"interpreted"``;
    ``input`` and ``state`` the run's input and first state (JSON); ``effects`` the journal's
    records in the order they completed; ``outcome`` the Outcome (:func:`encode_outcome`)."""

    spec: str
    spec_sha256: str
    pipeline: str
    runner: str
    input: object
    state: object
    effects: tuple[Record, ...]
    outcome: Mapping[str, Any]
    models: tuple[str, ...] = field(default=())
    #: The file's text once made (:meth:`text`): a recording is made, checked for secrets on this
    #: text and written once, each effect encoded to JSON once.
    _text: str | None = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict[str, Any]:
        """The recording as JSON (what :meth:`write` writes)."""
        return {
            "version": RECORDING_VERSION,
            "spec": {"path": self.spec, "sha256": self.spec_sha256},
            "pipeline": self.pipeline,
            "runner": self.runner,
            "input": self.input,
            "state": self.state,
            "models": list(self.models),
            "effects": [dict(e) for e in self.effects],
            "outcome": dict(self.outcome),
        }

    @staticmethod
    def from_json(data: object) -> Recording:
        """What :meth:`as_json` wrote; :class:`RecordingError` says what does not fit."""
        if not isinstance(data, dict):
            raise RecordingError("not a recording: the file's JSON is not an object")
        version = data.get("version")
        if version != RECORDING_VERSION:
            raise RecordingError(f"a recording of version {version!r}; this mcec reads version {RECORDING_VERSION}")
        try:
            spec = data["spec"]
            effects = data["effects"]
            if not isinstance(spec, dict) or not isinstance(effects, list):
                raise TypeError("`spec` must be an object and `effects` a list")
            for effect in effects:
                if not isinstance(effect, dict) or not all(isinstance(effect.get(k), str) for k in ("key", "kind")) \
                        or not isinstance(effect.get("result"), dict):
                    raise TypeError(f"an effect must be an object with a key, a kind and a result: {effect!r}")
            outcome = data["outcome"]
            if not isinstance(outcome, dict):
                raise TypeError("`outcome` must be an object")
            return Recording(str(spec["path"]), str(spec["sha256"]), str(data["pipeline"]), str(data.get("runner", "compiled")),
                             data["input"], data.get("state"), tuple(effects), outcome,
                             tuple(str(m) for m in data.get("models", ())))
        except (KeyError, TypeError) as exc:
            raise RecordingError(f"not a recording: {exc}") from None

    def text(self) -> str:
        """The recording as the file has it: JSON, one field a line and one effect a line (so a
        diff of two recordings shows the effects that changed)."""
        if self._text is not None:
            return self._text
        dumps = _compact
        fields = {"version": RECORDING_VERSION, "spec": {"path": self.spec, "sha256": self.spec_sha256},
                  "pipeline": self.pipeline, "runner": self.runner, "input": self.input, "state": self.state,
                  "models": list(self.models)}
        lines = ["{", *(f'  "{k}": {dumps(v)},' for k, v in fields.items()), '  "effects": [']
        last = len(self.effects) - 1
        lines += [f"    {dumps(_plain(e))}{',' if i < last else ''}" for i, e in enumerate(self.effects)]
        lines += ["  ],", f'  "outcome": {dumps(_plain(self.outcome))}', "}"]
        text = "\n".join(lines) + "\n"
        object.__setattr__(self, "_text", text)  # a cache of what the frozen fields give
        return text

    def write(self, path: str | Path) -> None:
        """Write the recording to ``path`` (:meth:`text`)."""
        Path(path).write_bytes(self.text().encode("utf-8"))

    @staticmethod
    def read(path: str | Path) -> Recording:
        """The recording in ``path`` (:class:`RecordingError`: unreadable, or not a recording)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RecordingError(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RecordingError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from None
        return Recording.from_json(data)

    def redacted(self, secrets: Collection[str]) -> Recording:
        """This recording with ``secrets`` (and URL credentials) masked everywhere (:func:`redacted`):
        itself when its text holds none of them (most recordings: no walk over every value)."""
        if not _holds_secrets(self.text(), secrets):
            return self
        masked = redacted([self.spec, self.pipeline, self.runner, self.input, self.state, list(self.effects),
                           dict(self.outcome), list(self.models)], secrets)
        assert isinstance(masked, list)
        spec, pipeline, runner, input, state, effects, outcome, models = masked
        return Recording(spec, self.spec_sha256, pipeline, runner, input, state, tuple(effects), outcome, tuple(models))


# -- outcomes -------------------------------------------------------------------------------------


def encode_outcome(outcome: Outcome[Any, Any, Any] | Defect, output: Any, state: Any,
                   errors: tuple[type, ...]) -> dict[str, Any]:
    """A run's Outcome as typed JSON: ``{"ok", "state"}``, ``{"err", "state", "site"}`` (the
    error as the journal writes errors), or ``{"defect": {message, site, cause}, "state"}``."""
    from pydantic_core import to_jsonable_python

    if isinstance(outcome, Defect):
        cause = outcome.cause
        return {"defect": {"message": str(outcome), "site": str(outcome.site) if outcome.site is not None else None,
                           "cause": encode_error(cause) if cause is not None else None},
                "state": to_jsonable_python(outcome.state, fallback=repr)}
    types = SiteTypes(output, state if state is not None else type(None), errors)
    encoded: dict[str, Any] = dict(encode_result(outcome, types))
    if isinstance(outcome, Err) and "site" in encoded:  # as readable text, not the journal's list
        encoded["site"] = str(outcome.site)
    assert isinstance(outcome, (Ok, Err))
    return encoded


def same_outcome(recorded: Mapping[str, Any], now: Mapping[str, Any]) -> bool:
    """Whether two encoded Outcomes are equal as Outcomes are: an ``Err``'s site is metadata."""
    return _compared(recorded) == _compared(now)


def _compared(outcome: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in outcome.items() if not (k == "site" and "err" in outcome)}


# -- secrets --------------------------------------------------------------------------------------

#: The ``user:password@`` (or ``user@``) of a URL in any text.
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s\"']+)@")


def _pydantic_json(value: object) -> str:
    """``value`` as compact JSON text, non-ASCII as it is, NaN and infinities as ``json`` writes
    them: pydantic-core's encoder, 4× the standard library's (a recording's text is most of what
    making one costs)."""
    return to_json(value, inf_nan_mode="constants").decode()


_STDLIB_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _stdlib_json(value: object) -> str:
    """The same with the standard library (a pydantic-core without ``inf_nan_mode``: pydantic < 2.7)."""
    return _STDLIB_JSON.encode(value)


def _json_encoder() -> Callable[[object], str]:
    try:
        _pydantic_json(float("nan"))
    except TypeError:
        return _stdlib_json
    return _pydantic_json


#: Encodes each part of a recording's text (and so each secret it is searched for).
_compact = _json_encoder()


def _plain(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` as the JSON encoder takes it (a dict: records and outcomes are, as a rule)."""
    return data if isinstance(data, dict) else dict(data)


def _holds_secrets(text: str, secrets: Collection[str]) -> bool:
    """Whether :func:`redacted` could change anything of the JSON whose text is ``text``: a
    secret occurs in a string of it exactly when its JSON-escaped form occurs in the text
    (escaping maps character by character, and the text is made by the same encoder), and a URL's user info matches there too (the pattern
    excludes the quote, so a match never leaves a string). False positives only cost the walk."""
    if any(secret and _compact(secret)[1:-1] in text for secret in secrets):
        return True
    return "@" in text and _URL_USERINFO.search(text) is not None


def redacted(data: object, secrets: Collection[str]) -> object:
    """``data`` (JSON) with every string's ``secrets`` replaced by :data:`MASK` (the longest
    first) and every URL's user info by :data:`MASK`; keys of objects too."""
    ordered = sorted((s for s in secrets if s), key=len, reverse=True)

    def text(value: str) -> str:
        for secret in ordered:
            if secret in value:
                value = value.replace(secret, MASK)
        if "@" not in value:  # no URL with user info: most strings
            return value
        return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", value)

    def walk(value: object) -> object:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {text(str(k)): walk(v) for k, v in value.items()}
        return value

    return walk(data)


def model_secrets(models: Iterable[Any]) -> tuple[str, ...]:
    """The secrets of the models a run may call (``agentmonad.llm.Model`` values), as the run's
    model configuration and the environment give them: each key and its endpoint's credentials.
    Empty without the ``llm`` extra."""
    try:
        from .llm.config import Misconfigured, Model, current_config, resolve
    except ImportError:
        return ()
    found: dict[str, None] = {}
    config = current_config()
    for model in models:
        if not isinstance(model, Model):
            continue
        settings, _ = config.settings_for(model.name)
        try:
            resolved = resolve(model, settings)
        except Misconfigured:
            continue
        found.update(dict.fromkeys(resolved.secrets))
    return tuple(found)


# -- recording ------------------------------------------------------------------------------------


class _Journaled:
    """A journal that hands every effect to :attr:`journal` (a durable journal), each call
    wrapped by :meth:`_wrapped` / :meth:`_wrapped_sync`."""

    journal: DurableJournal

    def _wrapped(self, effect: Effect, call: Callable[[], Awaitable[_T]]) -> Callable[[], Awaitable[_T]]:
        return call

    def _wrapped_sync(self, effect: Effect, call: Callable[[], _T]) -> Callable[[], _T]:
        return call

    def perform(self, effect: Effect, call: Callable[[], Awaitable[_T]]) -> Awaitable[_T]:
        """The durable journal's, the call wrapped."""
        return self.journal.perform(effect, self._wrapped(effect, call))

    def perform_sync(self, effect: Effect, call: Callable[[], _T]) -> _T:
        """The durable journal's, the call wrapped."""
        return self.journal.perform_sync(effect, self._wrapped_sync(effect, call))

    def branches(self, context: RunContext) -> Branches:
        """The durable journal's."""
        return self.journal.branches(context)

    def deadline_entered(self, deadline: Guard) -> None:
        """The durable journal's."""
        self.journal.deadline_entered(deadline)

    def deadline_expired(self, deadline: Guard) -> None:
        """The durable journal's."""
        self.journal.deadline_expired(deadline)


#: The result of a recorded effect whose call raised an error its site does not declare (a
#: defect: a durable run does not record it, it runs again on resume; a recording keeps it, so
#: its replay fails the same way at the same place).
DEFECT: Final = "defect"

#: The result of a recorded effect whose call was cancelled while it ran (a ``par`` sibling failed,
#: a ``timeout`` fired): its replay waits where it is until the same thing cancels it again.
CANCELLED: Final = "cancelled"

#: How long a replayed effect that the recorded run's cancellation cut short waits to be cancelled
#: again before the replay fails there (the cancellation comes at once when the spec is unchanged).
PARKED_SECONDS = 10.0


@final
class Recorder:
    """What a recorded run attaches: :attr:`journal` (``hooks(journal=recorder.journal)``), a
    durable journal over a memory store: every effect runs and its record is kept; an ``ask``
    asks the run's person; an effect whose call raises an error its site does not declare is
    kept as a :data:`DEFECT`. :meth:`recording` makes the file's content once the run has ended."""

    def __init__(self, types: TypeTable) -> None:
        self.store = MemoryStore()
        self.types = types
        self.journal = DurableJournal(self.store, types, asks_people=True, defect=self._note_defect)
        self._defects: list[Record] = []

    def _note_defect(self, key: str, effect: Effect, exc: BaseException) -> None:
        """The journal's defect hook: an effect whose call raised an error its site does not
        declare (a :data:`DEFECT`), or was cancelled (:data:`CANCELLED`: a sibling failed first)."""
        result: RecordResult = {"cancelled": True} if isinstance(exc, asyncio.CancelledError) else {"defect": encode_error(exc)}
        self._defects.append({"key": key, "kind": effect.kind,
                              "step": effect.site.step if effect.site is not None else effect.kind,
                              "site": str(effect.site) if effect.site is not None else None,
                              "result": result, "usage": []})

    def recording(self, *, spec: str, spec_sha256: str, pipeline: str, runner: str, input: object, state: object,
                  outcome: Mapping[str, Any], secrets: Collection[str] = (), models: tuple[str, ...] = ()) -> Recording:
        """The recording of the run that ended (its records kept so far), secrets masked."""
        kept = [kept_of(r) for r in self.store.flushed()]
        recorded = {str(r["key"]) for r in kept}
        # an effect inside another's call may have failed first: the outer one's defect is its own
        kept += [d for d in self._defects if d["key"] not in recorded]
        made = Recording(spec, spec_sha256, pipeline, runner, input, state, tuple(kept), outcome, models)
        return made.redacted(secrets)


# -- replaying ------------------------------------------------------------------------------------


class NotRecorded(Exception):
    """A replayed run asked for an effect its recording does not hold: ``key`` its identity,
    ``effect`` what it is (kind and site), ``branch`` how many effects the recording holds in
    that effect's branch (so the message can say the recording ended there)."""

    def __init__(self, key: str, effect: Effect, branch: int) -> None:
        where = f" at {effect.site}" if effect.site is not None else ""
        super().__init__(f"the run asks for effect {key}, a {effect.kind}{where}, which the recording does not hold "
                         f"(it holds {branch} effect{'s' if branch != 1 else ''} in that branch)")
        self.key = key
        self.effect = effect
        self.branch = branch


@final
@dataclass(frozen=True, slots=True)
class EffectDifference:
    """An effect a replay ran for real whose result differs from the recorded one: its identity,
    its kind and site (text), and both results (typed JSON, the state whole; ``recorded`` None:
    the recording holds no such effect)."""

    key: str
    kind: str
    site: str | None
    recorded: Mapping[str, Any] | None
    now: Mapping[str, Any] | None


@final
class Replayer(_Journaled):
    """The journal a replay attaches (``hooks(journal=replayer)``): every effect is answered from
    ``recording``; one it does not hold, or holds with another kind or step, or with a value that
    no longer validates as its type, fails the run (:class:`NotRecorded`,
    :class:`~agentmonad.durable.ReplayMismatch`, :class:`~agentmonad.durable.RecordError`, each
    a Defect's cause, naming the effect's identity); a recorded :data:`DEFECT` is raised again.
    The kinds in ``live`` run for real instead; what they give that differs from the recording
    is in :attr:`differences`."""

    def __init__(self, recording: Recording, types: TypeTable, live: Collection[str] = ()) -> None:
        self.types = types
        self.live = frozenset(live)
        self._all: dict[str, Record] = {str(r["key"]): r for r in recording.effects}
        self._branches: dict[tuple[str, ...], int] = {}
        for key in self._all:
            path = tuple(key.split("/")[:-1])
            self._branches[path] = self._branches.get(path, 0) + 1
        self._full = _full_results([r for r in recording.effects if not _unended(r)])
        replayed = {k: r for k, r in self._all.items() if r.get("kind") not in self.live and not _unended(r)}
        #: The keys of the effects the recorded run's cancellation cut short: their replay waits.
        self._cancelled = {k for k, r in self._all.items() if CANCELLED in r["result"]}
        self._parked = 0
        #: The effects run for real whose results differ from the recording's, in the order they ended.
        self.differences: list[EffectDifference] = []
        self.journal = DurableJournal(MemoryStore(), types, replayed, missing=self._missing)

    @property
    def replayed(self) -> int:
        """How many effects were answered from the recording (a recorded defect raised again, a
        recorded cancellation waited for again, too)."""
        return self.journal.replayed + self._raised + self._parked

    @property
    def performed(self) -> int:
        """How many effects ran for real (of the ``live`` kinds)."""
        return self.journal.performed - self._parked

    _raised = 0

    def _missing(self, key: str, effect: Effect) -> BaseException | None:
        record = self._all.get(key)
        if record is not None and _unended(record) and effect.kind not in self.live:
            if record.get("kind") != effect.kind or (effect.site is not None and record.get("step") != effect.site.step):
                return ReplayMismatch(f"effect {key} of the recording is {record.get('kind')} {record.get('step')!r}, "
                                      f"not {effect.kind}", key, record)
            if DEFECT in record["result"]:
                self._raised += 1
                return _defect(record["result"][DEFECT])
            return None  # cancelled in the recorded run: its call waits to be cancelled again (_parking)
        if effect.kind in self.live:
            return None  # run for real (and compared: _wrapped)
        path = tuple(key.split("/")[:-1])
        return NotRecorded(key, effect, self._branches.get(path, 0))

    def _compare(self, effect: Effect, key: str, result: object) -> None:
        types = self.types.get(effect.site)
        try:
            now: dict[str, Any] | None = dict(encode_result(result, types)) if types is not None else None
        except RecordError:
            now = None
        recorded = self._full.get(key)
        if recorded is None or now is None or _value_part(recorded) != _value_part(now):
            self.differences.append(EffectDifference(key, effect.kind, str(effect.site) if effect.site else None,
                                                     recorded, now))

    def _wrapped(self, effect: Effect, call: Callable[[], Awaitable[_T]]) -> Callable[[], Awaitable[_T]]:
        if effect.kind not in self.live:
            return self._parking(call) if self._cancelled else call

        async def compared() -> _T:
            key = branch_key()  # inside the effect's own call: its identity
            result = await call()
            self._compare(effect, key, result)
            return result

        return compared

    def _parking(self, call: Callable[[], Awaitable[_T]]) -> Callable[[], Awaitable[_T]]:
        """``call``, unless its effect was cancelled in the recorded run: then a wait until the
        replay cancels it again (nothing else reaches a call the journal lets run)."""

        async def parked() -> _T:
            key = branch_key()  # inside the effect's own call: its identity
            if key not in self._cancelled:
                return await call()
            self._parked += 1
            # what cancelled it (a sibling's replayed failure, a deadline fired again) comes at
            # once in a replay; a spec changed so that nothing does must not wait for ever
            await asyncio.sleep(PARKED_SECONDS)
            record = self._all[key]
            raise ReplayMismatch(f"effect {key} was cancelled in the recorded run (a sibling failed, or a deadline "
                                 f"fired), and nothing cancelled it in the replay within {PARKED_SECONDS:g} s",
                                 key, record)

        return parked

    def _wrapped_sync(self, effect: Effect, call: Callable[[], _T]) -> Callable[[], _T]:
        if effect.kind not in self.live:
            return call

        def compared() -> _T:
            key = branch_key()
            result = call()
            self._compare(effect, key, result)
            return result

        return compared


class RecordedDefect(Exception):
    """A recorded defect whose class this process cannot make again: its class's name and args."""

    def __init__(self, type_name: str, args: list[object]) -> None:
        super().__init__(*args)
        self.type_name = type_name

    def __str__(self) -> str:
        return f"{self.type_name}{tuple(self.args)!r}"


def _defect(data: Mapping[str, Any]) -> Exception:
    """The exception a recorded defect raised, made again: of its own class when that imports and
    is an ``Exception`` (``decode_error``), else a :class:`RecordedDefect`."""
    import importlib

    from .durable.codec import decode_error

    qualified = str(data.get("type", ""))
    module, _, name = qualified.rpartition(".")
    cls: object = None
    try:
        cls = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
    except (ImportError, AttributeError, ValueError):
        cls = None
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            made = decode_error(data, (cls,))
            if isinstance(made, Exception):
                return made
        except Exception:
            pass
    return RecordedDefect(qualified, list(data.get("args", [])))


def _unended(record: Record) -> bool:
    """A record of an effect whose call did not end with a result (a defect, a cancellation)."""
    result = record["result"]
    return DEFECT in result or CANCELLED in result


def _value_part(result: Mapping[str, Any]) -> dict[str, Any]:
    """What an effect gave, compared: its value or error and the state it left (not its site)."""
    return {k: v for k, v in result.items() if k != "site"}


def _full_results(records: list[Record]) -> dict[str, dict[str, Any]]:
    """Each record's result with its state whole (a record keeps the change since its branch's last)."""
    states = whole_states(records)
    full: dict[str, dict[str, Any]] = {}
    for record, state in zip(records, states):
        result = dict(record.get("result", {}))
        if "delta" in result:
            del result["delta"]
            result["state"] = state
        full[str(record["key"])] = result
    return full


