"""Durable waiting for people, in process (docs/language.md §13, "Waiting for a person"): in a
durable run an ``ask`` with no recorded answer never calls a handler; the run stops with its
open questions (site, element index, the exact payload, the answer's schema); an answer given
for one question is recorded as that effect's result and replayed after; two questions open at
once (``each``) are answered independently, each bound to its key and payload; an answer that
does not validate against the answer type is refused with pydantic's errors and the question
stays open."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agentmonad import AgentMonad, lift_step
from agentmonad.context import hooks
from agentmonad.durable import DurableJournal, MemoryStore, Record, TypeTable
from agentmonad.durable.codec import SiteTypes
from agentmonad.durable.journal import OpenQuestion, iso_time
from agentmonad.human import ERRORS, NoAnswer, Question, ask
from agentmonad.outcome import Err, Ok, Outcome, Site

SITE = Site("approve", "refund.mce", 7, 1)


class Refund(BaseModel):
    order: str
    amount: float


@dataclass(frozen=True)
class Approval:
    ok: bool
    note: str = ""


def approve() -> Any:
    """``ask approve : Refund -> Approval``, as generated code builds it."""

    async def impl(state: int, question: Refund) -> Outcome[int, Exception, Approval]:
        return Ok(await ask(SITE, "approve", question, Approval, "Refund?", None), state)

    return lift_step(impl, name="approve", errors=ERRORS, site=SITE, is_async=True, kind=None)


class Refuser:
    """A handler a durable run must never call."""

    async def ask(self, question: Question[Any]) -> object:
        raise AssertionError(f"a durable run called the handler for {question.name}")


ORDERS = [Refund(order="A-1", amount=120.0), Refund(order="B-2", amount=80.0)]


def each_refund() -> Any:
    return AgentMonad.each(ORDERS, lambda refund: approve()(refund))


def _run(program: Any, records: list[Record], answers: dict[str, tuple[object, object]] | None = None
         ) -> tuple[Any, DurableJournal]:
    store = MemoryStore(records)
    journal = DurableJournal(store, TypeTable({}, {"note": SiteTypes(str, int, ())}), {str(r["key"]): r for r in records},
                             answers or {})

    async def main() -> Any:
        with hooks(journal=journal, human=Refuser()):
            return await journal.until_waiting(program.run(0))

    return asyncio.run(asyncio.wait_for(main(), 10)), journal


def test_an_unanswered_question_stops_the_run_with_the_question_and_never_asks_a_handler() -> None:
    records: list[Record] = []
    ended, _ = _run(approve()(ORDERS[0]), records)
    assert ended == [
        OpenQuestion("0", "approve", str(SITE), (), {"order": "A-1", "amount": 120.0},
                     Question(SITE, "approve", ORDERS[0], Approval, None).schema, "Refund?")
    ]
    assert records == []  # nothing recorded for an open question: the store keeps the waiting record


def test_an_answer_is_recorded_as_the_effects_result_and_replayed_after() -> None:
    records: list[Record] = []
    _run(approve()(ORDERS[0]), records)
    payload = {"order": "A-1", "amount": 120.0}
    outcome, journal = _run(approve()(ORDERS[0]), records, {"0": (payload, {"ok": True, "note": "fine"})})
    assert outcome == Ok(Approval(True, "fine"), 0)
    assert [(r["key"], r["kind"], r["result"]) for r in records] == [("0", "human", {"value": {"ok": True, "note": "fine"}})]
    again, journal = _run(approve()(ORDERS[0]), records)  # no answer given now: the recorded one
    assert again == Ok(Approval(True, "fine"), 0) and journal.replayed == 1


def test_two_questions_open_at_once_are_answered_independently() -> None:
    records: list[Record] = []
    ended, _ = _run(each_refund(), records)
    assert sorted((q.key, q.index, q.payload["order"]) for q in ended) == [("0.0/0", (0,), "A-1"), ("0.1/0", (1,), "B-2")]
    second = {"order": "B-2", "amount": 80.0}
    ended, _ = _run(each_refund(), records, {"0.1/0": (second, {"ok": False})})
    assert [(q.key, q.payload["order"]) for q in ended] == [("0.0/0", "A-1")]  # the other one still open
    first = {"order": "A-1", "amount": 120.0}
    outcome, journal = _run(each_refund(), records, {"0.0/0": (first, {"ok": True})})
    assert outcome == Ok([Approval(True), Approval(False)], 0)
    assert journal.replayed == 1 and journal.performed == 1


def test_an_answer_to_another_payload_does_not_answer_the_question() -> None:
    records: list[Record] = []
    _run(approve()(ORDERS[0]), records)
    ended, _ = _run(approve()(ORDERS[0]), records, {"0": ({"order": "A-1", "amount": 999.0}, {"ok": True})})
    assert [q.key for q in ended] == ["0"] and records == []


def test_a_bad_answer_is_refused_with_pydantics_errors_and_the_question_stays_open() -> None:
    records: list[Record] = []
    payload = {"order": "A-1", "amount": 120.0}
    ended, journal = _run(approve()(ORDERS[0]), records, {"0": (payload, {"ok": "perhaps"})})
    assert [q.key for q in ended] == ["0"] and records == []
    assert journal.refused == {"0": ["ok: Input should be a valid boolean, unable to interpret input"]}


NOTE = Site("note", "refund.mce", 9, 1)


def note() -> Any:
    """An async step (an effect) that notes its input."""

    async def impl(state: int, text: str) -> Outcome[int, Exception, str]:
        return Ok(f"noted {text}", state)

    return lift_step(impl, name="note", errors=(), site=NOTE, is_async=True)


def test_a_sibling_doing_long_pure_work_between_effects_does_not_make_the_run_wait() -> None:
    # one branch parks on its question; the other runs 300 pure elements one at a time (each a
    # task: many turns of the loop with no effect starting or ending), then an effect: the run
    # waits only once that effect is recorded (a rule by loop turns stopped it before)
    pure_work = AgentMonad.each(list(range(300)), lambda i: AgentMonad.pure(i), limit=1)
    program = AgentMonad.par([approve()(ORDERS[0]), pure_work.then(lambda done: note()(f"{len(done)} done"))])
    records: list[Record] = []
    ended, journal = _run(program, records)
    assert [q.key for q in ended] == ["0.0/0"]
    assert [(r["key"], r["step"]) for r in records] == [("0.1/1", "note")]  # the sibling's effect ran


def test_a_question_cancelled_with_its_branch_is_not_open() -> None:
    # the sibling fails: the group cancels the parked branch; the run ends with the error, not waiting
    failing = AgentMonad.each(list(range(100)), lambda i: AgentMonad.pure(i), limit=1).then(
        lambda _: AgentMonad.fail(ValueError("no")))
    ended, journal = _run(AgentMonad.par([approve()(ORDERS[0]), failing]), [])
    assert not isinstance(ended, list) and journal.open == []


def test_an_expired_question_records_no_answer_and_the_run_goes_on() -> None:
    # the run first asked 10 s ago (its waiting record says so); the ask is `within 5`
    within = 5.0

    def asking() -> Any:
        async def impl(state: int, question: Refund) -> Outcome[int, Exception, Approval]:
            return Ok(await ask(SITE, "approve", question, Approval, "Refund?", within), state)

        return lift_step(impl, name="approve", errors=ERRORS, site=SITE, is_async=True, kind=None)

    records: list[Record] = []
    first, _ = _run(asking()(ORDERS[0]), records)
    [question] = first
    assert question.within == within and question.deadline == question.asked + within
    waited = {"key": "waiting:1", "kind": "waiting", "questions": [question.as_json() | {"asked": iso_time(question.asked - 10)}]}
    records.append(waited)
    outcome, journal = _run(asking()(ORDERS[0]), records)
    assert isinstance(outcome, Err) and isinstance(outcome.error, NoAnswer)
    assert (outcome.error.reason, outcome.error.seconds) == ("deadline", within)
    assert [(r["key"], r["result"]["raised"]["type"]) for r in records if r.get("kind") == "human"] == [
        ("0", "agentmonad.human.NoAnswer")]
    again, journal = _run(asking()(ORDERS[0]), records)  # replayed from its record, whatever the clock says
    assert isinstance(again, Err) and isinstance(again.error, NoAnswer) and journal.replayed == 1
    # not yet expired (asked just now): it waits, its deadline counted from its first asking
    kept = OpenQuestion.from_json(question.as_json())
    still, _ = _run(asking()(ORDERS[0]), [{**waited, "questions": [kept.as_json()]}])
    assert [q.asked for q in still] == [kept.asked]


def test_a_run_leaves_the_loops_task_factory_alone() -> None:
    # the journal learns which branches are live from the group (agentmonad.context.Branches), so
    # a loop's own task factory (an application's, an instrumentation's) stays in place while a
    # run waits: every task of the run is made by it, and it is the one the run's steps see
    seen: list[object] = []
    made: list[str] = []

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(getattr(coro, "__qualname__", "?"))
        return asyncio.Task(coro, loop=loop, **kwargs)

    def noting() -> Any:
        async def impl(state: int, text: str) -> Outcome[int, Exception, str]:
            seen.append(asyncio.get_running_loop().get_task_factory())
            return Ok(text, state)

        return lift_step(impl, name="note", errors=(), site=NOTE, is_async=True)

    program = AgentMonad.par([approve()(ORDERS[0]), noting()("x"), approve()(ORDERS[1])])
    store = MemoryStore([])
    journal = DurableJournal(store, TypeTable({}, {"note": SiteTypes(str, int, ())}), {}, {})

    async def main() -> Any:
        asyncio.get_running_loop().set_task_factory(factory)
        with hooks(journal=journal, human=Refuser()):
            ended = await journal.until_waiting(program.run(0))
        return ended, asyncio.get_running_loop().get_task_factory()

    ended, after = asyncio.run(asyncio.wait_for(main(), 10))
    assert [q.key for q in ended] == ["0.0/0", "0.2/0"]
    assert seen == [factory] and after is factory
    assert len(made) >= 3  # the group's branches were made by it


def test_the_question_travels_on_the_human_effect() -> None:
    # what a journal parks on and a sink shows is the effect's own question, not found in its call
    from agentmonad.events import EffectStarted, Event

    seen: list[Event] = []

    class Sink:
        def emit(self, event: Event) -> None:
            seen.append(event)

    class Yes:
        async def ask(self, question: Question[Any]) -> object:
            return {"ok": True}

    async def main() -> Any:
        with hooks(events=Sink(), human=Yes()):
            return await approve()(ORDERS[1]).run(0)

    outcome = asyncio.run(main())
    assert outcome == Ok(Approval(ok=True), 0)
    [started] = [e for e in seen if isinstance(e, EffectStarted) and e.effect.kind == "human"]
    assert started.effect.question is not None
    assert (started.effect.question.name, started.effect.question.payload) == ("approve", ORDERS[1])
