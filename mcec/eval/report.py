"""The report of an eval: a typed model (the JSON file), built from pydantic-evals' results.

:func:`build_report` turns the runs — pydantic-evals ``ReportCase`` values (``ReportCaseFailure``
for a run whose pipeline failed) — into an :class:`EvalReport`: per case its runs (output,
assertions, scores, labels, duration, tokens, cost), how many passed, pass@k and pass^k
(:mod:`mcec.eval.scores`), and, against a baseline report, whether it got worse
(:func:`worse_than`). The aggregate scores and labels are pydantic-evals' own
(``EvaluationReport.averages``). The JSON form is ``EvalReport.model_dump_json``; a baseline
is a JSON report read back with :func:`read_report`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python
from pydantic_evals.reporting import EvaluationReport, ReportCase, ReportCaseFailure

from mcec.eval.dataset import LoadedCase
from mcec.eval.scores import pass_at_k, pass_hat_k
from mcec.eval.store import StoredRun

__all__ = ["CaseRecord", "EvalReport", "ReportError", "RunRecord", "Summary", "build_report", "read_report", "worse_than"]

#: The version of the JSON form.
FORMAT: Literal["mcec-eval/1"] = "mcec-eval/1"


class ReportError(Exception):
    """A file that is not a report of ``mcec eval`` (``--baseline``)."""


class RunRecord(BaseModel):
    """One run of a case: what the pipeline gave and how it was scored."""

    repeat: int
    passed: bool
    output: Any = None
    #: The pipeline's failure (an ``Err`` or a ``Defect``), when it did not end in ``Ok``.
    error: str | None = None
    assertions: dict[str, bool] = {}
    scores: dict[str, float] = {}
    labels: dict[str, str] = {}
    #: An evaluator's reason for its result, by the result's name.
    reasons: dict[str, str] = {}
    evaluator_failures: list[str] = []
    #: Seconds the pipeline took (pydantic-evals' task duration).
    duration: float = 0.0
    requests: int = 0
    tokens: int = 0
    #: In USD, from ``--price`` (None: a model of the run has no price).
    cost: float | None = None
    judge_tokens: int = 0
    judge_cost: float | None = None


class CaseRecord(BaseModel):
    """A case of the dataset and its runs."""

    name: str
    line: int
    inputs: Any
    expected_output: Any = None
    metadata: Any = None
    runs: list[RunRecord]
    passed: int
    pass_at_k: float
    pass_hat_k: float
    #: Why the case is worse than in the baseline (None: not worse, or no baseline).
    worse: str | None = None


class Summary(BaseModel):
    """The aggregate of an eval."""

    cases: int
    runs: int
    repeat: int
    passed_runs: int
    #: Runs passed / runs (= pass@1 = pass^1).
    pass_rate: float
    #: pass@k and pass^k with k = ``repeat``, averaged over the cases.
    pass_at_k: float
    pass_hat_k: float
    #: Each assertion's share of runs in which it held.
    assertions: dict[str, float] = {}
    #: pydantic-evals' averages of the scores and of each label's values.
    scores: dict[str, float] = {}
    labels: dict[str, dict[str, float]] = {}
    tokens: int = 0
    judge_tokens: int = 0
    cost: float | None = None
    judge_cost: float | None = None
    #: Seconds the pipeline runs took, added up.
    duration: float = 0.0
    #: Runs read back from the results file instead of run again.
    resumed: int = 0
    baseline: str | None = None
    #: The cases worse than in the baseline.
    worse: list[str] = []


class EvalReport(BaseModel):
    """An eval's report: what was evaluated, the summary, and every case."""

    format: Literal["mcec-eval/1"] = FORMAT
    spec: str
    pipeline: str
    dataset: str
    evaluators: list[str]
    fingerprint: str
    summary: Summary
    cases: list[CaseRecord]


def read_report(path: Path) -> EvalReport:
    """A JSON report written by ``mcec eval`` (``ReportError`` otherwise)."""
    try:
        return EvalReport.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<root>"
        raise ReportError(f"{path} is not a report of mcec eval ({where}: {first['msg']})") from None


