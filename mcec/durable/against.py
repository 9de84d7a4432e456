"""``mcec check NEW --against OLD``: which runs in flight a new version of a spec can take, decided
at build time, before any run exists (docs/language.md §13, "Changing a spec with runs in flight").

For every effect site of the old version — a place a run can be parked at or have passed — it says
whether a run there **carries over** (the new version has the same effect at the same place, with
the same types), **carries over if its recorded values fit** (the same effect, but its output or
the state changed type: ``mcec runs upgrade`` checks each run's recorded values), **carries over
with a migration** (it was renamed, or its changed types — the state, its output, an ask's question
from the effects before it — each have the migration the new version declares,
:mod:`mcec.durable.migrate`), or **cannot**
(the effect is gone, or the effects before it changed, so the run's identities no longer line up).

A site's place is what it is, not where it is written: its pipeline, the ``par`` branch / ``each``
body / ``match`` arm / loop it is in, its kind and name, and the effects that run before it in its
branch (which decide its identity). Moving lines is no change. This is the static side of the rule
``runs upgrade`` applies to each run by a dry replay of its journal
(:mod:`agentmonad.durable.upgrade`): with ``--db``, each site also says how many live runs sit there
and how many of them that replay moves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never, final

from mcec.check import typed as t
from mcec.sites import site_text

if TYPE_CHECKING:
    from agentmonad.durable.codec import TypeTable

    from mcec.durable.migrate import Migrations

__all__ = ["EffectPlace", "SiteChange", "compare", "effect_places"]


@final
@dataclass(frozen=True, slots=True)
class EffectPlace:
    """An effect site of a version, by what it is: ``pipeline``, the ``branch`` it is in (the
    groups and arms around it), the effects ``before`` it in that branch, its ``label`` (kind
    and name); ``site`` is its text as a run records it (``file:line:col (name)``)."""

    pipeline: str
    branch: tuple[str, ...]
    before: tuple[str, ...]
    label: str
    site: str
    #: An ask's question type (what a run waiting there was asked; "": not an ask).
    question: str = ""
    #: The name it had in the old version, when the new one declares it renamed (None: not renamed).
    was: str | None = None

    @property
    def place(self) -> tuple[str, tuple[str, ...], tuple[str, ...], str]:
        """What matches it to its counterpart in another version."""
        return (self.pipeline, self.branch, self.before, self.label)


@final
@dataclass(frozen=True, slots=True)
class SiteChange:
    """What becomes of the runs at one old site: ``verdict`` is ``carries over``, ``carries over if
    its recorded values fit`` or ``cannot``; ``why`` says what changed; ``new_site`` is its
    counterpart (None: none). ``live``/``moving``: with a run database, how many live runs sit
    there, and how many of them ``runs upgrade`` moves (None: not asked)."""

    old: EffectPlace
    verdict: str
    why: str | None
    new_site: str | None
    live: int | None = None
    moving: int | None = None

    @property
    def shown(self) -> str:
        """One line."""
        head = f"{self.old.site} [{self.old.pipeline}]"
        arrow = f" -> {self.new_site}" if self.new_site and self.new_site != self.old.site else ""
        why = f" ({self.why})" if self.why else ""
        runs = f"; {self.live} live run{'s' if self.live != 1 else ''} here, {self.moving} would move" if self.live else ""
        return f"{head}{arrow}: {self.verdict}{why}{runs}"


CARRIES, CARRIES_IF_FIT, CANNOT = "carries over", "carries over if its recorded values fit", "cannot"
MIGRATED = "carries over with a migration"


def effect_places(program: t.Program) -> list[EffectPlace]:
    """Every effect site of ``program``'s pipelines, by what it is (:class:`EffectPlace`), in the
    order of its pipelines' structure."""
    asks = {ask.name: ask.span for ask in program.asks}
    found: list[EffectPlace] = []
    for pipeline in program.pipelines:
        _walk(pipeline.body, pipeline.name, (), (), asks, found)
    return found


