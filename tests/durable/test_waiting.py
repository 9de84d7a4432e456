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
from agentmonad.durable.journal import OpenQuestion
from agentmonad.human import ERRORS, Question, ask
from agentmonad.outcome import Ok, Outcome, Site

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
    journal = DurableJournal(store, TypeTable({}, {}), {str(r["key"]): r for r in records}, answers or {})

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
