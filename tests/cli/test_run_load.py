"""Loading a compiled spec whose Python side fails (issue 18, item 21), in-process:
whatever the user's module raises at import, ``load_module`` turns it into a
diagnostic at the spec's import, never an exception of another kind."""

from __future__ import annotations

import builtins
import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcec.compiler import compile_source
from mcec.run.runner import LoadError, load_module
from mcec.span import SourceFile


def _raisable(cls: type) -> bool:
    if not (isinstance(cls, type) and issubclass(cls, Exception)) or issubclass(cls, Warning):
        return False
    try:
        cls("message")
    except Exception:
        return False
    return True


EXCEPTIONS = sorted(
    (name for name, value in vars(builtins).items() if _raisable(value) and name != "ExceptionGroup"),
)
_COUNTER = itertools.count()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("modules")
    sys.path.insert(0, str(path))
    return path


@settings(max_examples=40, deadline=None)
@given(
    exception=st.sampled_from(EXCEPTIONS),
    message=st.text(max_size=30),
    broken_str=st.booleans(),
    before=st.integers(min_value=0, max_value=5),
)
def test_whatever_a_module_raises_at_import_is_a_diagnostic_at_the_import(
    folder: Path, exception: str, message: str, broken_str: bool, before: int
) -> None:
    name = f"user_module_{next(_COUNTER)}"
    raised = f"raise {exception}({message!r})"
    if broken_str:  # an exception whose str() raises
        raised = f"class Broken({exception}):\n    def __str__(self) -> str:\n        raise ValueError('no')\n\n\nraise Broken({message!r})"
    text = "x = 1\n" * before + "def f(v: int) -> int:\n    return v\n\n" + raised + "\n"
    (folder / f"{name}.py").write_text(text)
    raise_line = next(n for n, line in enumerate(text.splitlines(), start=1) if line.startswith("raise "))
    spec = f"import {name} as m\n\nfn f : int -> int = m.f\n\npipeline p : int -> int = f;\n"
    result = compile_source(SourceFile("load.mce", spec))
    assert result.program is not None and result.generated is not None, result.diagnostics
    with pytest.raises(LoadError) as caught:
        load_module(result.program, result.generated)
    diagnostic = caught.value.diagnostic
    assert diagnostic.code == "MCE007" and diagnostic.span.line == 1
    assert diagnostic.message.startswith(f"importing `{name}` failed: ")
    assert ("Broken" if broken_str else getattr(builtins, exception).__name__) in diagnostic.message
    assert diagnostic.help is not None and diagnostic.help.startswith("raised at ")
    assert diagnostic.help.endswith(f"{name}.py:{raise_line}")


HOSTILE_IMPL = '''\
from dataclasses import dataclass
from typing import Never

from agentmonad import Ok, Outcome


class Hostile(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


@dataclass(frozen=True)
class S:
    n: int = 0


def boom(state: S, value: int) -> Outcome[S, Never, int]:
    raise Hostile()
'''


def test_run_reports_a_step_raising_an_exception_whose_str_raises(tmp_path: Path) -> None:
    """The runtime makes it a Defect; `mcec run` must render that Defect, not crash (exit 3)."""
    import subprocess
    import sys

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "app" / "impl.py").write_text(HOSTILE_IMPL, encoding="utf-8")
    (tmp_path / "h.mce").write_text(
        "from app.impl import S\nimport app.impl as impl\nstate S\nstep boom : int -> int = impl.boom\n"
        "pipeline p : int -> int = boom;\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "mcec", "run", "h.mce", "p", "--input", "1"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert '"defect"' in done.stdout and "Traceback" not in done.stderr and "internal compiler error" not in done.stderr
