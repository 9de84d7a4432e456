"""The report on the terminal (a rich table) and as an HTML page (a Jinja2 template).

Both show one row a case: how many of its runs passed, each assertion (✔/✗, or how many
runs it held in), each score's mean, each label, the output, the duration, tokens and cost,
and — against a baseline — whether the case got worse, and why; then the aggregate: pass
rate, pass@k and pass^k, tokens and cost.
"""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from typing import Any, TextIO

from mcec.eval.report import CaseRecord, EvalReport

__all__ = ["render_html", "render_terminal", "summary_lines"]


def _columns(report: EvalReport) -> tuple[list[str], list[str], list[str]]:
    """The names of the assertions, scores and labels, in the order first seen."""
    assertions: dict[str, None] = {}
    scores: dict[str, None] = {}
    labels: dict[str, None] = {}
    for case in report.cases:
        for run in case.runs:
            assertions.update(dict.fromkeys(run.assertions))
            scores.update(dict.fromkeys(run.scores))
            labels.update(dict.fromkeys(run.labels))
    return list(assertions), list(scores), list(labels)


def _assertion_cell(case: CaseRecord, name: str) -> str:
    values = [run.assertions[name] for run in case.runs if name in run.assertions]
    if not values:
        return "–"
    if len(values) == 1:
        return "✔" if values[0] else "✗"
    return f"{sum(values)}/{len(values)}"


def _score_cell(case: CaseRecord, name: str) -> str:
    values = [run.scores[name] for run in case.runs if name in run.scores]
    return f"{sum(values) / len(values):.3g}" if values else "–"


def _label_cell(case: CaseRecord, name: str) -> str:
    counts = Counter(run.labels[name] for run in case.runs if name in run.labels)
    if not counts:
        return "–"
    return ", ".join(label if n == 1 else f"{label} ×{n}" for label, n in counts.most_common())


def _output_cell(case: CaseRecord, width: int | None = 48) -> str:
    shown = []
    for run in case.runs:
        shown.append(f"error: {run.error}" if run.error is not None else json.dumps(run.output, ensure_ascii=False))
    text = " | ".join(dict.fromkeys(shown))
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


def _cost(value: float | None) -> str:
    return "–" if value is None else f"${value:.6f}"


def _case_cost(case: CaseRecord) -> float | None:
    costs = [run.cost for run in case.runs]
    return None if not costs or any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _duration(case: CaseRecord) -> str:
    return f"{sum(run.duration for run in case.runs) / max(len(case.runs), 1) * 1000:.0f} ms"


def summary_lines(report: EvalReport) -> list[str]:
    """The aggregate, a line a figure."""
    s = report.summary
    lines = [f"pass rate {s.pass_rate:.1%} ({s.passed_runs}/{s.runs} runs of {s.cases} cases)"]
    if s.repeat > 1:
        lines.append(f"pass@{s.repeat} {s.pass_at_k:.1%}, pass^{s.repeat} {s.pass_hat_k:.1%} ({s.repeat} runs a case)")
    for name, rate in s.assertions.items():
        lines.append(f"{name}: held in {rate:.1%} of runs")
    for name, mean in s.scores.items():
        lines.append(f"{name}: mean {mean:.3g}")
    for name, shares in s.labels.items():
        lines.append(f"{name}: " + ", ".join(f"{label} {share:.0%}" for label, share in sorted(shares.items())))
    tokens = f"tokens {s.tokens}" + (f" (+{s.judge_tokens} judging)" if s.judge_tokens else "")
    judging = f" (+{_cost(s.judge_cost)} judging)" if s.judge_cost is not None else ""
    lines.append(f"{tokens}, cost {_cost(s.cost)}{judging}, {s.duration:.2f} s in the pipeline")
    if s.resumed:
        lines.append(f"{s.resumed} runs read back from the results file")
    if s.baseline is not None:
        worse = ", ".join(s.worse) if s.worse else "none"
        lines.append(f"worse than the baseline {s.baseline}: {worse}")
    return lines


def render_terminal(report: EvalReport, out: TextIO, *, color: bool) -> None:
    """The report as a rich table on ``out``, then the summary lines."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=out, width=None if out.isatty() else 200, no_color=not color,
                      force_terminal=color, highlight=False, soft_wrap=False)
    assertions, scores, labels = _columns(report)
    table = Table(title=f"mcec eval: {report.pipeline} over {report.dataset}", title_justify="left")
    table.add_column("case", no_wrap=True)
    table.add_column("passed", justify="right")
    for name in assertions:
        table.add_column(name, justify="center")
    for name in scores:
        table.add_column(name, justify="right")
    for name in labels:
        table.add_column(name)
    table.add_column("output", overflow="ellipsis", max_width=48)
    table.add_column("duration", justify="right")
    table.add_column("tokens", justify="right")
    table.add_column("cost", justify="right")
    if report.summary.baseline is not None:
        table.add_column("vs baseline")
    for case in report.cases:
        passed = f"{case.passed}/{len(case.runs)}"
        row = [case.name, f"[green]{passed}[/]" if case.passed == len(case.runs) and case.runs else f"[red]{passed}[/]"]
        row += [_assertion_cell(case, name) for name in assertions]
        row += [_score_cell(case, name) for name in scores]
        row += [_label_cell(case, name) for name in labels]
        row += [_escape(_output_cell(case)), _duration(case), str(sum(r.tokens for r in case.runs)), _cost(_case_cost(case))]
        if report.summary.baseline is not None:
            row.append(f"[bold red]worse[/]: {_escape(case.worse)}" if case.worse else "")
        table.add_row(*row)
    console.print(table)
    for line in summary_lines(report):
        console.print(_escape(line))


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _reasons(case: CaseRecord) -> list[str]:
    """The evaluators' reasons, each once with the results it explains (``grounded, tone: …``)."""
    names: dict[str, list[str]] = {}
    for run in case.runs:
        for name, reason in run.reasons.items():
            if name not in names.setdefault(reason, []):
                names[reason].append(name)
    return [f"{', '.join(explained)}: {reason}" for reason, explained in names.items()]


def render_html(report: EvalReport) -> str:
    """The report as a self-contained HTML page."""
    from jinja2 import Environment, select_autoescape

    template_text = resources.files("mcec.eval").joinpath("templates/report.html.j2").read_text(encoding="utf-8")
    env = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
    assertions, scores, labels = _columns(report)
    rows: list[dict[str, Any]] = []
    for case in report.cases:
        rows.append({
            "case": case,
            "assertions": [_assertion_cell(case, name) for name in assertions],
            "scores": [_score_cell(case, name) for name in scores],
            "labels": [_label_cell(case, name) for name in labels],
            "output": _output_cell(case, None),
            "duration": _duration(case),
            "tokens": sum(r.tokens for r in case.runs),
            "cost": _cost(_case_cost(case)),
            "reasons": _reasons(case),
            "failures": sorted({f for run in case.runs for f in run.evaluator_failures}),
        })
    return env.from_string(template_text).render(
        report=report, rows=rows, assertions=assertions, scores=scores, labels=labels,
        summary=summary_lines(report),
    )
