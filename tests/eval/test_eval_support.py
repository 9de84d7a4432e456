"""examples/support's eval, as the README shows it (issue 45, items 2 and 3): ``mcec eval`` run as a
real subprocess, offline, with the example's scripted writer and scripted judge.

The scripted writer (examples/support/writer.py) has known flaws: it never declines (T-1006 and
T-1015 expect a decline), it greets a shouting customer as "customer" (T-1005: not grounded, the
judge says), and near the threshold it wavers — its first, third, … answer about a ticket in a
process is "refund", its second "escalate" — so T-1007 (100, expects refund) passes 2 of 3 runs and
T-1008 (100.5, expects escalate) 1 of 3, its first run failing. Hence the known scores: 16 of 20
pass once; with ``--repeat 3`` 48 of 60 runs pass, pass@3 = 17/20, pass^3 = 15/20.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
BASELINE = ROOT / "examples" / "support" / "baseline.json"
TICKETS = [f"T-{n}" for n in range(1001, 1021)]
#: The cases that fail their one run, and why.
FAILING = {"T-1005": "grounded", "T-1006": "decision_matches", "T-1008": "decision_matches", "T-1015": "decision_matches"}
#: Runs passed of 3, where not 3.
OF_THREE = {"T-1005": 0, "T-1006": 0, "T-1015": 0, "T-1007": 2, "T-1008": 1}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _readme_eval() -> list[str]:
    """The ``mcec eval`` command of the README's eval section, as written, minus ``--out``."""
    section = README.read_text(encoding="utf-8").split("## Evaluating an agent", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None, "the README's eval section lost its command"
    line = next(ln for ln in block.group(1).replace("\\\n", " ").splitlines() if " mcec eval " in ln)
    argv = shlex.split(line)
    assert argv[:4] == ["python3", "-m", "mcec", "eval"], line
    out = argv.index("--out")
    return [sys.executable, *argv[1:out], *argv[out + 2 :]]


def _without(argv: list[str], option: str) -> list[str]:
    """``argv`` without ``option VALUE``."""
    at = argv.index(option)
    return argv[:at] + argv[at + 2 :]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SUPPORT_"))}
    env.update(NO_COLOR="1", SUPPORT_MODEL_LOG=str(tmp_path / "requests.log"), **extra)
    return env


def _eval(tmp_path: Path, argv: list[str], out: str = "report", **extra: str) -> tuple[subprocess.CompletedProcess[str], Any]:
    done = subprocess.run([*argv, "--out", str(tmp_path / out)], cwd=ROOT, env=_env(tmp_path, **extra),
                          capture_output=True, text=True, timeout=600)
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads((tmp_path / out / "report.json").read_text(encoding="utf-8"))
    return done, report


def _requests(tmp_path: Path) -> list[tuple[str, str]]:
    path = tmp_path / "requests.log"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return [(line.split()[0], line.split()[1]) for line in text.splitlines() if line.strip()]


def _failing(report: Any) -> dict[str, list[str]]:
    """Each failing case, and the assertions that did not hold in its runs."""
    return {
        case["name"]: sorted({name for run in case["runs"] for name, held in run["assertions"].items() if not held})
        for case in report["cases"] if case["passed"] < len(case["runs"])
    }


def test_the_support_eval_gives_the_known_scores_and_matches_its_baseline(tmp_path: Path) -> None:
    done, report = _eval(tmp_path, _readme_eval())
    assert done.returncode == 0, done.stderr
    summary = report["summary"]
    assert (summary["cases"], summary["runs"], summary["passed_runs"], summary["pass_rate"]) == (20, 20, 16, 0.8)
    assert summary["assertions"] == {"decision_matches": 0.85, "grounded": 0.95}
    assert summary["labels"] == {"tone": {"warm": 0.95, "curt": 0.05}}
    assert {name: why for name, [why] in _failing(report).items()} == FAILING
    [t1005] = [c for c in report["cases"] if c["name"] == "T-1005"]
    assert t1005["runs"][0]["reasons"]["grounded"] == "lacks the customer's name"
    assert t1005["runs"][0]["labels"] == {"tone": "curt"}
    # every case asked the writer once and the judge once; tokens and cost are counted
    assert Counter(model for model, _ in _requests(tmp_path)) == {"writer": 20, "judge": 20}
    runs = [run for case in report["cases"] for run in case["runs"]]
    assert all(run["tokens"] > 0 and run["requests"] == 1 and run["judge_tokens"] > 0 for run in runs)
    assert summary["tokens"] == sum(run["tokens"] for run in runs)
    assert summary["cost"] is not None and summary["cost"] > 0 and summary["judge_cost"] > 0
    # the committed baseline is this report (what the README's --baseline compares with)
    baseline = json.loads(BASELINE.read_text(encoding="utf-8"))
    assert summary["worse"] == [] and summary["baseline"] == "examples/support/baseline.json"
    assert [(c["name"], c["passed"], [r["output"] for r in c["runs"]]) for c in report["cases"]] == [
        (c["name"], c["passed"], [r["output"] for r in c["runs"]]) for c in baseline["cases"]
    ]
    assert report["fingerprint"] == baseline["fingerprint"]
    # the table on stdout: a row a case, then the aggregate
    assert all(name in done.stdout for name in TICKETS)
    assert "pass rate 80.0% (16/20 runs of 20 cases)" in done.stdout
    assert "worse than the baseline examples/support/baseline.json: none" in done.stdout


def test_repeat_3_gives_the_known_pass_at_3_and_pass_hat_3(tmp_path: Path) -> None:
    done, report = _eval(tmp_path, [*_without(_readme_eval(), "--baseline"), "--repeat", "3"])
    assert done.returncode == 0, done.stderr
    summary = report["summary"]
    assert (summary["runs"], summary["passed_runs"], summary["repeat"]) == (60, 48, 3)
    assert summary["pass_rate"] == pytest.approx(0.8)
    assert summary["pass_at_k"] == pytest.approx(17 / 20)
    assert summary["pass_hat_k"] == pytest.approx(15 / 20)
    assert {c["name"]: c["passed"] for c in report["cases"]} == {name: OF_THREE.get(name, 3) for name in TICKETS}
    [t1007] = [c for c in report["cases"] if c["name"] == "T-1007"]
    assert (t1007["pass_at_k"], t1007["pass_hat_k"]) == (1.0, 0.0)
    assert "pass@3 85.0%, pass^3 75.0%" in done.stdout
    assert Counter(model for model, _ in _requests(tmp_path)) == {"writer": 60, "judge": 60}


def test_the_baseline_flags_the_one_case_made_worse(tmp_path: Path) -> None:
    done, report = _eval(tmp_path, _readme_eval(), SUPPORT_WRITER_WORSE="T-1012")
    assert done.returncode == 1, done.stderr
    assert report["summary"]["worse"] == ["T-1012"]
    worse = {c["name"]: c["worse"] for c in report["cases"] if c["worse"]}
    assert worse == {"T-1012": "passed 1/1, now 0/1; decision_matches 100% → 0%"}
    [row] = [line for line in done.stdout.splitlines() if line.startswith("│ T-1012 ")]
    assert "worse: passed 1/1, now 0/1" in row
    assert "worse than the baseline examples/support/baseline.json: T-1012" in done.stdout


def test_a_killed_eval_resumes_without_asking_again_what_it_had_finished(tmp_path: Path) -> None:
    """SIGKILL of the real ``mcec eval`` once 5 runs are done (it says so on stderr, a line a run);
    started again, it asks the writer and the judge only about the tickets whose runs were not
    stored, and its report is the uninterrupted one."""
    argv = [*_without(_readme_eval(), "--baseline"), "--concurrency", "1", "--out", str(tmp_path / "report")]
    first = subprocess.Popen(argv, cwd=ROOT, env=_env(tmp_path, SUPPORT_MODEL_DELAY="0.2"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stderr is not None
        for line in first.stderr:
            if line.startswith("mcec eval: [5/20]"):
                break
        else:
            pytest.fail("the eval ended before its fifth run")
        first.send_signal(signal.SIGKILL)
    finally:
        first.kill()
        first.wait()
    with sqlite3.connect(tmp_path / "report" / "results.sqlite") as db:
        stored = {name for (name,) in db.execute("select case_name from runs")}
    assert len(stored) >= 5 and not (tmp_path / "report" / "report.json").exists()
    before = _requests(tmp_path)
    (tmp_path / "requests.log").unlink()

    again = subprocess.run(argv, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    after = _requests(tmp_path)
    asked_again = {ticket for _, ticket in after}
    assert not asked_again & stored  # nothing finished is asked again, of the writer or of the judge
    assert asked_again | stored == set(TICKETS)
    assert Counter(model for model, _ in after) == {"writer": 20 - len(stored), "judge": 20 - len(stored)}
    # only what was in flight at the kill (one run: --concurrency 1) was asked twice in all
    writer_calls = Counter(ticket for model, ticket in before + after if model == "writer")
    assert sum(writer_calls.values()) - 20 <= 1
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["summary"]["resumed"] == len(stored)
    assert (report["summary"]["passed_runs"], report["summary"]["runs"]) == (16, 20)
    assert {name: why for name, [why] in _failing(report).items()} == FAILING
    assert f"{len(stored)} of 20 runs already done" in again.stderr


def test_the_html_report_opens_in_a_real_browser_and_shows_the_table(tmp_path: Path, screenshots: Path) -> None:
    """The page of the README's eval with T-1012 made worse, in Debian's headless chromium: the
    table's 20 rows, the figures, the worse mark. Its screenshot is the README's (docs/eval/report.png,
    written under ``--update-golden``)."""
    screenshot = screenshots / "eval" / "report.png"
    from playwright.sync_api import sync_playwright

    done, _ = _eval(tmp_path, _readme_eval(), SUPPORT_WRITER_WORSE="T-1012")
    assert done.returncode == 1, done.stderr
    page_url = (tmp_path / "report" / "report.html").as_uri()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1500})
            page.goto(page_url)
            headers = page.locator("#cases thead th").all_inner_texts()
            assert headers[:5] == ["case", "passed", "decision_matches", "grounded", "tone"]
            assert "vs baseline" in headers
            rows = page.locator("#cases tbody tr")
            assert rows.count() == 20
            assert [rows.nth(i).get_attribute("data-case") for i in range(20)] == TICKETS
            assert page.locator("#pass-rate b").inner_text() == "75.0%"
            assert page.locator("#worse b").inner_text() == "1"
            worse = page.locator("#cases tbody tr.worse")
            assert worse.count() == 1 and worse.get_attribute("data-case") == "T-1012"
            assert "worse" in worse.locator("td").last.inner_text()
            assert page.locator("tr[data-case='T-1005'] td.passed").inner_text() == "0/1"
            assert page.locator("#cases").is_visible()
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot))  # the top of the page: the figures and the first rows
        finally:
            browser.close()
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_more_repeats_and_an_edited_case_run_only_what_is_new(tmp_path: Path) -> None:
    """Runs are stored by (case, repeat, fingerprint): a second eval with ``--repeat 2`` runs every
    case's second repeat, and the first repeat only of the case edited since (its fingerprint
    covers the case as written); the rest is read back."""
    dataset = tmp_path / "tickets.jsonl"
    dataset.write_text((ROOT / "examples" / "support" / "tickets.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    argv = [*_without(_readme_eval(), "--baseline")]
    argv[argv.index("examples/support/tickets.jsonl")] = str(dataset)
    done, _ = _eval(tmp_path, argv)
    assert done.returncode == 0, done.stderr
    (tmp_path / "requests.log").unlink()
    lines = dataset.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace('"wrong size"', '"the wrong size"')  # T-1003
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    done, report = _eval(tmp_path, [*argv, "--repeat", "2"])
    assert done.returncode == 0, done.stderr
    asked = Counter(ticket for model, ticket in _requests(tmp_path) if model == "writer")
    assert asked == {name: 2 if name == "T-1003" else 1 for name in TICKETS}
    assert report["summary"]["resumed"] == 19 and report["summary"]["runs"] == 40
    [t1003] = [c for c in report["cases"] if c["name"] == "T-1003"]
    assert t1003["inputs"]["reason"] == "the wrong size"


def test_on_a_terminal_the_eval_shows_a_progress_bar(tmp_path: Path) -> None:
    from terminal import on_a_terminal

    argv = [*_without(_readme_eval(), "--baseline")][3:]  # after `python -m mcec`
    status, out, drawn = on_a_terminal([*argv, "--out", str(tmp_path / "report")], ROOT,
                                       SUPPORT_MODEL_DELAY="0.05", NO_COLOR="1")
    assert status == 0, drawn
    assert "evaluating" in drawn and "/20" in drawn
    assert "mcec eval: [1/20]" not in drawn  # the bar, not the lines written when stderr is no terminal
    assert "pass rate 80.0%" in out