def _walk(node: t.TExpr, pipeline: str, branch: tuple[str, ...], before: tuple[str, ...], asks: dict[str, Any],
          found: list[EffectPlace]) -> tuple[str, ...]:
    """Record the effect sites of ``node`` (in ``branch``, after the effects ``before``); the
    effects it takes numbers for in its branch, as labels (what later sites count as before them)."""
    match node:
        case t.TRef(kind=kind, name=name, span=span):
            match kind:
                case t.RefKind.STEP | t.RefKind.TOOL | t.RefKind.LLM:
                    label = f"{kind.word} {name}"
                    found.append(EffectPlace(pipeline, branch, before, label, site_text(name, span)))
                    return (label,)
                case t.RefKind.ASK:
                    label = f"ask {name}"  # a person's answer is recorded at the ask's declaration
                    found.append(EffectPlace(pipeline, branch, before, label, site_text(name, asks.get(name, span)),
                                             str(node.sig.input)))
                    return (label,)
                case t.RefKind.PIPELINE:
                    return (f"pipeline {name}",)
                case t.RefKind.FN:
                    return ()
                case _:
                    assert_never(kind)
        case t.TIdentity():
            return ()
        case t.TBind(parts=parts):
            taken: tuple[str, ...] = ()
            for part in parts:
                taken += _walk(part, pipeline, branch, before + taken, asks, found)
            return taken
        case t.TPar(branches=branches):
            for i, inner in enumerate(branches):
                _walk(inner, pipeline, (*branch, f"{'.'.join(before) or '^'} par {i}"), (), asks, found)
            return (f"par/{len(branches)}",)
        case t.TEach(body=body):
            _walk(body, pipeline, (*branch, f"{'.'.join(before) or '^'} each"), (), asks, found)
            return ("each",)
        case t.TSpawn(planner=planner):
            found.append(EffectPlace(pipeline, branch, before, "spawn", site_text("spawn", node.span)))
            _walk(planner, pipeline, (*branch, f"{'.'.join(before) or '^'} spawn"), (), asks, found)
            return ("spawn",)
        case t.TTimeout(body=body):  # a deadline takes a number when it is entered
            return ("within", *_walk(body, pipeline, branch, (*before, "within"), asks, found))
        case t.TLocal(body=body) | t.TBudget(body=body) | t.TSubAgent(body=body):
            return _walk(body, pipeline, branch, before, asks, found)
        case t.TMatch(arms=arms):
            return (_alternatives(node, [(f"arm {i}", arm.body) for i, arm in enumerate(arms)], pipeline, branch,
                                  before, asks, found),)
        case t.TIf(condition=condition, then=then, otherwise=otherwise):
            taken = _walk(condition, pipeline, branch, before, asks, found)
            return (*taken, _alternatives(node, [("then", then), ("else", otherwise)], pipeline, branch,
                                          before + taken, asks, found))
        case t.TCatch(body=body, handler=handler) | t.TOrElse(body=body, fallback=handler):
            taken = _walk(body, pipeline, branch, before, asks, found)
            # the handler runs after some of the body's effects: its sites are placed after the whole body
            recovered = _alternatives(node, [("handler", handler)], pipeline, branch, before + taken, asks, found)
            return (*taken, recovered)
        case t.TLoop(body=body) | t.TRetry(body=body):  # later iterations take later numbers
            repeated = _alternatives(node, [("body", body)], pipeline, branch, before, asks, found)
            return (f"repeat {repeated}",)
        case _:
            assert_never(node)


def _alternatives(node: t.TExpr, arms: list[tuple[str, t.TExpr]], pipeline: str, branch: tuple[str, ...],
                  before: tuple[str, ...], asks: dict[str, Any], found: list[EffectPlace]) -> str:
    """The sites of alternatives that take numbers in the same branch (a ``match``'s arms); one
    label for what follows them: the effects of every arm."""
    kind = type(node).__name__.removeprefix("T").lower()
    taken = [f"{name}:{'.'.join(_walk(arm, pipeline, (*branch, f'{kind} {name}'), (), asks, found))}"
             for name, arm in arms]
    # a site inside an arm counts the effects before the group in its branch too
    return f"{kind}({'|'.join(taken)})"


def _types(table: TypeTable, place: EffectPlace) -> tuple[object, object] | None:
    """The JSON schemas of the value and state a run records at ``place`` (None: not known)."""
    from agentmonad.outcome import Site

    text, name = place.site.rsplit(" (", 1)
    file, line, column = text.rsplit(":", 2)
    types = table.get(Site(name.removesuffix(")"), file, int(line), int(column)))
    if types is None:
        return None
    return _schema(types.value), _schema(types.state)


