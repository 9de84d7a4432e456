"""Memory and CPU of ``mcec run`` streaming a long structured answer (issue 47 item 1).

A ``stream llm`` step (``tests/codegen/cases/stream.mce``, pipeline ``study``: ``-> Report``)
answers a ``Report`` whose title is SIZE characters, streamed by ``tests/llm_server.py`` (a
real local OpenAI-compatible server in a thread of this process) in pieces of 8 characters.
Each run is a real ``mcec run`` process; its peak resident memory (``ru_maxrss``) and CPU
(user + system) are read with ``os.wait4``, its stdout counted. With ``--baseline DIR`` (a
checkout of an older commit, e.g. ``git archive COMMIT | tar -x -C DIR``) the same runs are
made with that checkout's ``mcec`` and ``agentmonad`` first on the path, run by run,
alternating (the machine's load hits both alike).

    python -m benchmarks.stream_memory_bench [--sizes 100000,200000] [--how trace,stream,none] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "tests" / "codegen" / "cases" / "stream.mce"
sys.path.insert(0, str(ROOT / "tests"))

#: What each "how" adds to the command line.
OPTIONS = {"trace": ["--trace"], "stream": ["--stream"], "none": []}


def one_run(url: str, how: str, code: Path) -> tuple[float, float, float, int]:
    """One ``mcec run`` with ``code``'s packages: (peak MB, CPU s, wall s, stdout bytes)."""
    path = os.pathsep.join([str(code), str(code / "runtime"), str(ROOT / "tests")])
    environment = {**os.environ, "PYTHONPATH": path, "OPENAI_API_KEY": "sk-bench"}
    command = [sys.executable, "-m", "mcec", "run", str(SPEC), "study", "--input", '{"text": "Paris"}',
               "--model", f"fast=test-model@{url}", *OPTIONS[how]]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.monotonic()
        child = subprocess.Popen(command, stdout=out, stderr=err, env=environment, cwd=code)  # -m: the cwd first
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - started
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"mcec run failed: {err.read().decode()[-500:]}")
        return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, wall, out.tell()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,200000")
    parser.add_argument("--how", default="trace,stream,none")
    parser.add_argument("--baseline", type=Path, help="an older checkout, run side by side")
    args = parser.parse_args(argv)
    from flowbox import Cite, Report
    from llm_server import LLMServer

    codes = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    with LLMServer(chunk_size=8) as server:
        for size in (int(s) for s in args.sizes.split(",")):
            answer = Report(title="x" * size, verdict="yes", cites=[Cite(url="https://a.example")]).model_dump_json()
            for how in args.how.split(","):
                for name, code in codes:
                    server.script(answer)
                    peak, cpu, wall, printed = one_run(server.url, how, code)
                    print(f"{name:8} {size:>8,} chars  {how:6}  peak {peak:7.0f} MB  cpu {cpu:6.2f} s  "
                          f"wall {wall:6.2f} s  stdout {printed:>12,} B", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
