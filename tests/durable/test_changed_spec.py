"""A run refused for a changed spec says what changed (docs/language.md §13 "Changing a spec";
issue 47 item 10): the declaration or template that differs, and the pipeline lines whose meaning
changed (new or different lines, lines using a changed declaration), not lines that only moved."""

from __future__ import annotations

import json
from pathlib import Path

from mcec.compiler import check_source
from mcec.durable.changes import declarations, describe_changes
from mcec.fingerprint import describe_change, fingerprint
from mcec.span import SourceFile
from tests.durable.processes import mcec

HEAD = """\
from tests.durable.askbox.impl import Refund, Approval, Desk
import tests.durable.askbox.impl as impl

state Desk

fn refunds     : str -> list[Refund] = impl.refunds
async step pay : Approval -> str     = impl.pay
ask approve : Refund -> Approval = file "approve.j2"
"""

SETTLE = """
pipeline settle : str -> list[str] ! NoOneToAsk | NoAnswer | BadAnswer | MergeConflict {
    refunds;
    each (approve >>= pay);
}
"""

#: Another implementation of the step ``pay``, beside the spec.
PAYMENTS = """\
from typing import Never

from agentmonad import Ok, Outcome
from tests.durable.askbox.impl import Approval, Desk


async def pay(state: Desk, approval: Approval) -> Outcome[Desk, Never, str]:
    return Ok("paid by card", state)
"""

HELP = ("  = help: pass --allow-changed-spec to resume it anyway (recorded values are still checked against "
        "today's types)\n")


def test_a_refused_resume_names_the_changed_template_and_the_lines_it_changes(tmp_path: Path) -> None:
    effects, db = tmp_path / "effects.txt", "runs.sqlite"
    spec = tmp_path / "desk.mce"
    spec.write_text(HEAD + SETTLE, encoding="utf-8")
    (tmp_path / "approve.j2").write_text("Refund {{ amount }} for {{ order }}?", encoding="utf-8")
    started = mcec(["run", str(spec), "settle", "--input", '"A-1:120"', "--durable", "--run-id", "r1", "--db", db],
                   tmp_path, effects)
    assert json.loads(started.stdout)["status"] == "waiting", started.stderr
    # the prompt changed: the ask's template, and the line that asks with it
    (tmp_path / "approve.j2").write_text("Pay back {{ amount }} for {{ order }}?", encoding="utf-8")
    refused = mcec(["runs", "resume", "r1", "--db", db], tmp_path, effects)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == ("mcec runs resume: run r1 cannot resume: the spec desk.mce changed\n"
                              "  ask approve: its template approve.j2 changed\n"
                              "  desk.mce:12 (pipeline settle): uses approve, which changed\n" + HELP)
    # a comment and a blank line moved the pipeline down, and its `each` got a limit: only that line is named
    spec.write_text(HEAD + "\n# settled nightly\n" + SETTLE.replace("each (", "each(limit=2) ("), encoding="utf-8")
    refused = mcec(["runs", "answer", "r1", "approve", "--value", '{"ok": true}', "--db", db], tmp_path, effects)
    assert refused.returncode == 2
    assert refused.stderr == ("mcec runs answer: run r1 cannot resume: the spec desk.mce changed\n"
                              "  ask approve: its template approve.j2 changed\n"
                              "  pipeline settle: changed\n"
                              "  desk.mce:14 (pipeline settle): reads differently\n" + HELP)
    # a step's implementation changed and a step is new: the declarations, and the line using the changed one
    (tmp_path / "payments.py").write_text(PAYMENTS, encoding="utf-8")
    spec.write_text("import payments\n" + HEAD.replace("impl.pay", "payments.pay")
                    + "async step paid : Approval -> str = impl.pay\n" + SETTLE, encoding="utf-8")
    (tmp_path / "approve.j2").write_text("Refund {{ amount }} for {{ order }}?", encoding="utf-8")
    refused = mcec(["runs", "resume", "r1", "--db", db], tmp_path, effects)
    assert refused.stderr == ("mcec runs resume: run r1 cannot resume: the spec desk.mce changed\n"
                              "  import payments: added\n"
                              "  step paid: added\n"
                              "  step pay: changed\n"
                              "  desk.mce:14 (pipeline settle): uses pay, which changed\n" + HELP), refused.stderr


def test_a_run_recorded_without_declarations_gets_the_spec_level_message(tmp_path: Path) -> None:
    (tmp_path / "approve.j2").write_text("Refund?", encoding="utf-8")
    before, after = (check_source(SourceFile(str(tmp_path / "desk.mce"), HEAD + body)).program
                     for body in (SETTLE, SETTLE.replace("each (", "each(limit=2) (")))
    assert before is not None and after is not None
    old, new = fingerprint(before), fingerprint(after)
    assert describe_changes({}, old, new, after) == describe_change(old, new) == "the spec desk.mce changed"
    assert describe_changes({"declarations": declarations(before)}, old, new, after).splitlines()[1:] == [
        "  pipeline settle: changed", "  desk.mce:12 (pipeline settle): reads differently"
    ]
