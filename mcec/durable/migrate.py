"""Typed migrations for runs moved to a new spec version (docs/language.md §13, "Changing a spec
with runs in flight"): what replay cannot carry over by itself — a changed state type, a changed
output type of an effect the runs passed, a renamed effect.

A migration is an ordinary ``fn`` of the new spec from the old type to the new one, named for what
it migrates: ``migrate_state`` (to the spec's ``state``) or ``migrate_output_NAME`` (to the output
type of the step, tool, ``llm`` or ``ask`` ``NAME``: what the run recorded it returned)::

    fn migrate_state       : Desk -> SourcedDesk = impl.from_desk
    fn migrate_output_load : Refund -> Claim     = impl.claim_of

It is a pure Python function, checked like every ``fn`` (the checker reads its signature and holds
its output to the type it migrates to, :mod:`mcec.check.migrations`; mypy checks the generated
module against it), and the old type must still be importable under some name. A renamed effect
is declared with ``rename OLD -> NEW``. When a run moves to the version (``mcec runs upgrade``),
its records are rewritten before the dry replay decides whether it can move — each record of
``OLD`` named ``NEW``; each value an effect with an output migration recorded, and each state
(its starting state, and the state after each effect), read as the old type, given to the
function, written as the new one — and the move writes them in the same transaction as the rest,
so it happens once. A value that is not the old type, or that the function fails on, stays as it
was, and the run with it (said, with the reason).
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, final

from agentmonad.durable.codec import RecordError, decode_value, encode_value
from agentmonad.durable.errors import DurableError
from agentmonad.durable.journal import NOT_EFFECTS, WAITING, Record, apply_delta

from mcec.check import typed as t
from mcec.check.migrations import STATE_MIGRATION, output_migrated

if TYPE_CHECKING:
    from mcec.check.types import Type

__all__ = ["Migration", "MigrationFailed", "Migrations", "migrated", "migrations"]

class MigrationFailed(Exception):
    """A recorded value could not be migrated (not the old type, or the function raised)."""


@final
@dataclass(frozen=True, slots=True)
class Migration:
    """One migration ``fn`` of the new version: the ``old`` and ``new`` types (Python), the
    ``function``, how it reads (``shown``: ``migrate_state : Desk -> SourcedDesk``), and its
    declaration's digest in what a run records of its spec (``declared``, mcec.durable.changes)."""

    old: Any
    new: Any
    function: Callable[[Any], Any]
    shown: str
    declared: tuple[str, str | None] = ("", None)

    def apply(self, data: object, what: str) -> object:
        """The recorded ``data`` (JSON of the old type; ``what`` it is) as the new type's JSON."""
        try:
            old = decode_value(self.old, data, what)
            return encode_value(self.new, self.function(old), f"migrated {what}")
        except RecordError as exc:
            raise MigrationFailed(f"its recorded {what} cannot be migrated by {self.shown}: "
                                  f"{str(exc).strip().splitlines()[0]}") from None
        except Exception as exc:  # the user's function failed on this value
            raise MigrationFailed(f"its recorded {what} cannot be migrated by {self.shown}: it raised "
                                  f"{type(exc).__name__}: {exc}") from None


@final
@dataclass(frozen=True, slots=True)
class Migrations:
    """What a new version declares to carry runs over: its ``state`` migration, its ``outputs``
    migrations (by the name of the effect in the new version), its ``renames`` (old name: new)."""

    state: Migration | None = None
    outputs: Mapping[str, Migration] = field(default_factory=dict)
    renames: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.state is not None or bool(self.outputs) or bool(self.renames)

    def without(self, recorded: object) -> Migrations:
        """These migrations but those the run's version declared too (``recorded``: the
        declarations its request records): its records are of the migrated types already (it
        started on a version that has them, or moved to one). A rename needs no such care: once
        applied, no record of the old name is left."""
        have: set[tuple[str, str | None]] = set()
        specs = recorded.get("specs") if isinstance(recorded, dict) else None
        for spec in specs.values() if isinstance(specs, dict) else ():
            decls = spec.get("decls") if isinstance(spec, dict) else None
            have.update(decls.items() if isinstance(decls, dict) else ())
        state = self.state if self.state is not None and self.state.declared not in have else None
        return Migrations(state, {k: m for k, m in self.outputs.items() if m.declared not in have}, self.renames)


