"""A process that runs many durable runs of one compiled spec — a worker — executes the spec's
generated module once, not once a run (issue 42: re-executing it was ~60 % of a worker's CPU on
small runs), and records with the types the module carries (``SPEC_INFO``, docs/language.md §7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

IMPL = '''
from agentmonad import Ok


async def double(state: int, n: int):
    return Ok(n * 2, state)
'''

SPEC = '''
import once_impl as impl

state int

async step double : int -> int = impl.double

pipeline twice : int -> int = double >>= double;
'''


def test_runs_of_one_spec_in_one_process_execute_its_module_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcec.run.runner as runner
    from mcec import durable

    (tmp_path / "once_impl.py").write_text(IMPL, encoding="utf-8")
    (tmp_path / "once.mce").write_text(SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded: list[Any] = []
    load_module = runner.load_module
    monkeypatch.setattr(runner, "load_module", lambda *args: loaded.append(load_module(*args)) or loaded[-1])
    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    for n in range(3):
        report = durable.run(tmp_path / "once.mce", "twice", str(n), run_id=f"once{n}", db=db)
        assert report["ok"] and report["value"] == n * 4, report
        assert [e["kind"] for e in durable.show(f"once{n}", db=db)["effects"]] == ["step", "step"]
    assert len(loaded) == 1
