"""``mcec eval``'s dataset and command line: a bad case is an error at its line of the dataset (golden
files, one line a problem, exit 1, no traceback), a bad option a one-line usage error (exit 2); and
the pass@k / pass^k estimators (mcec/eval/scores.py) on known values."""

from __future__ import annotations

import os
import subprocess
import sys
from math import comb
from pathlib import Path
from typing import Callable

import pytest

from mcec.eval.scores import pass_at_k, pass_hat_k

ROOT = Path(__file__).resolve().parent.parent.parent
CASES = Path(__file__).resolve().parent / "cases"
SPEC = "examples/support/reply.mce"


def _mcec(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["NO_COLOR"] = "1"
    return subprocess.run([sys.executable, "-m", "mcec", "eval", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("dataset", ["bad_tickets.jsonl", "bad_tickets.yaml", "broken.yaml"])
def test_bad_cases_are_errors_at_their_lines(dataset: str, tmp_path: Path, golden: Callable[[Path, str], None]) -> None:
    done = _mcec(SPEC, "respond", f"tests/eval/cases/{dataset}", "--model", "writer=test", "--out", str(tmp_path))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Traceback" not in done.stderr and "internal compiler error" not in done.stderr
    assert all(line.startswith(f"tests/eval/cases/{dataset}:") for line in done.stderr.splitlines())
    golden(CASES / f"{dataset}.stderr", done.stderr)
    assert not (tmp_path / "results.sqlite").exists()  # nothing ran


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--model", "writr=test"], "mcec eval: --model writr=test: neither the spec nor a judge declares a model `writr` (they declare writer)"),
        (["--judge", "examples/support/reply.mce:respond"],
         "mcec eval: --judge examples/support/reply.mce:respond: its input type `Ticket` has the field(s) `id`, `customer`, "
         "`amount`, `reason`; a judge is shown `input`, `output`, `expected`, `metadata`"),
        (["--judge", "examples/support/judge.mce:juge"],
         "mcec eval: --judge examples/support/judge.mce:juge: examples/support/judge.mce has no pipeline `juge` (pipelines: judge)"),
        (["--evaluator", "examples.support.replies:nothing"],
         "mcec eval: --evaluator examples.support.replies:nothing: AttributeError: module 'examples.support.replies' has no attribute 'nothing'"),
        (["--price", "writer=cheap"], "mcec eval: --price writer=cheap: expected NAME=PROMPT/COMPLETION, USD per million tokens"),
        (["--baseline", "examples/support/tickets.jsonl"], "mcec eval: examples/support/tickets.jsonl is not a report of mcec eval"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2(options: list[str], message: str, tmp_path: Path) -> None:
    done = _mcec(SPEC, "respond", "examples/support/tickets.jsonl", "--model", "writer=test", *options, "--out", str(tmp_path))
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(message), line


def test_a_missing_dataset_is_a_usage_error() -> None:
    done = _mcec(SPEC, "respond", "tests/eval/cases/nothing.jsonl")
    assert done.returncode == 2
    assert done.stderr == "mcec eval: cannot read tests/eval/cases/nothing.jsonl: No such file or directory\n"


def _brute(n: int, c: int, k: int, everyone: Callable[[tuple[bool, ...]], bool]) -> float:
    """The share of the k-subsets of n runs (c of them passed) for which ``everyone`` holds."""
    from itertools import combinations

    runs = [True] * c + [False] * (n - c)
    subsets = list(combinations(runs, k))
    return sum(everyone(s) for s in subsets) / len(subsets)


@pytest.mark.parametrize(("n", "c", "k"), [(1, 0, 1), (1, 1, 1), (3, 1, 1), (3, 2, 3), (5, 2, 2), (10, 3, 4), (6, 6, 6)])
def test_pass_at_k_and_pass_hat_k_are_the_shares_of_k_subsets(n: int, c: int, k: int) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(_brute(n, c, k, any))
    assert pass_hat_k(n, c, k) == pytest.approx(_brute(n, c, k, all))
    assert pass_hat_k(n, c, k) == pytest.approx(comb(c, k) / comb(n, k))


def test_pass_at_k_with_k_1_is_the_pass_rate() -> None:
    assert pass_at_k(5, 2, 1) == pass_hat_k(5, 2, 1) == pytest.approx(0.4)
    assert (pass_at_k(5, 2, 2), pass_hat_k(5, 2, 2)) == (pytest.approx(0.7), pytest.approx(0.1))
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)




def test_a_yaml_dataset_in_pydantic_evals_form_loads_as_the_jsonl_one(tmp_path: Path) -> None:
    import json

    import yaml

    from examples.support.desk import Ticket
    from examples.support.replies import Answer
    from mcec.eval.dataset import load_dataset

    jsonl = ROOT / "examples" / "support" / "tickets.jsonl"
    cases = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    as_yaml = tmp_path / "tickets.yaml"
    as_yaml.write_text(yaml.safe_dump({"name": "tickets", "cases": cases}, sort_keys=False), encoding="utf-8")
    from_jsonl = load_dataset(jsonl, Ticket, Answer)
    from_yaml = load_dataset(as_yaml, Ticket, Answer)
    assert [(c.case.name, c.case.inputs, c.case.expected_output, c.case.metadata, c.digest) for c in from_yaml] == [
        (c.case.name, c.case.inputs, c.case.expected_output, c.case.metadata, c.digest) for c in from_jsonl
    ]
    assert [c.line for c in from_jsonl] == list(range(1, 21))
    assert isinstance(from_yaml[0].case.inputs, Ticket) and isinstance(from_yaml[0].case.expected_output, Answer)


def test_a_failed_pipeline_and_a_failed_judge_are_failed_runs_with_their_errors(tmp_path: Path) -> None:
    """The writer refuses the first ticket (the run is the pipeline's error, the judge is not asked);
    the judge refuses to grade the second (an evaluator failure): neither run passes, the eval
    itself succeeds."""
    import json

    lines = (ROOT / "examples" / "support" / "tickets.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    (tmp_path / "two.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "writer.json").write_text(json.dumps([
        {"refusal": "no"},  # a refusal is LLMFailed at once, without repairs
        {"text": json.dumps({"decision": "escalate", "reply": "Dear Bo, thank you: ticket T-1002."})},
    ]), encoding="utf-8")
    (tmp_path / "grader.json").write_text(json.dumps([{"refusal": "I do not grade."}]), encoding="utf-8")
    done = _mcec(SPEC, "respond", str(tmp_path / "two.jsonl"), "--concurrency", "1",
                 "--evaluator", "examples.support.replies:decision_matches", "--judge", "examples/support/judge.mce:judge",
                 "--model", f"writer=script:{tmp_path / 'writer.json'}", "--model", f"grader=script:{tmp_path / 'grader.json'}",
                 "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text(encoding="utf-8"))
    first, second = (case["runs"][0] for case in report["cases"])
    assert not first["passed"] and first["error"].startswith("PipelineFailed: LLMFailed")
    assert first["assertions"] == {} and first["output"] is None
    assert not second["passed"] and second["error"] is None
    assert second["assertions"] == {"decision_matches": True}
    [failure] = second["evaluator_failures"]
    assert failure.startswith("judge: JudgeFailed: LLMFailed")
    assert report["summary"]["passed_runs"] == 0


def test_a_json_document_is_read_with_its_positions(tmp_path: Path) -> None:
    import json

    from examples.support.desk import Ticket
    from examples.support.replies import Answer
    from mcec.eval.dataset import DatasetError, load_dataset

    cases = [{"name": "T-1", "inputs": {"id": "T-1", "customer": "Ana", "amount": 40, "reason": "late"}},
             {"name": "T-2", "inputs": {"id": "T-2", "customer": "Bo", "amount": "lots", "reason": "late"}}]
    dataset = tmp_path / "tickets.json"
    dataset.write_text(json.dumps({"cases": cases}, indent=2), encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        load_dataset(dataset, Ticket, Answer)
    [problem] = raised.value.problems
    line = dataset.read_text(encoding="utf-8").splitlines()[problem.line - 1]
    assert line[problem.column - 1 :].startswith('"lots"')
    assert problem.message == "case `T-2`: inputs.amount: Input should be a valid number, unable to parse string as a number"
