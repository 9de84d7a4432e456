"""The rule ``runs upgrade`` applies (agentmonad.durable.upgrade.classify), over random specs
(tests/spec_gen.py) and random single edits (lines moved, a step added before or after ``main``'s
body, a ``par`` branch added beside it, the output type of the step ``inc`` changed with and
without its typed migration ``migrate_output_inc``): a run stopped after any number of its effects
that the classifier moves to the edited version (its records migrated as the version declares,
mcec.durable.migrate) ends, resumed there, with the same Outcome as a fresh run of the edited
version (the toolbox's steps are deterministic, so a fresh run's effects return what the moved run
recorded); an edit that only moves lines always moves it; a run that passed ``inc`` never moves
when its changed output type has no migration."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from agentmonad import Defect, Err, Ok
from agentmonad.context import hooks
from agentmonad.control import fake_retry_clock
from agentmonad.durable import DurableJournal, MemoryStore, Record
from agentmonad.durable.request import RunRequest
from agentmonad.durable.upgrade import Moves, Stays, classify
from mcec.compiler import check_source
from mcec.durable import InterpretedVersion
from mcec.durable.migrate import migrations
from mcec.durable.upgrade import prepared
from mcec.run.interpret import interpret
from mcec.span import SourceFile
from shared_index import shared_index
from spec_gen import specs

_counter = itertools.count()

#: The single edits: lines moved, a step added at the end of ``main``, a step added at its start.
EDITS = ("lines moved", "step added after", "step added before", "par branch added", "output type changed",
         "output type changed with a migration")

#: ``inc`` giving a ``Counted`` (its uses unwrap it: a pure fn, no effect of its own).
RETYPED_INC = ("step inc : int -> Counted = tb.inc_counted\n"
               "fn counted_value : Counted -> int = tb.counted_value\n")
#: The typed migration of what the earlier ``inc`` recorded.
INC_MIGRATION = "fn migrate_output_inc : int -> Counted = tb.counted\n"


def _edited(text: str, edit: str) -> str:
    head, main = text.rsplit("pipeline main : int -> int = ", 1)
    body = main.rstrip().removesuffix(";")
    match edit:
        case "lines moved":
            return head + "# moved down\n\n\npipeline main : int -> int = " + main
        case "step added after":
            return head + f"pipeline main : int -> int = ({body}) >>= note;\n"
        case "step added before":
            return head + f"pipeline main : int -> int = note >>= ({body});\n"
        case "inc first":
            return head + f"pipeline main : int -> int = inc >>= ({body});\n"
        case "par branch added":
            return head + f"pipeline main : int -> int = par <({body}), note> >>= add_pair;\n"
        case "output type changed" | "output type changed with a migration":
            declared = RETYPED_INC + (INC_MIGRATION if edit.endswith("migration") else "")
            header, rest = text.split("step inc : int -> int = tb.inc\n", 1)
            uses = "".join(line if line.startswith("toolbox") else re.sub(r"\binc\b", "(inc >>= counted_value)", line)
                           for line in rest.splitlines(keepends=True))
            return header.replace("import TState,", "import Counted, TState,") + declared + uses
    raise AssertionError(edit)


def _version(text: str) -> InterpretedVersion | None:
    source = SourceFile(f"upgrade_{next(_counter)}.mce", text)
    result = check_source(source, index=shared_index(source.path))
    return InterpretedVersion(result.program) if result.ok and result.program is not None else None


def _observed(coro: Any) -> tuple[Any, ...]:
    try:
        outcome = asyncio.run(coro)
    except Defect as defect:
        return ("defect", type(defect.cause).__name__, defect.state)
    if isinstance(outcome, Ok):
        return ("ok", outcome.value, outcome.state)
    assert isinstance(outcome, Err)
    return ("err", type(outcome.error).__name__, outcome.state)


def _run(version: InterpretedVersion, value: int, records: list[Record]) -> tuple[tuple[Any, ...], list[Record]]:
    store = MemoryStore()
    journal = DurableJournal(store, version.type_table(), {str(r["key"]): r for r in records})
    state, start = version.prepare("main", json.dumps(value), None)[1], version.prepare("main", json.dumps(value), None)[0]

    async def go() -> Any:
        with hooks(journal=journal):
            return await version.pipeline("main")(state, start)

    return _observed(go()), [*records, *store.records]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_a_moved_run_ends_as_a_fresh_run_of_the_new_version(data: st.DataObject) -> None:
    text = data.draw(specs(max_depth=2))
    edit = data.draw(st.sampled_from(EDITS))
    value = data.draw(st.integers(-5, 12))
    if edit.startswith("output type changed"):  # both versions run `inc` first: most runs have passed it
        text = _edited(text, "inc first")
    old, new = _version(text), _version(_edited(text, edit))
    assume(old is not None and new is not None)
    assert old is not None and new is not None
    with fake_retry_clock():
        _, records = _run(old, value, [])
        stopped = records[: data.draw(st.integers(min(1, len(records)), len(records)))]  # the run stopped (killed) after these
        request = RunRequest(run_id="p", pipeline="main", input=json.dumps(value), digest="old", spec="old.mce")
        moving = prepared(request, stopped, migrations(new.program))
        assert not isinstance(moving, str), moving  # the toolbox's migration takes every int
        request, stopped = moving
        verdict = classify(new, request, stopped)
        passed_inc = any(r.get("step") == "inc" and "ok" in r["result"] for r in stopped)
        event(f"{edit}, {'some' if stopped else 'no'} records{', inc among them' if passed_inc else ''}: "
              f"{type(verdict).__name__}")
        if edit == "output type changed" and passed_inc:
            assert isinstance(verdict, Stays), verdict  # its recorded int is no Counted
        if edit == "output type changed with a migration":  # no identity changed: its migrated records fit
            assert isinstance(verdict, Moves), verdict
        if edit == "lines moved":
            assert isinstance(verdict, Moves), verdict
        if edit == "par branch added" and stopped:  # every identity of the run is now inside the group
            assert isinstance(verdict, Stays), verdict
        if isinstance(verdict, Moves):
            resumed, _ = _run(new, value, stopped)
            fresh, _ = _run(new, value, [])
            assert resumed == fresh
