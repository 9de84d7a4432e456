"""The toolbox of ``benchmarks/plan_bench.py`` (issue 23): ``calc.mce`` and its steps (``impl``)."""
