"""Typed state migrations for runs moved to a new spec version (docs/language.md §13, "Changing a
spec with runs in flight"): what replay cannot carry over by itself when the state type changed.

A migration is an ordinary ``fn`` of the new spec, named ``migrate_state``, from the old state type
to the new one (the spec's ``state``)::

    fn migrate_state : Desk -> SourcedDesk = impl.from_desk

It is a pure Python function, checked like every ``fn`` (the checker reads its signature, mypy checks
the generated module against it), and the old type must still be importable under some name. When
a run moves to the version (``mcec runs upgrade``), every state it recorded — its starting state
and the state after each effect — is read as the old type, given to the function, and written as
the new type, before the dry replay decides whether the run can move; the move rewrites the records
with the migrated states in the same transaction as the rest, so it happens once. A state that is
not the old type stays as it was, and the run with it (said, with pydantic's reason).
"""

from __future__ import annotations

import copy
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, final

from agentmonad.durable.codec import RecordError, decode_value, encode_value
from agentmonad.durable.errors import DurableError
from agentmonad.durable.journal import NOT_EFFECTS, Record, apply_delta

from mcec.check import typed as t

__all__ = ["MIGRATION", "MigrationFailed", "StateMigration", "migrated", "state_migration"]

#: The name of the ``fn`` that migrates a recorded state to the new version's state type.
MIGRATION = "migrate_state"


class MigrationFailed(Exception):
    """A recorded state could not be migrated (not the old type, or the function raised)."""


@final
@dataclass(frozen=True, slots=True)
class StateMigration:
    """The new version's ``migrate_state``: the ``old`` and ``new`` state types (Python), the
    ``function``, and how it reads (``shown``: ``migrate_state : Desk -> SourcedDesk``)."""

    old: Any
    new: Any
    function: Callable[[Any], Any]
    shown: str

    def apply(self, data: object) -> object:
        """The recorded state ``data`` (JSON, an old state) as the new state type's JSON."""
        try:
            old = decode_value(self.old, data, "state")
            return encode_value(self.new, self.function(old), "migrated state")
        except RecordError as exc:
            raise MigrationFailed(str(exc).strip().splitlines()[0]) from None
        except Exception as exc:  # the user's function failed on this state
            raise MigrationFailed(f"{self.shown} raised {type(exc).__name__}: {exc}") from None


def state_migration(program: t.Program) -> StateMigration | None:
    """``program``'s ``fn migrate_state`` (None: it declares none); :class:`DurableError` when it
    does not give the spec's state type."""
    from mcec.run.pyobjects import python_type

    found = next((fn for fn in program.fns if fn.name == MIGRATION), None)
    if found is None:
        return None
    shown = f"{MIGRATION} : {found.sig.input} -> {found.sig.output}"
    if program.state is None or found.sig.output != program.state:
        raise DurableError(f"{shown} must give the spec's state type ({program.state or 'it declares none'})")
    module, _, attr = found.impl.path.rpartition(".")
    try:
        function = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise DurableError(f"{shown}: cannot import {found.impl.path}: {exc}") from None
    return StateMigration(python_type(found.sig.input), python_type(found.sig.output), function, shown)


def migrated(records: list[Record], state_json: str | None, migration: StateMigration) -> tuple[list[Record], str | None]:
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
        rest = {k: v for k, v in result.items() if k not in ("state", "delta")}
        done.append({**record, "result": {**rest, "state": migration.apply(whole)}})
    return done, json.dumps(migration.apply(json.loads(state_json) if state_json is not None else _default(migration)))


def _default(migration: StateMigration) -> object:
    """The old state type's default (a run started without ``--state`` started from it), as JSON."""
    try:
        return encode_value(migration.old, migration.old(), "state")
    except Exception as exc:
        raise MigrationFailed(f"the old state type has no default to start from ({exc})") from None
