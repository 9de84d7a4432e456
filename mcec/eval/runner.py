"""Running an eval: every pending (case, repeat) through pydantic-evals' ``Dataset.evaluate``.

The pipeline runs as ``mcec run`` runs it — the module compiled from the spec as it is now,
the run under the model configuration of ``--model`` — but many at once (``--concurrency``)
on one event loop, each in its own task and so with its own token meter. A run that is
stored already (:mod:`mcec.eval.store`, same fingerprint) is read back instead; every run
that finishes is stored at once (the ``CaseLifecycle.teardown`` of pydantic-evals), so a
killed eval, started again, runs only what it had not finished.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, TextIO

from pydantic_evals import Case, Dataset, increment_eval_metric
from pydantic_evals.evaluators import Evaluator
from pydantic_evals.lifecycle import CaseLifecycle
from pydantic_evals.reporting import ReportCase, ReportCaseFailure

from agentmonad import Err
from agentmonad.llm import LLMConfig, Usage, llm_config, usage

from mcec.eval.dataset import LoadedCase
from mcec.eval.evaluators import JudgeEvaluator
from mcec.eval.recordings import CURRENT_RUN, EvalRecorder
from mcec.eval.store import ResultStore, StoredRun

__all__ = ["EvalRun", "PipelineFailed", "Price", "Target", "cost_of", "eval_fingerprint", "run_eval", "run_name"]


@dataclass(frozen=True, slots=True)
class Price:
    """A model's price in USD per million tokens (``--price NAME=PROMPT/COMPLETION``)."""

    prompt: float
    completion: float


def cost_of(used: Usage, prices: Mapping[str, Price]) -> float | None:
    """What ``used`` cost (None: a model it used has no price)."""
    total = 0.0
    for model, share in used.by_model().items():
        price = prices.get(model) or prices.get("*")
        if price is None:
            return None
        total += (share.prompt_tokens * price.prompt + share.completion_tokens * price.completion) / 1_000_000
    return total


class PipelineFailed(Exception):
    """The pipeline ended in an error (the run's failure in the report)."""


@dataclass(frozen=True)
class Target:
    """What runs for each case: ``run(state, inputs)``, a pipeline of the compiled module."""

    run: Callable[[Any, Any], Awaitable[Any]]
    state: Any
    llm: LLMConfig | None
    prices: Mapping[str, Price] = field(default_factory=dict)
    #: ``--record DIR``: each run recorded to its own file there.
    recorder: EvalRecorder | None = None

    async def __call__(self, inputs: Any) -> Any:
        """One run (pydantic-evals' task): the pipeline's value; its tokens and cost as metrics."""
        with ExitStack() as stack:
            used = stack.enter_context(usage())
            if self.llm is not None:
                stack.enter_context(llm_config(self.llm))
            try:
                if self.recorder is not None:
                    outcome = await self.recorder.run(lambda: self.run(self.state, inputs), inputs)
                else:
                    outcome = await self.run(self.state, inputs)
            finally:
                _spent(used, self.prices, "")
        if isinstance(outcome, Err):
            site = f" at {outcome.site}" if outcome.site is not None else ""
            raise PipelineFailed(f"{type(outcome.error).__name__}: {outcome.error}{site}")
        return outcome.value


def _spent(used: Usage, prices: Mapping[str, Price], prefix: str) -> None:
    if prefix == "":
        increment_eval_metric("requests", used.requests)
    increment_eval_metric(f"{prefix}tokens", used.total_tokens)
    cost = cost_of(used, prices)
    if cost is not None:
        increment_eval_metric(f"{prefix}cost", cost)


def run_name(case: str, repeat: int, repeats: int) -> str:
    """A run's name in the report: the case's, with ``[i/k]`` when it is repeated (as
    pydantic-evals names repeated runs)."""
    return case if repeats == 1 else f"{case} [{repeat}/{repeats}]"


