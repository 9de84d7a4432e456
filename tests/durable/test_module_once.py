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


def test_an_element_handed_to_a_queue_is_an_effect_the_runs_event_sink_sees(tmp_path: Path) -> None:
    """Issue 42 (4, one door): a queued ``each`` element went to the journal past the effect seam,
    so no event sink saw it (`mcec run --durable --trace` drew no element). On SQLite, the run's
    process listening to its element queues itself."""
    from agentmonad.events import EffectEnded, EffectStarted, Event
    from mcec import durable

    spec = Path(__file__).parent / "elementbox" / "elements.mce"
    seen: list[tuple[str, str]] = []

    class Kinds:
        def emit(self, event: Event) -> None:
            if isinstance(event, EffectStarted | EffectEnded):
                seen.append((type(event).__name__, event.effect.kind))

    db = f"sqlite:///{tmp_path / 'runs.sqlite'}"
    report = durable.run(spec, "stateless", "[1, 2, 3]", db=db, run_id="told", elements=True, events=Kinds())
    assert report["value"] == [10, 20, 30], report
    assert sorted(seen) == sorted([("EffectStarted", "element"), ("EffectEnded", "element")] * 3)
