"""mypy --strict accepts the widenings generated code relies on (covariant
Ok/Err, Outcome[S, E, A] parameter order, Step[S, A, B, E] aliases) and rejects
a wrong one. One mypy run for the whole snippet keeps this fast."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = textwrap.dedent(
    """
    from typing import Never
    from agentmonad import AgentMonad, Err, Ok, Outcome, Site, lift_step, lift_fn
    from agentmonad.compiled import AsyncStep, Fn, Step, each, par, raised, stop

    class St: ...
    class E1(Exception): ...
    class E2(Exception): ...

    def plan(state: St, value: str) -> Outcome[St, E1, int]:
        return Ok(len(value), state)

    async def fetch(state: St, value: int) -> Outcome[St, E2, bytes]:
        return Err(E2(), state)

    plan_s: Step[St, str, int, E1] = plan
    fetch_s: AsyncStep[St, int, bytes, E2] = fetch
    fmt: Fn[bytes, str] = bytes.hex

    SITE = Site("plan", "x.mce", 1, 1)

    async def pipeline(state: St, value: str) -> Outcome[St, E1 | E2, str]:
        try:
            r1 = plan_s(state, value)
            if not isinstance(r1, Ok):
                return stop(r1, SITE, (E1,))
            state, v1 = r1.state, r1.value
            r2 = await fetch_s(state, v1)
            if not isinstance(r2, Ok):
                return stop(r2, SITE, (E2,))
            state, v2 = r2.state, r2.value
        except Exception as exc:
            return raised(exc, SITE, state, (E1, E2))
        return Ok(fmt(v2), state)

    def widen(o: Ok[St, bool], e: Err[St, Never]) -> list[Outcome[St, E1 | E2, int]]:
        return [o, e]

    def narrow(o: Outcome[St, E1 | E2, int]) -> Outcome[St, E1, int]:
        return o  # E: error set too wide

    prog: AgentMonad[St, E1, int] = lift_step(plan, name="plan", errors=(E1,))("q")
    wider: AgentMonad[St, E1 | E2, object] = prog
    """
)


def test_mypy_accepts_widenings_and_rejects_narrowing(tmp_path: Path, project_mypy_cache: Path) -> None:
    path = tmp_path / "snippet.py"
    path.write_text(SNIPPET)
    out, err, status = api.run(
        ["--strict", "--cache-dir", str(project_mypy_cache),
         "--config-file", str(ROOT / "pyproject.toml"), str(path)]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    lines = SNIPPET.splitlines()
    flagged = {int(line.split(":")[1]) for line in errors}
    expected = {i + 1 for i, text in enumerate(lines) if "# E:" in text}
    assert flagged == expected, out