def _schema(type_: Any) -> object:
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(type_).json_schema()
    except Exception:  # a type pydantic gives no schema for: compared by name
        return repr(type_)


def compare(old_spec: str, new_spec: str, *, db: str | None = None) -> tuple[list[SiteChange], list[EffectPlace]]:
    """What becomes of the runs at each effect site of ``old_spec`` under ``new_spec``, and the
    new version's sites no old one maps to. With ``db``: the live runs of ``old_spec`` at each."""
    from mcec.durable import _compiled, _version

    programs = []
    tables = []
    for spec in (old_spec, new_spec):
        compiled = _compiled(spec, generate=True)
        assert compiled.program is not None
        programs.append(compiled.program)
        tables.append(_version(spec, interpret=False).type_table())
    from mcec.durable.migrate import migrations

    declared = migrations(programs[1])
    old_places = [_renamed(p, declared.renames) for p in effect_places(programs[0])]
    new_places = effect_places(programs[1])
    by_place = {p.place: p for p in new_places}
    by_label = {(p.pipeline, p.label): p for p in new_places}
    changes: list[SiteChange] = []
    for old in old_places:
        new = by_place.get(old.place)
        if new is None:
            elsewhere = by_label.get((old.pipeline, old.label))
            why = ("the effects before it changed, so a run's identities no longer line up" if elsewhere is not None
                   else "the new version no longer runs it here")
            changes.append(SiteChange(old, CANNOT, why, elsewhere.site if elsewhere else None))
            continue
        before, after = _types(tables[0], old), _types(tables[1], new)
        changed = [] if before is None or after is None else [
            what for what, a, b in (("its output", before[0], after[0]), ("the state", before[1], after[1])) if a != b
        ]
        if old.question != new.question:  # a run waiting here was asked another question
            changed.insert(0, "its question")
        prompt = _prompt_changed(programs[0], programs[1], old)
        migrated = _migrated(old, changed, declared)
        if prompt is not None and not changed and not migrated:
            changes.append(SiteChange(old, CARRIES, prompt, new.site))
        elif migrated and len(migrated) == len(changed) + (old.was is not None):
            changes.append(SiteChange(old, MIGRATED, "; ".join(migrated), new.site))
        elif changed:
            changes.append(SiteChange(old, CARRIES_IF_FIT, f"{' and '.join(changed)} changed type", new.site))
        else:
            changes.append(SiteChange(old, CARRIES, None, new.site))
    changes = _passed(changes)
    known = {(p.pipeline, p.label) for p in old_places}
    added = [p for p in new_places if (p.pipeline, p.label) not in known]
    if db is not None:
        changes = _with_runs(changes, old_spec, new_spec, db)
    return changes, added


def _renamed(place: EffectPlace, renames: Mapping[str, str]) -> EffectPlace:
    """``place`` as the new version names it when it (or an effect before it) was renamed
    (``rename OLD -> NEW``): what matches it to the renamed effect's place."""
    if not renames:
        return place
    pattern = re.compile(rf"\b(step|tool|llm|ask) ({'|'.join(map(re.escape, renames))})\b")

    def named(text: str) -> str:
        return pattern.sub(lambda m: f"{m[1]} {renames[m[2]]}", text)

    label = named(place.label)
    was = place.label.partition(" ")[2] if label != place.label else None
    return replace(place, branch=tuple(map(named, place.branch)), before=tuple(map(named, place.before)), label=label,
                   was=was)


def _migrated(place: EffectPlace, changed: list[str], declared: Migrations) -> list[str]:
    """The declared migrations that carry a run at ``place`` over its ``changed`` types (and its
    rename), one phrase each."""
    name = place.label.partition(" ")[2]
    found = [f"renamed: rename {place.was} -> {name}"] if place.was is not None else []
    for what in changed:
        if what == "the state" and declared.state is not None:
            found.append(f"the state changed type: {declared.state.shown}")
        elif what == "its output" and name in declared.outputs:
            found.append(f"its output changed type: {declared.outputs[name].shown}")
        elif what == "its question":  # an ask's question is what the effects before it gave: migrated there
            by = [declared.outputs[n].shown for n in (b.partition(" ")[2] for b in place.before) if n in declared.outputs]
            if by:
                found.append(f"its question changed type: {by[-1]}")
    return found


