"""agentmonad.human: an ``ask`` step's runtime half, through a hand-built ``lift_step`` program.

The question reaches the run's handler with its site, name, element index, payload, answer
type, schema and prompt; no handler is ``NoOneToAsk``; a bad answer from a scripted (not
interactive) handler is ``BadAnswer``; a passed deadline is ``NoAnswer``; the terminal handler
asks again until the answer validates; the effect goes through the seam as kind ``"human"``.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from agentmonad import AgentMonad, lift_step
from agentmonad.context import hooks
from agentmonad.events import EffectEnded, EffectStarted, Event
from agentmonad.human import ERRORS, BadAnswer, ConsoleHuman, NoAnswer, NoOneToAsk, Question, ask
from agentmonad.outcome import Err, Ok, Outcome, Site
from agentmonad.testing import ScriptedHuman

SITE = Site("approve", "refund.mce", 7, 1)


class Refund(BaseModel):
    order: str
    amount: float


@dataclass(frozen=True)
class Approval:
    ok: bool
    note: str = ""


def asking(answer: Any, prompt: str | None = None, deadline: float | None = None) -> Any:
    """The Kleisli arrow of ``ask approve : Refund -> <answer>``, as generated code builds it."""

    async def impl(state: int, question: Refund) -> Outcome[int, Exception, Any]:
        return Ok(await ask(SITE, "approve", question, answer, prompt, deadline), state)

    return lift_step(impl, name="approve", errors=ERRORS, site=SITE, is_async=True, kind=None)


REFUND = Refund(order="A-1", amount=120.0)


def test_no_handler_is_no_one_to_ask_not_a_hang() -> None:
    outcome = asyncio.run(asyncio.wait_for(asking(bool)(REFUND).run(0), 5))
    assert outcome == Err(NoOneToAsk("approve"), 0, SITE)


def test_the_handler_gets_the_whole_question_and_its_answer_is_the_value() -> None:
    human = ScriptedHuman({"approve": {"ok": True, "note": "fine"}})
    with hooks(human=human):
        outcome = asyncio.run(asking(Approval, prompt="Refund A-1?")(REFUND).run(0))
    assert outcome == Ok(Approval(ok=True, note="fine"), 0)
    (question,) = human.asked
    assert isinstance(question, Question)
    assert (question.site, question.name, question.payload, question.prompt, question.index) == (
        SITE,
        "approve",
        REFUND,
        "Refund A-1?",
        (),
    )
    assert question.payload_json == {"order": "A-1", "amount": 120.0}
    assert question.schema["properties"]["ok"] == {"title": "Ok", "type": "boolean"}


def test_a_bad_answer_from_a_scripted_handler_is_bad_answer() -> None:
    with hooks(human=ScriptedHuman({"approve": "maybe"})):
        outcome = asyncio.run(asking(bool)(REFUND).run(0))
    assert isinstance(outcome, Err) and isinstance(outcome.error, BadAnswer)
    assert outcome.error.answer == "maybe" and "bool" in str(outcome.error)


def test_a_literal_answer_is_checked() -> None:
    choice = Literal["approve", "reject"]
    with hooks(human=ScriptedHuman({"approve": ["reject", "later"]})):
        first = asyncio.run(asking(choice)(REFUND).run(0))
        second = asyncio.run(asking(choice)(REFUND).run(0))
    assert first == Ok("reject", 0)
    assert isinstance(second, Err) and isinstance(second.error, BadAnswer)


def test_a_passed_deadline_is_no_answer() -> None:
    with hooks(human=ScriptedHuman({"approve": True}, delay=5)):
        outcome = asyncio.run(asking(bool, deadline=0.05)(REFUND).run(0))
    assert outcome == Err(NoAnswer("approve", "deadline", 0.05), 0, SITE)


def test_questions_in_each_carry_their_element_index() -> None:
    human = ScriptedHuman({"approve": lambda q: q.payload.amount < 100})
    refunds = [Refund(order="a", amount=50), Refund(order="b", amount=500)]
    with hooks(human=human):
        outcome = asyncio.run(AgentMonad.each(refunds, asking(bool)).run(0))
    assert outcome == Ok([True, False], 0)
    assert sorted((q.index, q.payload.order) for q in human.asked) == [((0,), "a"), ((1,), "b")]


class Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def test_the_ask_is_a_human_effect_through_the_seam() -> None:
    sink = Sink()
    with hooks(human=ScriptedHuman({"approve": True}), events=sink):
        asyncio.run(asking(bool)(REFUND).run(0))
    started = [e.effect for e in sink.events if isinstance(e, EffectStarted)]
    assert [(e.kind, e.site) for e in started] == [("human", SITE)]
    assert [e.outcome for e in sink.events if isinstance(e, EffectEnded)] == ["ok"]


def test_the_terminal_asks_again_until_the_answer_validates() -> None:
    answers = io.StringIO('{"ok": "perhaps"}\n{"ok": false, "note": "too much"}\n')
    shown = io.StringIO()
    with hooks(human=ConsoleHuman(answers, shown)):
        outcome = asyncio.run(asking(Approval, prompt="Refund 120 for A-1?")(REFUND).run(0))
    assert outcome == Ok(Approval(ok=False, note="too much"), 0)
    text = shown.getvalue()
    assert "? approve (refund.mce:7)" in text and "Refund 120 for A-1?" in text
    assert '"ok"' in text  # the expected form: the schema
    assert text.count("not a valid answer") == 1


def test_the_terminal_takes_plain_text_for_a_str_and_ends_with_no_answer() -> None:
    with hooks(human=ConsoleHuman(io.StringIO("go ahead\n"), io.StringIO())):
        assert asyncio.run(asking(str)(REFUND).run(0)) == Ok("go ahead", 0)
    with hooks(human=ConsoleHuman(io.StringIO("yes please\n"), io.StringIO())):
        outcome = asyncio.run(asking(bool)(REFUND).run(0))
    assert outcome == Err(NoAnswer("approve", "closed", None), 0, SITE)