def build_report(
    *,
    spec: str,
    pipeline: str,
    dataset: str,
    evaluators: list[str],
    fingerprint: str,
    cases: Sequence[LoadedCase],
    repeat: int,
    runs: Mapping[tuple[str, int], StoredRun],
    resumed: int,
    baseline: EvalReport | None = None,
    baseline_name: str | None = None,
) -> EvalReport:
    """The report of ``cases`` run ``repeat`` times each (``runs`` by (case, repeat))."""
    records: list[CaseRecord] = []
    done: list[ReportCase[Any, Any, Any]] = []
    failed: list[ReportCaseFailure[Any, Any, Any]] = []
    for loaded in cases:
        case = loaded.case
        name = str(case.name)
        case_runs: list[RunRecord] = []
        for index in range(1, repeat + 1):
            run = runs.get((name, index))
            if run is None:
                continue
            case_runs.append(_record(index, run))
            (failed if isinstance(run, ReportCaseFailure) else done).append(run)  # type: ignore[arg-type]
        n = len(case_runs)
        c = sum(r.passed for r in case_runs)
        k = min(repeat, n) if n else 1
        records.append(CaseRecord(
            name=name,
            line=loaded.line,
            inputs=_shown(case.inputs),
            expected_output=_shown(case.expected_output),
            metadata=_shown(case.metadata),
            runs=case_runs,
            passed=c,
            pass_at_k=pass_at_k(n, c, k) if n else 0.0,
            pass_hat_k=pass_hat_k(n, c, k) if n else 0.0,
        ))
    if baseline is not None:
        then = {case.name: case for case in baseline.cases}
        for record in records:
            if record.name in then:
                record.worse = worse_than(record, then[record.name])
    all_runs = [r for record in records for r in record.runs]
    averages = EvaluationReport(name=pipeline, cases=done, failures=failed).averages()
    summary = Summary(
        cases=len(records),
        runs=len(all_runs),
        repeat=repeat,
        passed_runs=sum(r.passed for r in all_runs),
        pass_rate=_mean([float(r.passed) for r in all_runs]),
        pass_at_k=_mean([r.pass_at_k for r in records]),
        pass_hat_k=_mean([r.pass_hat_k for r in records]),
        assertions=_assertion_rates(all_runs),
        scores=dict(averages.scores) if averages is not None else {},
        labels={k: dict(v) for k, v in averages.labels.items()} if averages is not None else {},
        tokens=sum(r.tokens for r in all_runs),
        judge_tokens=sum(r.judge_tokens for r in all_runs),
        cost=_total([r.cost for r in all_runs]),
        judge_cost=_total([r.judge_cost for r in all_runs]) if any(r.judge_tokens for r in all_runs) else None,
        duration=sum(r.duration for r in all_runs),
        resumed=resumed,
        baseline=baseline_name,
        worse=[r.name for r in records if r.worse],
    )
    return EvalReport(spec=spec, pipeline=pipeline, dataset=dataset, evaluators=evaluators,
                      fingerprint=fingerprint, summary=summary, cases=records)


def worse_than(now: CaseRecord, then: CaseRecord) -> str | None:
    """Why ``now`` is worse than ``then`` (None: it is not): fewer of its runs passed, an
    assertion held in fewer runs, or a score's mean is lower."""
    reasons: list[str] = []
    if _share(now.passed, len(now.runs)) < _share(then.passed, len(then.runs)) - 1e-9:
        reasons.append(f"passed {then.passed}/{len(then.runs)}, now {now.passed}/{len(now.runs)}")
    held_now, held_then = _assertion_rates(now.runs), _assertion_rates(then.runs)
    for name, rate in held_then.items():
        if name in held_now and held_now[name] < rate - 1e-9:
            reasons.append(f"{name} {rate:.0%} → {held_now[name]:.0%}")
    mean_now, mean_then = _score_means(now.runs), _score_means(then.runs)
    for name, mean in mean_then.items():
        if name in mean_now and mean_now[name] < mean - 1e-9:
            reasons.append(f"{name} {mean:.3g} → {mean_now[name]:.3g}")
    return "; ".join(reasons) or None


def _record(index: int, run: StoredRun) -> RunRecord:
    if isinstance(run, ReportCaseFailure):
        return RunRecord(repeat=index, passed=False, error=run.error_message)
    metrics = run.metrics
    assertions = {name: bool(result.value) for name, result in run.assertions.items()}
    reasons = {name: result.reason for results in (run.assertions, run.scores, run.labels)
               for name, result in results.items() if result.reason}
    failures = [f"{f.name}: {f.error_message}" for f in run.evaluator_failures]
    return RunRecord(
        repeat=index,
        passed=all(assertions.values()) and not failures,
        output=_shown(run.output),
        assertions=assertions,
        scores={name: float(result.value) for name, result in run.scores.items()},
        labels={name: str(result.value) for name, result in run.labels.items()},
        reasons=reasons,
        evaluator_failures=failures,
        duration=run.task_duration,
        requests=int(metrics.get("requests", 0)),
        tokens=int(metrics.get("tokens", 0)),
        cost=float(metrics["cost"]) if "cost" in metrics else None,
        judge_tokens=int(metrics.get("judge_tokens", 0)),
        judge_cost=float(metrics["judge_cost"]) if "judge_cost" in metrics else None,
    )


def _assertion_rates(runs: Sequence[RunRecord]) -> dict[str, float]:
    held: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for run in runs:
        for name, value in run.assertions.items():
            seen[name] += 1
            held[name] += value
    return {name: held[name] / seen[name] for name in seen}


def _score_means(runs: Sequence[RunRecord]) -> dict[str, float]:
    totals: dict[str, list[float]] = {}
    for run in runs:
        for name, value in run.scores.items():
            totals.setdefault(name, []).append(value)
    return {name: sum(values) / len(values) for name, values in totals.items()}


def _total(costs: Sequence[float | None]) -> float | None:
    """The sum of the costs (None: none, or one of them unknown)."""
    return None if not costs or any(c is None for c in costs) else sum(c for c in costs if c is not None)


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _shown(value: Any) -> Any:
    return to_jsonable_python(value, fallback=repr)
