"""``mcec eval``: a pipeline scored over a dataset of cases (docs/language.md, "Datasets and evaluation").

- :mod:`mcec.eval.dataset` reads a JSONL or YAML dataset into pydantic-evals ``Case`` values,
  validated against the pipeline's input and output types; a bad case is a problem at its line.
- :mod:`mcec.eval.evaluators`: Python functions ``(case, output) -> bool | float | label`` and
  LLM judges (a pipeline of a ``.mce`` spec whose typed verdict becomes scores), as
  pydantic-evals ``Evaluator`` values.
- :mod:`mcec.eval.store`: the finished runs, in SQLite beside the report, so that a killed eval
  resumes without asking again what it had finished.
- :mod:`mcec.eval.scores`: pass rate, pass@k, pass^k and the comparison with a baseline.
- :mod:`mcec.eval.runner`: runs the pending (case, repeat) pairs through pydantic-evals'
  ``Dataset.evaluate``.
- :mod:`mcec.eval.report`: the report as a rich table, JSON and an HTML page.

Everything here imports pydantic-evals (the ``eval`` extra), so only ``mcec eval`` imports it.
"""
