"""The front end's cost grows with the size of the spec, not with its square (issue 36, items 2-3).

What is timed lives in ``benchmarks/scaling_bench.py``; these tests pin the
shapes of the fixes, deterministically: each one failed before its fix.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcec.check.pyindex import PyModule, PythonIndex
from mcec.compiler import check_source
from mcec.span import SourceFile

FUNCTIONS = 300


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A package ``big.impl`` of :data:`FUNCTIONS` functions, and a spec of as many ``fn`` s naming them."""
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "__init__.py").write_text("")
    (tmp_path / "big" / "impl.py").write_text(
        "".join(f"def f{i}(value: int) -> int:\n    return value + {i}\n\n" for i in range(FUNCTIONS))
    )
    spec = "import big.impl as impl\nstate int\n" + "".join(
        f"fn f{i} : int -> int = impl.f{i}\n" for i in range(FUNCTIONS)
    )
    (tmp_path / "big.mce").write_text(spec)
    return tmp_path


def test_a_module_is_described_once_however_often_the_spec_names_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ``= impl.fN`` asks the index for the module ``big.impl``; its description (a tuple of
    all its names) was made anew per question, so N references into a module of N functions
    cost N² (10,000 declarations: 2 s of ``check --fast``)."""
    made: list[str] = []
    real_init = PyModule.__init__

    def counting_init(self: PyModule, path: str, names: tuple[str, ...]) -> None:
        made.append(path)
        real_init(self, path, names)

    monkeypatch.setattr(PyModule, "__init__", counting_init)
    index = PythonIndex([workspace])
    source = SourceFile(str(workspace / "big.mce"), (workspace / "big.mce").read_text())
    result = check_source(source, index=index)
    assert result.ok, result.diagnostics[:3]
    assert made.count("big.impl") == 1, f"big.impl described {made.count('big.impl')} times"
    assert index.module("big.impl") is index.module("big.impl")


def test_the_front_end_runs_without_the_cycle_collector(workspace: Path) -> None:
    """Parsing and checking build trees that live to the end and hold no cycles; a full collection
    walked them all again and again (a quarter of ``check --fast`` of 10,000 declarations). The
    collector is paused for the phases, and on again after them (where it then collects once)."""
    import gc

    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    source = SourceFile(str(workspace / "big.mce"), (workspace / "big.mce").read_text())
    assert gc.isenabled()
    for _ in range(3):
        index = PythonIndex([workspace])
        gc.callbacks.append(count)
        try:
            result = check_source(source, index=index)
        finally:
            gc.callbacks.remove(count)
        assert result.ok, result.diagnostics[:3]
        assert gc.isenabled()
    # at most the one the first allocation after re-enabling it triggers, per run (before: 79)
    assert len(collections) <= 3, f"{len(collections)} collections during three runs of the front end"
