"""``ask`` declarations (docs/language.md §15) through every phase: syntax (soft words), fmt, the
checker (the error set, the template, MCE034), graph, the compiled module and the interpreter
asking the same questions and giving the same outcomes, and ``mcec run`` asking on the terminal."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmonad import BadAnswer, Err, NoAnswer, NoOneToAsk, Ok
from agentmonad.context import hooks
from agentmonad.human import Question
from agentmonad.testing import ScriptedHuman
from deskbox import Approval, Desk, Refund, Ticket
from mcec import syntax as s
from mcec.compiler import compile_source
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile
from mcec.tools.fmt import format_text
from mcec.tools.graph import build_graph, to_mermaid

TESTS = Path(__file__).resolve().parents[1]
SPEC = TESTS / "codegen" / "cases" / "ask.mce"
HEAD = "from deskbox import Desk, Refund, Approval, Ticket\nimport deskbox as db\nstate Desk\nfn settle : Approval -> str = db.settle\n"


def decls(text: str) -> list[s.Decl]:
    parsed = s.parse(SourceFile("t.mce", text))
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    return list(parsed.module.decls)


def check(text: str) -> list[str]:
    result = compile_source(SourceFile(str(TESTS / "t.mce"), HEAD + text))
    return [f"{d.code} {d.message}" for d in result.diagnostics]


# ---------------------------------------------------------------- syntax and fmt


def test_ask_declares_a_question_and_ask_and_within_stay_soft_words() -> None:
    full, bare, named = decls(
        'ask approve : Refund -> Approval = "Refund {{ amount }}?" within 3600\n'
        "ask ok : Refund -> bool\n"
        "fn within : Refund -> Refund = db.ask\n"
    )
    assert isinstance(full, s.AskDecl) and full.within == 3600 and full.template is not None
    assert full.template.text == "Refund {{ amount }}?"
    assert isinstance(bare, s.AskDecl) and bare.template is None and bare.within is None
    assert isinstance(named, s.FnDecl) and named.name.text == "within" and named.impl.parts[-1].text == "ask"


def test_fmt_keeps_an_ask_as_written() -> None:
    text = 'ask   approve : Refund ->Approval = file "q.j2"   within 0.5\nask ok : Refund -> bool\n'
    assert format_text(text) == 'ask approve : Refund -> Approval = file "q.j2" within 0.5\nask ok : Refund -> bool\n'


# ---------------------------------------------------------------- the checker


def test_an_asks_errors_are_in_its_pipelines_error_set() -> None:
    found = check("ask approve : Refund -> Approval\npipeline p : Refund -> str ! Never = approve >>= settle;\n")
    assert found == [f"MCE013 error `{e}` escapes pipeline `p`, which does not declare it" for e in ("BadAnswer", "NoAnswer", "NoOneToAsk")]
    assert check("ask approve : Refund -> Approval\npipeline p : Refund -> str ! NoOneToAsk | NoAnswer | BadAnswer = approve >>= settle;\n") == []


def test_the_template_is_checked_against_the_question_and_the_state() -> None:
    found = check('ask approve : Refund -> Approval = "{{ amonut }} {{ state.nme }}"\npipeline p : Refund -> str = approve >>= settle;\n')
    assert [m.split(" ")[0] for m in found] == ["MCE023", "MCE023"], found
    assert "amonut" in found[0] and "nme" in found[1]


def test_an_answer_no_person_can_give_is_mce034() -> None:
    found = check("ask approve : Refund -> bytes\npipeline p : Refund -> bytes = approve;\n")[1:]  # [0]: settle unused
    assert found == ["MCE034 `approve` cannot take an answer of type bytes: bytes cannot be carried in a person's JSON answer"]


def test_graph_draws_an_ask_as_its_own_shape() -> None:
    program, _ = _compiled()
    assert '[\\"approve<br/>Refund -#62; Approval ! ' in to_mermaid(build_graph(program, "refund"))


# ---------------------------------------------------------------- compiled and interpreted runs


def _compiled() -> tuple[Any, Any]:
    result = compile_source(SourceFile(SPEC.name, SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def _both(pipeline: str, value: Any, answers: dict[str, object]) -> dict[str, tuple[Any, list[tuple[Any, ...]]]]:
    """The outcome of ``pipeline`` compiled and interpreted, each with a fresh ScriptedHuman, and
    the questions each asked (name, element index, payload, prompt, site)."""
    program, module = _compiled()
    runs = {
        "compiled": lambda: getattr(module, pipeline)(Desk(), value),
        "interpreted": lambda: interpret(program, pipeline, Desk(), value),
    }
    seen = {}
    for how, run in runs.items():
        human = ScriptedHuman({k: list(v) if isinstance(v, list) else v for k, v in answers.items()})
        with hooks(human=human):
            outcome = asyncio.run(run())
        asked = sorted((q.name, q.index, q.payload, q.prompt, q.site) for q in human.asked)
        seen[how] = (outcome, asked)
    return seen


def test_a_refund_asked_compiled_and_interpreted_alike() -> None:
    seen = _both("refund", Refund(order="A-1", amount=120.0), {"approve": {"ok": False, "note": "too much"}})
    assert seen["compiled"] == seen["interpreted"]
    outcome, asked = seen["compiled"]
    assert outcome == Ok("refused: too much", Desk())
    ((name, index, payload, prompt, site),) = asked
    assert (name, index, payload, prompt) == ("approve", (), Refund(order="A-1", amount=120.0), "Refund 120.0 for order A-1? (desk north)")
    assert (site.file, site.line) == ("ask.mce", 9)


def test_each_element_is_asked_with_its_index_compiled_and_interpreted_alike() -> None:
    tickets = [Ticket("broken"), Ticket("spam")]
    seen = _both("triage_all", tickets, {"triage": lambda q: "refund" if q.payload.subject == "broken" else "drop"})
    assert seen["compiled"] == seen["interpreted"]
    outcome, asked = seen["compiled"]
    assert outcome == Ok(["[refund]", "[drop]"], Desk())
    assert [(a[1], a[3]) for a in asked] == [((0,), "Ticket: broken"), ((1,), "Ticket: spam")]


def test_a_bad_scripted_answer_is_bad_answer_and_retry_asks_again_compiled_and_interpreted_alike() -> None:
    seen = _both("confirm", "go?", {"sure": ["maybe", True]})
    assert seen["compiled"] == seen["interpreted"]
    assert seen["compiled"][0] == Ok("confirmed", Desk()) and len(seen["compiled"][1]) == 2
    failed = _both("confirm", "go?", {"sure": ["maybe", "perhaps"]})
    assert failed["compiled"] == failed["interpreted"]
    outcome = failed["compiled"][0]
    assert isinstance(outcome, Err) and isinstance(outcome.error, BadAnswer) and outcome.error.answer == "perhaps"


def test_with_no_one_to_ask_both_fail_with_no_one_to_ask() -> None:
    program, module = _compiled()
    ticket = Refund(order="A-1", amount=1.0)
    compiled = asyncio.run(module.refund(Desk(), ticket))
    interpreted = asyncio.run(interpret(program, "refund", Desk(), ticket))
    assert compiled == interpreted
    assert isinstance(compiled, Err) and compiled.error == NoOneToAsk("approve")


def test_a_deadline_is_no_answer_compiled_and_interpreted_alike() -> None:
    program, module = _compiled()
    for run in (lambda: module.confirm(Desk(), "go?"), lambda: interpret(program, "confirm", Desk(), "go?")):
        with hooks(human=ScriptedHuman({"sure": True}, delay=5)):
            outcome = asyncio.run(run())
        assert isinstance(outcome, Err) and outcome.error == NoAnswer("sure", "deadline", 0.5)


# ---------------------------------------------------------------- mcec run asks on the terminal


def _mcec_run(stdin: str | None, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run(
        [sys.executable, "-m", "mcec", "run", str(SPEC), "refund", "--input", '{"order": "A-1", "amount": 120}', *extra],
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=TESTS,
        timeout=120,
    )


@pytest.mark.parametrize("extra", [(), ("--interpret",)], ids=["compiled", "interpreted"])
def test_mcec_run_asks_on_the_terminal_until_the_answer_validates(extra: tuple[str, ...]) -> None:
    done = _mcec_run('{"ok": "perhaps"}\n{"ok": true}\n', *extra)
    assert done.returncode == 0, done.stderr
    assert '"value": "refunded"' in done.stdout
    assert "Refund 120.0 for order A-1? (desk north)" in done.stderr
    assert '"ok"' in done.stderr and done.stderr.count("not a valid answer") == 1


def test_mcec_run_with_nothing_to_read_is_no_answer_not_a_hang() -> None:
    done = _mcec_run(None)
    assert done.returncode == 1 and '"type": "NoAnswer"' in done.stdout, done.stdout + done.stderr


def test_a_file_template_is_read_at_check_time_and_embedded(tmp_path: Path) -> None:
    (tmp_path / "q.j2").write_text("Refund {{ amount }}?\n{% if amount > 100 %}A big one.{% endif %}", encoding="utf-8")
    spec = tmp_path / "desk.mce"
    spec.write_text(HEAD + 'ask approve : Refund -> Approval = file "q.j2"\npipeline p : Refund -> str = approve >>= settle;\n')
    result = compile_source(SourceFile(str(spec), spec.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    assert '"q.j2":' in result.generated.code  # its hash: the module says when the file changed
    module = load_module(result.program, result.generated)
    human = ScriptedHuman({"approve": {"ok": True}})
    with hooks(human=human):
        assert asyncio.run(module.p(Desk(), Refund(order="B", amount=150))) == Ok("refunded", Desk())
    assert human.asked[0].prompt == "Refund 150.0?\nA big one."