def _prompt_changed(old: t.Program, new: t.Program, place: EffectPlace) -> str | None:
    """What a changed prompt of the ``llm`` or ``ask`` at ``place`` means for runs (None: it did
    not change): a run that passed it keeps its recorded answer, a run not there yet is asked anew."""
    kind, _, name = place.label.partition(" ")
    if kind not in ("llm", "ask"):
        return None
    before, after = _template(old, kind, place.was or name), _template(new, kind, name)
    if before == after:
        return None
    if kind == "ask":
        return "its prompt changed: a run waiting here is shown the new prompt for the same question"
    return "its prompt changed: a run that passed it keeps its recorded answer; a run not there yet uses the new prompt"


def _template(program: t.Program, kind: str, name: str) -> str | None:
    """The template of ``program``'s ``llm`` (``kind``) or ``ask`` ``name``."""
    if kind == "llm":
        return next((llm.template for llm in program.llms if llm.name == name), None)
    return next((ask.template for ask in program.asks if ask.name == name), None)


def _passed(changes: list[SiteChange]) -> list[SiteChange]:
    """A run at a site has passed the sites before it on its way (the earlier ones of its pipeline
    not beside it in another branch of a group it is inside): where one of them cannot carry over,
    neither can a run here."""
    found: list[SiteChange] = []
    for i, change in enumerate(changes):
        blocked = next((earlier for earlier in changes[:i] if earlier.verdict == CANNOT
                        and earlier.old.pipeline == change.old.pipeline and not _beside(earlier.old, change.old)), None)
        if blocked is not None and change.verdict != CANNOT:
            change = SiteChange(change.old, CANNOT, f"a run here passed {blocked.old.site}, which cannot carry over",
                                change.new_site)
        found.append(change)
    return found


def _beside(earlier: EffectPlace, later: EffectPlace) -> bool:
    """Whether ``later`` is in another branch (of a group it is inside) than ``earlier``: a run at
    ``later`` need not have passed ``earlier``."""
    common = 0
    while (common < min(len(earlier.branch), len(later.branch))
           and earlier.branch[common] == later.branch[common]):
        common += 1
    return len(earlier.branch) > common and len(later.branch) > common


def _with_runs(changes: list[SiteChange], old_spec: str, new_spec: str, db: str) -> list[SiteChange]:
    """``changes`` with the live runs of ``old_spec`` at each site counted: where each waits (its
    questions' site) or stopped (its last effect's site), and how many a dry replay moves."""
    from agentmonad.durable.journal import NOT_EFFECTS, WAITING
    from agentmonad.durable.runs import engine_for, request_of, status_of
    from agentmonad.durable.upgrade import MOVABLE, Moves, classify

    from mcec.durable.upgrade import _new_version, prepared

    old_path = str(Path(old_spec).resolve())
    at: dict[str, list[bool]] = {}
    versions: dict[tuple[str, bool], Any] = {}
    with engine_for(db) as engine:
        for info in engine.runs():
            records = engine.steps(info.run_id)
            if status_of(info, records) not in MOVABLE:
                continue
            request = request_of(info)
            if request.spec != old_path:
                continue
            sites = ([q.get("site") for q in records[-1].get("questions", ())] if records and records[-1]["kind"] == WAITING
                     else [r.get("site") for r in records if r.get("kind") not in NOT_EFFECTS][-1:])
            version, _, declared = _new_version(new_spec, request, versions)
            migrating = prepared(request, records, declared)
            moves = not isinstance(migrating, str) and isinstance(
                classify(version, *migrating, asked_anew=bool(declared.without(request.declarations).outputs)), Moves)
            for site in dict.fromkeys(s for s in sites if s):
                at.setdefault(str(site), []).append(moves)
    return [replace(c, live=len(at.get(c.old.site, [])), moving=sum(at.get(c.old.site, []))) for c in changes]


def shown(changes: Sequence[SiteChange], added: Sequence[EffectPlace]) -> list[str]:
    """The lines ``mcec check --against`` prints."""
    return [c.shown for c in changes] + [f"{p.site} [{p.pipeline}]: new (runs reach it after they move)" for p in added]