def migrations(program: t.Program) -> Migrations:
    """``program``'s migrations; :class:`DurableError` when one does not give the type it
    migrates to or cannot be imported (the checker says so first, MCE035)."""
    from mcec.check.pyindex import package_root
    from mcec.durable.changes import declarations
    from mcec.fingerprint import _spec_name

    effects: tuple[t.TStep | t.TTool | t.TLlm | t.TAsk, ...] = (*program.steps, *program.tools, *program.llms, *program.asks)
    outputs = {effect.name: effect.sig.output for effect in effects}
    own = declarations(program)["specs"].get(_spec_name(program.path, package_root(program.path)), {})
    digests: dict[str, str] = own.get("decls", {})
    state: Migration | None = None
    migrated_outputs: dict[str, Migration] = {}
    for fn in program.fns:
        name = output_migrated(fn.name)
        if fn.name == STATE_MIGRATION:
            state = _loaded(fn, program.state, "the spec's state type", digests)
        elif name is not None:
            migrated_outputs[name] = _loaded(fn, outputs.get(name), f"the output type of {name}", digests)
    return Migrations(state, migrated_outputs, {r.old: r.new for r in program.renames})


def _loaded(fn: t.TFn, to: Type | None, what: str, digests: Mapping[str, str]) -> Migration:
    from mcec.run.pyobjects import python_type

    shown = f"{fn.name} : {fn.sig.input} -> {fn.sig.output}"
    if to is None or fn.sig.output != to:
        raise DurableError(f"{shown} must give {what} ({to or 'there is none'})")
    module, _, attr = fn.impl.path.rpartition(".")
    try:
        function = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise DurableError(f"{shown}: cannot import {fn.impl.path}: {exc}") from None
    key = f"fn {fn.name}"
    return Migration(python_type(fn.sig.input), python_type(fn.sig.output), function, shown, (key, digests.get(key)))


def migrated(records: list[Record], state_json: str | None, done: Migrations) -> tuple[list[Record], str | None]:
    """``records`` as the new version reads them, and the run's starting state ``state_json``
    (None: the old state type's default): renamed, outputs and states migrated
    (:class:`MigrationFailed` when a value cannot be)."""
    records = [_renamed(record, done.renames) for record in records] if done.renames else records
    if done.outputs:
        records = [_output(record, done.outputs) for record in records]
    if done.state is None:
        return records, state_json
    return _states(records, state_json, done.state)


def _renamed(record: Record, renames: Mapping[str, str]) -> Record:
    """``record`` with the name of a renamed effect (and of a renamed ask it waits on) the new one."""
    if record.get("kind") == WAITING:
        questions = [{**q, "name": renames.get(str(q.get("name")), q.get("name"))} for q in record.get("questions", ())]
        return {**record, "questions": questions}
    step = str(record.get("step"))
    return {**record, "step": renames[step]} if record.get("kind") not in NOT_EFFECTS and step in renames else record


def _output(record: Record, outputs: Mapping[str, Migration]) -> Record:
    """``record`` with its recorded output migrated, when its effect has an output migration."""
    migration = outputs.get(str(record.get("step")))
    result = record.get("result")
    if migration is None or record.get("kind") in NOT_EFFECTS or not isinstance(result, dict):
        return record
    slot = next((k for k in ("ok", "value") if k in result), None)  # an error or a timeout keeps its record
    if slot is None:
        return record
    what = f"output of {record.get('step')} (identity {record.get('key')})"
    migrated = result.copy()
    if slot == "ok":
        migrated["ok"] = migration.apply(result["ok"], what)
    else:
        migrated["value"] = migration.apply(result["value"], what)
    return record | {"result": migrated}


def _states(records: list[Record], state_json: str | None, migration: Migration) -> tuple[list[Record], str | None]:
    """``records`` with every state migrated (each written whole: a record keeps the change since
    its branch's last state, and the changes of old states mean nothing to new ones), and the
    run's starting state ``state_json`` migrated (None: the old state type's default, migrated)."""
    states: dict[tuple[str, ...], object] = {}
    done: list[Record] = []
    for record in records:
        result = record.get("result")
        if record.get("kind") in NOT_EFFECTS or not isinstance(result, dict) or not ({"state", "delta"} & result.keys()):
            done.append(record)
            continue
        path = tuple(str(record["key"]).split("/")[:-1])
        whole = (apply_delta(copy.deepcopy(states.get(path)), result["delta"]) if "delta" in result
                 else result["state"])
        states[path] = whole
        migrated = result.copy()
        migrated.pop("delta", None)
        migrated["state"] = migration.apply(whole, "state")
        done.append(record | {"result": migrated})
    start = json.loads(state_json) if state_json is not None else _default(migration)
    return done, json.dumps(migration.apply(start, "state"))


def _default(migration: Migration) -> object:
    """The old state type's default (a run started without ``--state`` started from it), as JSON."""
    try:
        return encode_value(migration.old, migration.old(), "state")
    except Exception as exc:
        raise MigrationFailed(f"the old state type has no default to start from ({exc})") from None
