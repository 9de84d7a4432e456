"""How mypy's findings about a generated module become MCE100 diagnostics at the spec (mcec/codegen/mypy_check.py)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from mcec.codegen.mypy_check import GeneratedFile, _Outcome, in_spec_terms, run_mypy
from mcec.compiler import compile_source
from mcec.span import SourceFile

SPEC = "import builtins\n\nfn show : str -> str = builtins.str\npipeline p : str -> str = show;\n"


def _generated(tmp_path: Path, folder: str = "now") -> GeneratedFile:
    spec = f"{folder}/main.mce"
    result = compile_source(SourceFile(spec, SPEC), index=False)
    assert result.generated is not None, result.diagnostics
    target = tmp_path / folder / "main_mce.py"
    target.parent.mkdir()
    target.write_text(result.generated.code, encoding="utf-8")
    return GeneratedFile(target, spec, result.generated.source_map, temporary=True)


def _line_of(generated: GeneratedFile, text: str) -> int:
    return next(i for i, line in enumerate(generated.path.read_text().splitlines(), 1) if text in line)


def test_findings_mypy_replays_under_an_older_path_are_placed_at_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mypy replays a cached module's findings under the path the module had when they were found
    (an earlier ``mcec check``'s temporary folder): they are this module's all the same."""
    generated = _generated(tmp_path)
    line = _line_of(generated, "show: Fn")
    older = tmp_path / "earlier-run" / "0" / "main_mce.py"
    output = f'{older}:{line}:1: error: Incompatible types in assignment (expression has type "int", variable has type "str")  [assignment]\n'
    monkeypatch.setattr("mcec.codegen.mypy_check._mypy_process", lambda args, search, cancel=None: _Outcome(output, "", 1))
    [found] = run_mypy([generated], tmp_path / "cache")
    assert (found.code, found.span.path, found.span.line) == ("MCE100", "now/main.mce", 3)
    assert "_mce.py" not in found.message and "earlier-run" not in found.message


def test_a_finding_about_no_module_of_the_run_is_not_guessed_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generated = _generated(tmp_path)
    output = f"{tmp_path / 'other_mce.py'}:3:1: error: Name \"x\" is not defined  [name-defined]\n"
    monkeypatch.setattr("mcec.codegen.mypy_check._mypy_process", lambda args, search, cancel=None: _Outcome(output, "", 1))
    [found] = run_mypy([generated], tmp_path / "cache")
    assert found.message.startswith("mypy could not check the generated code")  # said at the spec's start


def test_a_python_for_mypy_that_cannot_run_is_said_at_the_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``MCEC_MYPY_PYTHON`` naming no program: one MCE100 at the spec saying so, not a traceback."""
    monkeypatch.setenv("MCEC_MYPY_PYTHON", str(tmp_path / "no-such-python"))
    [found] = run_mypy([_generated(tmp_path)], tmp_path / "cache")
    assert found.code == "MCE100" and found.span.path == "now/main.mce"
    assert found.message == f"mypy could not check the generated code: cannot run {tmp_path / 'no-such-python'} (No such file or directory)"


def test_modules_of_one_name_are_checked_in_runs_of_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mcec check a b` with a/main.mce and b/main.mce: mypy takes a/main_mce.py and b/main_mce.py (no
    packages) for one module named twice and refuses to check them together ("Duplicate module")."""
    first, second = _generated(tmp_path, "a"), _generated(tmp_path, "b")
    calls: list[list[str]] = []

    def mypy_run(args: list[str], search: list[str], cancel: object = None) -> _Outcome:
        files = [a for a in args if a.endswith(".py")]
        calls.append(files)
        if len({Path(f).name for f in files}) != len(files):
            return _Outcome("", f'{files[1]}: error: Duplicate module named "main_mce"', 2)
        return _Outcome(f'{files[0]}:{_line_of(first, "show: Fn")}:1: error: Name "x" is not defined  [name-defined]\n', "", 1)

    monkeypatch.setattr("mcec.codegen.mypy_check._mypy_process", mypy_run)
    found = run_mypy([first, second], tmp_path / "cache")
    assert calls == [[str(first.path)], [str(second.path)]]
    assert [(d.span.path, d.span.line) for d in found] == [("a/main.mce", 3), ("b/main.mce", 3)]


@pytest.mark.parametrize(
    "got",
    ["Ok[app.Chat, app.Draft] | Err[app.Chat, app.E]", "Err[app.Chat, app.E] | Ok[app.Chat, app.Draft]"],
    ids=["ok-first", "err-first"],
)
def test_outcomes_are_said_as_the_spec_writes_them(got: str) -> None:
    """A step's result type reads ``Draft ! E`` whichever order mypy prints the union in."""
    message = in_spec_terms(
        f'Incompatible types in assignment (expression has type "Callable[[app.Chat, app.Turn], {got}]", '
        'variable has type "Callable[[app.Chat, app.Turn], Ok[app.Chat, app.Review] | Err[app.Chat, app.E]]")  [assignment]'
    )
    assert "it is Callable[[Chat, Turn], Draft ! E]" in message and "needs Callable[[Chat, Turn], Review ! E]" in message
    assert "Ok[" not in message and "Err[" not in message and "[assignment]" not in message


@pytest.mark.parametrize(
    ("got", "said"),
    [("tuple[type[app.errors.Internal]]", "Internal"), ("tuple[type[app.E1], type[app.E2]]", "E1 | E2")],
    ids=["one", "two"],
)
def test_an_escaping_error_is_said_without_stray_brackets(got: str, said: str) -> None:
    """mypy's finding that a step may raise an error outside its declaration names the error
    classes as the spec writes them: no ``type[…]``'s bracket left over (issue 29, item 13)."""
    message = in_spec_terms(
        f'Argument 4 to "raised" has incompatible type "{got}"; '
        'expected "tuple[type[agentmonad.errors.AgentError], ...]"  [arg-type]'
    )
    assert message == f"mypy: this step may fail with {said}, where only AgentError may escape"


def test_mypy_runs_apart_from_the_callers_process(tmp_path: Path) -> None:
    """Issue 36: mypy, run in the caller's process, cost a cold ``mcec check`` 1.6x the CPU of plain
    mypy: it left its heap for the caller to collect and free, and its collector thresholds
    (200,000) in the caller's process (an editor's, pytest's). Run in a child process, it leaves
    the caller's collector as it was, and its findings still come back."""
    generated = _generated(tmp_path)
    text = generated.path.read_text()
    generated.path.write_text(text.replace("= builtins.str", "= builtins.len", 1))  # a fault only mypy sees
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        found = run_mypy([generated], tmp_path / "cache")
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
    assert found and all(d.code == "MCE100" for d in found), found