def eval_fingerprint(parts: Mapping[str, object]) -> str:
    """The digest of what makes a stored run stand for a run today (the specs' fingerprints,
    the pipeline, the evaluators, the model options and prices, the state)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class Progress:
    """How far an eval is, on stderr: a bar on a terminal, else a line per finished run."""

    def __init__(self, stream: TextIO, total: int, done: int) -> None:
        self._stream, self._total, self._done = stream, total, done
        self._bar: Any = None
        self._task: Any = None
        if stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            self._bar = Bar(TextColumn("evaluating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=Console(file=stream), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("eval", total=total, completed=done)
        if done:
            print(f"mcec eval: {done} of {total} runs already done, read from the results file", file=stream)

    def advance(self, name: str, passed: bool) -> None:
        """One more run is done."""
        self._done += 1
        if self._bar is not None:
            self._bar.update(self._task, completed=self._done)
        else:
            print(f"mcec eval: [{self._done}/{self._total}] {name} {'passed' if passed else 'failed'}",
                  file=self._stream, flush=True)

    def close(self) -> None:
        """Take the bar away."""
        if self._bar is not None:
            self._bar.stop()


@dataclass
class EvalRun:
    """An eval to run: the cases, how often, the pipeline, the evaluators and the results file."""

    name: str
    cases: Sequence[LoadedCase]
    repeat: int
    concurrency: int
    fingerprint: str
    target: Target
    evaluators: list[Evaluator[Any, Any, Any]]
    store: ResultStore
    judge_prices: Mapping[str, Price] = field(default_factory=dict)


def run_eval(plan: EvalRun, progress_stream: TextIO = sys.stderr) -> tuple[dict[tuple[str, int], StoredRun], int]:
    """Run ``plan``: every (case, repeat) not stored yet; returns every run by (case, repeat)
    and how many were read back from the store."""
    runs: dict[tuple[str, int], StoredRun] = {}
    pending: list[Case[Any, Any, Any]] = []
    #: a pending run's name -> (case, repeat, its key's fingerprint)
    keys: dict[str, tuple[str, int, str]] = {}
    for loaded in plan.cases:
        case = loaded.case
        name = str(case.name)
        key = eval_fingerprint({"eval": plan.fingerprint, "case": loaded.digest})
        for index in range(1, plan.repeat + 1):
            stored = plan.store.load(name, index, key)
            if stored is not None:
                stored.name = run_name(name, index, plan.repeat)
                stored.source_case_name = name if plan.repeat > 1 else None
                runs[name, index] = stored
                continue
            unit = run_name(name, index, plan.repeat)
            keys[unit] = (name, index, key)
            pending.append(Case(name=unit, inputs=case.inputs, expected_output=case.expected_output,
                                metadata=case.metadata))
    resumed = len(runs)
    progress = Progress(progress_stream, len(plan.cases) * plan.repeat, resumed)
    judges = [e for e in plan.evaluators if isinstance(e, JudgeEvaluator)]

    class Stored(CaseLifecycle[Any, Any, Any]):
        """Each run: which it is, told to its task (a recorded run's file is named by it); once
        finished, the judges' tokens added to its metrics, then stored at once."""

        async def setup(self) -> None:
            # set in the case's own task, before its task runs there (the task sees it, no other)
            name, index, _ = keys[str(self.case.name)]
            CURRENT_RUN.set((name, index))

        async def teardown(self, result: ReportCase[Any, Any, Any] | ReportCaseFailure[Any, Any, Any] | None) -> None:
            if result is None:  # cancelled: nothing finished
                return
            name, index, key = keys[result.name]
            if isinstance(result, ReportCase):
                for judge in judges:
                    spent = judge.spent.pop(result.name, None)
                    if spent is not None:
                        _add_judge_usage(result.metrics, spent, plan.judge_prices)
            result.source_case_name = name if plan.repeat > 1 else None
            plan.store.save(name, index, key, result)
            runs[name, index] = result
            passed = isinstance(result, ReportCase) and all(a.value for a in result.assertions.values()) \
                and not result.evaluator_failures
            progress.advance(result.name, passed)

    try:
        if pending:
            dataset: Dataset[Any, Any, Any] = Dataset(name=plan.name, cases=pending, evaluators=plan.evaluators)
            asyncio.run(dataset.evaluate(plan.target, name=plan.name, task_name=plan.name,
                                         max_concurrency=plan.concurrency, progress=False, lifecycle=Stored))
    finally:
        progress.close()
    return runs, resumed


def _add_judge_usage(metrics: dict[str, float | int], used: Usage, prices: Mapping[str, Price]) -> None:
    metrics["judge_tokens"] = metrics.get("judge_tokens", 0) + used.total_tokens
    cost = cost_of(used, prices)
    if cost is not None:
        metrics["judge_cost"] = metrics.get("judge_cost", 0.0) + cost
