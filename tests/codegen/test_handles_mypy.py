"""Typed handles are typed (docs/language.md §13 "Typed handles", issue 43 item 3): ``mypy
--strict`` on small user programs that drive runs of examples/support's compiled module accepts
the right one (which then runs, against a real SQLite run database) and rejects each wrong one
with the expected error code — an answer of the wrong type, an ask that does not exist, an
Outcome's value used as the wrong type, an input of the wrong type, a pipeline that does not exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcec.cli import main as mcec_main

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "support" / "support.mce"

RIGHT = '''\
"""Starts a run of `handle`, answers its question, prints its output: everything typed."""
import asyncio
import sys

from agentmonad.handles import Finished, Question
from examples.support.desk import Approval, Ticket
from support_mce import Runs


async def main(db: str) -> str:
    handle = await Runs.handle.start(Ticket(id="T2", customer="bo", amount=250, reason="broken"), db=db)
    question: Question[Ticket, Approval] = await handle.question(handle.asks.approve)
    amount: float = question.payload.amount
    await question.answer(Approval(approve=amount < 1000, note="ok"))
    match await handle.result():
        case Finished(value=text):
            said: str = text  # the output typed as the pipeline's
            return text
        case other:
            return f"not finished: {other}"


print(asyncio.run(main(sys.argv[1])))
'''

#: Each wrong program: the line that replaces a line of RIGHT, and the error code mypy reports.
WRONG = {
    "wrong_answer": ('    await question.answer(Approval(approve=amount < 1000, note="ok"))',
                     '    await question.answer("yes")', "arg-type"),
    "wrong_ask": ("    question: Question[Ticket, Approval] = await handle.question(handle.asks.approve)",
                  "    question: Question[Ticket, Approval] = await handle.question(handle.asks.nope)", "attr-defined"),
    "wrong_outcome": ("            said: str = text  # the output typed as the pipeline's",
                      "            said: int = text", "assignment"),
    "wrong_input": ('    handle = await Runs.handle.start(Ticket(id="T2", customer="bo", amount=250, reason="broken"), db=db)',
                    '    handle = await Runs.handle.start(Approval(approve=True), db=db)', "arg-type"),
    "wrong_pipeline": ('    handle = await Runs.handle.start(Ticket(id="T2", customer="bo", amount=250, reason="broken"), db=db)',
                       '    handle = await Runs.refund.start(Ticket(id="T2", customer="bo", amount=250, reason="broken"), '
                       'db=db)', "attr-defined"),
}


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the compiled support module and the user programs beside it."""
    folder = tmp_path_factory.mktemp("handles_mypy")
    assert mcec_main(["compile", str(SPEC), "-o", str(folder), "--no-mypy", "-q"]) == 0
    (folder / "right.py").write_text(RIGHT, encoding="utf-8")
    for name, (line, wrong, _) in WRONG.items():
        assert RIGHT.count(line + "\n") == 1, name
        (folder / f"{name}.py").write_text(RIGHT.replace(line + "\n", wrong + "\n"), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def findings(programs: Path) -> dict[str, list[str]]:
    """mypy --strict's findings on every program (one run), by file: ``"line: error: … [code]"``."""
    files = ["support_mce.py", "right.py", *(f"{name}.py" for name in WRONG)]
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--show-error-codes", "--no-error-summary",
                           "--no-color-output", *files], cwd=programs, env=env, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: findings; 2: mypy itself failed
    found: dict[str, list[str]] = {name: [] for name in files}
    for line in done.stdout.splitlines():
        matched = re.match(r"^([\w.]+\.py):(\d+: (?:error|note): .*)$", line)
        assert matched is not None, line
        found.setdefault(matched[1], []).append(matched[2])
    return found


def test_mypy_accepts_the_generated_module_and_the_right_program(findings: dict[str, list[str]]) -> None:
    assert findings["support_mce.py"] == []
    assert findings["right.py"] == []


@pytest.mark.parametrize("name", sorted(WRONG))
def test_mypy_rejects_each_wrong_program_with_its_error_code(findings: dict[str, list[str]], name: str) -> None:
    errors = [f for f in findings[f"{name}.py"] if ": error: " in f]
    # the first error is the wrong line's (a handle of a pipeline that does not exist is Any after it)
    assert errors and errors[0].endswith(f"[{WRONG[name][2]}]"), findings[f"{name}.py"]


def test_the_right_program_runs(programs: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(programs), str(ROOT)]),
           "SUPPORT_LEDGER": str(tmp_path / "ledger.txt")}
    done = subprocess.run([sys.executable, str(programs / "right.py"), f"sqlite:///{tmp_path / 'runs.sqlite'}"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "T2: refunded 250.00\n"
    assert (tmp_path / "ledger.txt").read_text(encoding="utf-8") == "T2 paid 250.00 to bo\n"
