"""Issue 43, item 2: start-up of a non-durable run of a compiled module on the runtime's command
line, ``python -m agentmonad run greeter.greet_mce:hello --input '"ada"'`` (examples/project's
spec, compiled here), target ≤ 0.3 s on an idle machine.

Wall time of the whole process, from its start to its exit, and the CPU time (user + system) it
used — on a busy machine the CPU time is the better guess of the idle wall time — median of
``--rounds`` (default 10) after a warm-up run; interleaved with two baselines in the same rounds, ``python -c pass`` (the
interpreter alone) and ``python -c "import pydantic"`` (the runtime's one dependency), so a busy
machine shows in them too. The load average is printed beside the figures.

    python -m benchmarks.startup_bench [--rounds 10] [--python PY]

``--python`` times another interpreter (a venv with only ``agentmonad`` installed, say); the
compiled module is put on its ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "examples" / "project" / "greeter"


def _compiled(folder: Path) -> Path:
    """examples/project's ``greeter`` package with its spec compiled, in ``folder``."""
    package = folder / "greeter"
    shutil.copytree(PROJECT, package, ignore=shutil.ignore_patterns("*_mce.py", "__pycache__"))
    subprocess.run([sys.executable, "-m", "mcec", "compile", "-q", "--no-mypy", str(package / "greet.mce")],
                   check=True, cwd=folder)
    return folder


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds of one run of ``command``, and the CPU seconds (user + system) it used (the
    children's usage grows by exactly that: one child at a time, waited for)."""
    cpu, start = _cpu_of_children(), time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed, used = time.perf_counter() - start, _cpu_of_children() - cpu
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()}")
    return elapsed, used


def measure(python: str, rounds: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each command over ``rounds`` interleaved rounds (the order rotating)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = _compiled(Path(tmp))
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {"PYTHONPATH": str(folder)}
        commands = {
            "agentmonad run": [python, "-m", "agentmonad", "run", "greeter.greet_mce:hello", "--input", '"ada"'],
            "python -c pass": [python, "-c", "pass"],
            "import pydantic": [python, "-c", "import pydantic"],
        }
        for command in commands.values():  # warm-up: byte-compiled files, the OS's file cache
            _time(command, folder, env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        names = list(commands)
        for round_ in range(rounds):
            for name in names[round_ % len(names):] + names[: round_ % len(names)]:
                times[name].append(_time(commands[name], folder, env))
        return {name: (statistics.median(w for w, _ in values), statistics.median(c for _, c in values))
                for name, values in times.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    before = os.getloadavg()
    figures = measure(args.python, args.rounds)
    after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, "
          f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}; {os.cpu_count()} cores")
    print(f"median of {args.rounds} (the whole process): wall, CPU (user + system)")
    for name, (wall, cpu) in figures.items():
        print(f"  {name:<16} {wall * 1000:7.1f} ms {cpu * 1000:7.1f} ms")
    run, bare = figures["agentmonad run"], figures["python -c pass"]
    print(f"  agentmonad run − python -c pass: wall {(run[0] - bare[0]) * 1000:.1f} ms, CPU {(run[1] - bare[1]) * 1000:.1f} ms;"
          f" target ≤ 300 ms wall on an idle machine: {'✓' if run[0] <= 0.3 else '✗ (see the load)'}")


if __name__ == "__main__":
    main()
