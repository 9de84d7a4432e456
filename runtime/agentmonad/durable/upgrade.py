"""Moving a run in flight to another version of its spec (docs/language.md §13, "Changing a spec
with runs in flight"): which runs the new version can take, and the move itself.

**The rule.** A run can move when a replay of its journal against the new version, with no effect
performed (:class:`~agentmonad.durable.journal.DurableJournal` with ``dry=True``), meets every
effect the run recorded at the same identity (branch path and number), by an effect of the same
kind and step, with its recorded value, state or error valid under the new version's types — and,
for a run waiting for people, parks on the very questions the run waits on (same identity, ask
and question). Sites are matched by what they are, not where: a line that moved is no change (the
records' site texts are rewritten to the new lines). Anything else is the first place the run
diverges (:class:`Stays`), said at the new version's site and at the run's recorded one.

:func:`classify` decides; :func:`move` rewrites what the run records of its version — its request,
its records' site texts, its waiting record's questions — in one transaction of the run database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, final

from .journal import NOT_EFFECTS, WAITING, DryStop, DurableJournal, MemoryStore, OpenQuestion, Record, ReplayPoint
from .request import RunRequest

if TYPE_CHECKING:
    from .dbos import Engine
    from .version import SpecVersion

__all__ = ["Moves", "Stays", "Verdict", "classify", "move", "MOVABLE"]

#: The statuses of a run that can move: it waits for people, it stopped (its process could not go
#: on, or the spec changed under it), or it waits on its queue for a worker (it goes on the new
#: version's queue). A running run is another process's; an ended one has nothing left to run.
MOVABLE = ("waiting", "stopped", "enqueued")


@final
@dataclass(frozen=True, slots=True)
class Moves:
    """The run can move: ``sites``, the new site text of each record it keeps (by key), and
    ``questions``, the questions it waits on as the new version asks them (as the waiting record
    keeps them; empty: it does not wait)."""

    sites: Mapping[str, str | None]
    questions: tuple[dict[str, Any], ...]


@final
@dataclass(frozen=True, slots=True)
class Stays:
    """The run cannot move: ``why``, at ``new_site`` (the new version's site text, None: none) and
    ``old_site`` (the site text the run recorded, None: none)."""

    why: str
    new_site: str | None = None
    old_site: str | None = None

    @property
    def shown(self) -> str:
        """One line: where, and why."""
        where = [f"{self.new_site}" if self.new_site else "", f"was {self.old_site}" if self.old_site else ""]
        place = ", ".join(w for w in where if w)
        return f"{place}: {self.why}" if place else self.why


Verdict = Moves | Stays


def classify(version: SpecVersion, request: RunRequest, records: list[Record], *, asked_anew: bool = False) -> Verdict:
    """Whether the run of ``request`` with ``records`` (in the order kept) can move to ``version``
    (the module docstring's rule), replaying it with nothing performed. ``asked_anew``: the
    records' values were migrated, so a waiting run's questions are those the new version asks
    from them (same identity and ask; the question itself may differ)."""
    from ..spec import InputError
    from .version import VersionError, llm_config_for

    try:
        value, state = version.prepare(request.pipeline, request.input, request.state)
        llm = llm_config_for(version, list(request.models))
        function = version.pipeline(request.pipeline)
    except (InputError, VersionError) as exc:
        return Stays(f"the new version does not take its input: {exc}")
    by_key = {str(r["key"]): r for r in records if "key" in r}
    journal = DurableJournal(MemoryStore(), version.type_table(), by_key, {}, clock=lambda: 0.0, dry=True)
    ended = asyncio.run(_replayed(journal, function(state, value), llm))
    waits_on = _waiting_questions(records)
    point = journal.stopped_at
    if point is not None and not point.frontier:
        return _diverges(point)
    unmet = _unmet(records, journal.met)
    if unmet is not None:
        if point is not None:  # the new version runs something new where the run went on otherwise
            return Stays(f"the new version runs the {point.kind} {point.step} here (identity {point.key}), where the "
                         f"run next recorded the {unmet.get('kind')} {unmet.get('step')}", point.site, _site(unmet))
        return Stays(f"the run recorded the {unmet.get('kind')} {unmet.get('step')} (identity {unmet.get('key')}), "
                     "which the new version never reaches", None, _site(unmet))
    if waits_on:
        return _parks_the_same(waits_on, point, ended, journal.met, asked_anew)
    return Moves(dict(journal.met), ())


async def _replayed(journal: DurableJournal, run: Any, llm: Any) -> object:
    """The dry replay of ``run`` with ``journal``: its Outcome, its open questions, or None when
    it stopped (:attr:`DurableJournal.stopped_at` says where)."""
    from ..context import hooks
    from ..llm import llm_config

    with hooks(journal=journal), llm_config(llm) if llm is not None else nullcontext():
        try:
            return await journal.until_waiting(run)
        except BaseException as exc:  # a DryStop, alone or in a par/each group's exception group
            if journal.stopped_at is None or not _is_dry_stop(exc):
                raise
            return None


def _is_dry_stop(exc: BaseException) -> bool:
    if isinstance(exc, DryStop):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_dry_stop(inner) for inner in exc.exceptions)
    return isinstance(exc.__cause__ or exc.__context__, DryStop)


def _site(record: Mapping[str, Any]) -> str | None:
    site = record.get("site")
    return str(site) if site is not None else None


def _diverges(point: ReplayPoint) -> Stays:
    """A record that the new version's effect at its identity does not take."""
    record: Mapping[str, object] = point.record or {}
    if record.get("kind") != point.kind or record.get("step") != point.step:
        why = (f"the new version runs the {point.kind} {point.step} here (identity {point.key}), where the run "
               f"recorded the {record.get('kind')} {record.get('step')}")
        if record.get("kind") == point.kind:  # the same kind of effect under another name: perhaps renamed
            why += f" (if it was renamed, the new spec says so: `rename {record.get('step')} -> {point.step}`)"
    else:
        why = f"what the run recorded for the {point.kind} {point.step} does not fit the new version: {point.why}"
    return Stays(why, point.site, _site(record))


def _waiting_questions(records: list[Record]) -> list[dict[str, Any]]:
    """The questions the run waits on: those of its last record, when it is a waiting one."""
    return list(records[-1].get("questions", ())) if records and records[-1]["kind"] == WAITING else []


def _unmet(records: list[Record], met: Mapping[str, str | None]) -> Record | None:
    """The first effect record no effect of the replay met (one inside a met effect's own call —
    a spawn's planner, say — is replayed with it)."""
    for record in records:
        key = str(record.get("key"))
        if record.get("kind") in NOT_EFFECTS or key in met:
            continue
        parts = key.split("/")
        if any("/".join(parts[:n]) in met for n in range(1, len(parts))):
            continue
        return record
    return None


def _parks_the_same(waits_on: list[dict[str, Any]], point: ReplayPoint | None, ended: object,
                    met: Mapping[str, str | None], asked_anew: bool = False) -> Verdict:
    """A waiting run moves when the new version parks on the very questions it waits on (with
    ``asked_anew``, on questions of the same identity and ask)."""
    first = waits_on[0]
    asked = f"the question {first.get('name')} the run waits on (identity {first.get('key')})"
    if point is not None:
        return Stays(f"the new version runs the {point.kind} {point.step} here (identity {point.key}), before {asked}",
                     point.site, first.get("site"))
    if not isinstance(ended, list):
        return Stays(f"the new version ends without asking {asked}", None, first.get("site"))
    def identity(key: object, name: object, payload: object) -> tuple[str, str, str]:
        return str(key), str(name), "" if asked_anew else _canonical(payload)

    parked = {identity(q.key, q.name, q.payload): q for q in ended if isinstance(q, OpenQuestion)}
    for question in waits_on:
        found = parked.get(identity(question.get("key"), question.get("name"), question.get("question")))
        if found is None:
            return Stays(f"the new version does not ask the question {question.get('name')} the run waits on "
                         f"(identity {question.get('key')}) with the same question", None, question.get("site"))
    if len(parked) != len(waits_on):
        extra = next(q for k, q in parked.items() if k[0] not in {str(w.get("key")) for w in waits_on})
        return Stays(f"the new version also asks {extra.name} (identity {extra.key}), which the run does not wait on",
                     extra.site, first.get("site"))
    # a question asked anew keeps when the run first asked it (its deadline counts from then)
    asked_at = {str(q.get("key")): OpenQuestion.from_json(q).asked for q in waits_on}
    return Moves(dict(met), tuple(replace(q, asked=asked_at.get(q.key, q.asked)).as_json()
                                  for q in ended if isinstance(q, OpenQuestion)))


def _canonical(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def move(engine: Engine, run_id: str, request: RunRequest, moves: Moves, records: list[Record] | None = None,
         *, enqueued: bool = False) -> None:
    """Rewrite what the run ``run_id`` records of its version, in one transaction: its request
    becomes ``request``, each kept record's site text the new version's (``moves.sites``), its
    waiting record's questions ``moves.questions``; ``records`` (by key, when given): what each
    record becomes (a migration's, see ``mcec.durable.migrate``); ``enqueued``: the run still waits on
    its queue, and goes on ``request.queue`` (the new version's workers listen there). The caller
    holds the run's lock."""
    from .dbos_internals import rewrite_run

    rows = engine.step_rows(run_id)
    given = {str(r.get("key")): r for r in records} if records is not None else {}
    changed: dict[int, Record] = {}
    last = max((i for i, (_, r) in enumerate(rows) if r.get("kind") == WAITING), default=None)
    for i, (function_id, record) in enumerate(rows):
        key = str(record.get("key"))
        now = given.get(key, record)
        if key in moves.sites and moves.sites[key] != now.get("site"):
            now = {**now, "site": moves.sites[key]}
        elif i == last and moves.questions and list(moves.questions) != now.get("questions"):
            now = {**now, "questions": list(moves.questions)}
        if now != record:
            changed[function_id] = now
    rewrite_run(engine.client, run_id, request.as_json(), changed, request.queue if enqueued else None)
