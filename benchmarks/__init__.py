"""mcec's benchmarks. ``python -m benchmarks`` runs them all (see ``benchmarks/run.py``
and ``benchmarks/README.md``)."""
