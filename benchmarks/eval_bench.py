"""What ``mcec eval`` adds to each run of a pipeline (issue 45, item 2).

The support example's ``respond`` pipeline (examples/support/reply.mce, its model the scripted
writer, no delay) runs over the 20 tickets of ``examples/support/tickets.jsonl``, copied ROUNDS×
under fresh names (200 cases by default), three ways in one process, after the spec is compiled
and loaded once:

- **direct** — each case awaited in turn, as ``mcec run``'s task would: the compiled pipeline under
  the model configuration and a token meter (the floor);
- **eval** — ``mcec.eval.runner.run_eval`` with no evaluator, one run at a time
  (``--concurrency 1``), every run stored in a fresh results file: pydantic-evals' task and case
  machinery, the lifecycle, the SQLite commit per run;
- **eval+judge** — the same with the example's two evaluators (``decision_matches`` and the
  scripted LLM judge, which is a second pipeline run per case).

Each way runs REPEAT times, interleaved (direct, eval, eval+judge, direct, …) so that the
machine's load hits all alike; the figure is the median per case and the ratio to direct. The
one-off cost of ``mcec eval`` (importing pydantic-evals) is timed in a fresh interpreter.

    python -m benchmarks.eval_bench [--rounds 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="copies of the 20 tickets (default 10: 200 cases)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each way (default 5)")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))

    from pydantic_evals import Case

    from agentmonad.llm import LLMConfig, llm_config, usage
    from agentmonad.testing import FunctionModel

    from examples.support.judge import grade
    from examples.support.writer import draft
    from mcec.cli.compile import compile_to_run, load_compiled
    from mcec.eval.dataset import LoadedCase, load_dataset
    from mcec.eval.evaluators import JudgeEvaluator, python_evaluator
    from mcec.eval.runner import EvalRun, Target, run_eval
    from mcec.eval.store import ResultStore
    from mcec.run.pyobjects import python_type

    def loaded(spec: str) -> tuple[Any, Any]:
        result = compile_to_run(Path(spec))
        assert not isinstance(result, int) and result.program is not None
        module = load_compiled(result)
        assert not isinstance(module, int)
        return result.program, module

    program, module = loaded("examples/support/reply.mce")
    judge_program, judge_module = loaded("examples/support/judge.mce")
    [signature] = [p.sig for p in program.pipelines if p.name == "respond"]
    input_type, output_type = python_type(signature.input), python_type(signature.output)
    tickets = load_dataset(Path("examples/support/tickets.jsonl"), input_type, output_type)
    cases: list[LoadedCase] = []
    for round_ in range(args.rounds):
        for t in tickets:
            case = Case(name=f"{t.case.name}#{round_}", inputs=t.case.inputs.model_copy(update={"id": f"{t.case.name}#{round_}"}),
                        expected_output=t.case.expected_output, metadata=t.case.metadata)
            cases.append(dataclasses.replace(t, case=case))
    writer = LLMConfig(models={"writer": FunctionModel(draft)})
    grader = LLMConfig(models={"grader": FunctionModel(grade)})
    run = module.respond

    async def direct() -> None:
        for loaded_case in cases:
            with usage(), llm_config(writer):
                await run(None, loaded_case.case.inputs)

    def evaluated(judged: bool) -> None:
        evaluators: list[Any] = []
        if judged:
            [judge_sig] = [p.sig for p in judge_program.pipelines if p.name == "judge"]
            evaluators = [python_evaluator("examples.support.replies:decision_matches"),
                          JudgeEvaluator("examples/support/judge.mce:judge", pipeline="judge", run=judge_module.judge,
                                         state=None, input_type=python_type(judge_sig.input), llm=grader)]
        with tempfile.TemporaryDirectory() as folder:
            store = ResultStore(Path(folder) / "results.sqlite", input_type, output_type)
            plan = EvalRun(name="respond", cases=cases, repeat=1, concurrency=1, fingerprint="bench",
                           target=Target(run, None, writer), evaluators=evaluators, store=store)
            with open(os.devnull, "w") as quiet:
                runs, _ = run_eval(plan, progress_stream=quiet)
            store.close()
            assert len(runs) == len(cases)

    ways = {
        "direct": lambda: asyncio.run(direct()),
        "eval": lambda: evaluated(False),
        "eval+judge": lambda: evaluated(True),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    for name, way in ways.items():  # warm-up
        way()
    for _ in range(args.repeat):
        for name, way in ways.items():
            started = time.perf_counter()
            way()
            times[name].append((time.perf_counter() - started) / len(cases))
    floor = statistics.median(times["direct"])
    print(f"{len(cases)} cases, median of {args.repeat} interleaved runs, per case:")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"  {name:<11} {median * 1e3:8.3f} ms  ×{median / floor:5.2f}  (spread {min(samples) * 1e3:.3f}–{max(samples) * 1e3:.3f} ms)")
    imports = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import pydantic_evals"], check=True)
        imports.append(time.perf_counter() - started)
    print(f"  one-off: importing pydantic-evals in a fresh interpreter {statistics.median(imports):.2f} s (median of 3)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
