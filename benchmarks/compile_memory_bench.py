"""Peak memory and CPU of ``mcec compile --no-mypy`` of a large spec (issue 48 item 4).

The spec is ``scaling_bench``'s ``decls(N)`` (N/2 pipelines and N/2 fns; default N = 20,000:
10,000 pipelines), in a temporary folder beside the ``bench/impl.py`` it names (so the
checker reads its classes as ``mcec compile`` does). Each run is a real ``mcec compile``
process; its peak resident memory (``ru_maxrss``, what ``/usr/bin/time -f %M`` reports) and
CPU (user + system) are read with ``os.wait4``. With ``--baseline DIR`` (a checkout of another
commit, e.g. ``git archive COMMIT | tar -x -C DIR``) the same compile is run with that
checkout's ``mcec`` first on the path, run by run, alternating (the machine's load hits both
alike), and the two modules written are compared byte for byte. Target (issue 48): < 300 MB.

    python -m benchmarks.compile_memory_bench [--size 20000] [--runs 2] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.scaling_bench import decls, workspace

ROOT = Path(__file__).resolve().parent.parent
TARGET_MB = 300


def one_run(code: Path, folder: Path, out: Path) -> tuple[float, float]:
    """One ``mcec compile --no-mypy`` of ``folder/bench.mce`` into ``out`` with ``code``'s packages:
    (peak MB, CPU s)."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), str(code / "runtime")])}
    command = [sys.executable, "-m", "mcec", "compile", "--no-mypy", "-q", "-o", str(out), "bench.mce"]
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=environment, cwd=folder)
        _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"mcec compile failed: {err.read().decode()[-500:]}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000, help="declarations (half of them pipelines)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout, run side by side")
    args = parser.parse_args(argv)
    codes = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    folder = workspace(args.size)
    try:
        (folder / "bench.mce").write_text(decls(args.size))
        for round_ in range(args.runs):
            for name, code in codes:
                peak, cpu = one_run(code, folder, folder / name)
                verdict = "" if name != "this" else (" ✓" if peak < TARGET_MB else f" ✗ (target < {TARGET_MB} MB)")
                print(f"run {round_ + 1} {name:9} peak {peak:7.1f} MB  cpu {cpu:6.1f} s{verdict}", flush=True)
        if args.baseline:
            same = filecmp.cmp(folder / "this" / "bench_mce.py", folder / "baseline" / "bench_mce.py", shallow=False)
            print("modules identical" if same else "MODULES DIFFER")
            return 0 if same else 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
