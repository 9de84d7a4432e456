"""Hostile input to the compiler: nothing crashes, nothing is injected, nothing is lost.

- fuzzing: valid specs with token-level mutations, raw bytes, invalid UTF-8,
  NUL bytes, megabyte lines, very deep nesting, many declarations — through
  ``mcec check`` and ``mcec compile``: diagnostics and exit 1, or success;
  never a traceback;
- injection: hostile text wherever a spec can hold text never becomes code:
  the generated module's top-level statements are exactly the expected kinds;
- paths: unwritable output folders, symlinks, users' own files: a clear
  diagnostic, nothing overwritten, no temporary files left behind.
"""

from __future__ import annotations

import ast
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from generated_shape import DESCRIPTOR_CALLS, HANDLE_CALLS, is_descriptor, is_handle_class
from spec_gen import mutate, specs

from mcec.compiler import compile_source
from mcec.span import SourceFile



def shape_problems(code: str) -> list[str]:
    """Top-level statements other than imports, Site constants, typed bindings, async defs, the
    spec's text a module with a toolbox holds (``SPEC = "…"``, docs/language.md §12) and the
    ``SPEC_INFO`` descriptor (§7), and the typed handles' classes (§13)."""
    problems = []
    for statement in ast.parse(code).body:
        if isinstance(statement, ast.Import | ast.ImportFrom | ast.AsyncFunctionDef) or is_descriptor(statement):
            continue
        if is_handle_class(statement):
            continue
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
            if all(isinstance(a, ast.Constant) for a in statement.value.args):
                continue
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant):
            if isinstance(statement.value.value, str) and all(
                isinstance(t, ast.Name) and t.id.startswith("SPEC") for t in statement.targets
            ):
                continue
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.value, ast.Attribute | ast.Name | ast.Call):
            continue
        problems.append(ast.dump(statement))
    return problems


def compile_text(text: str, name: str = "fuzz.mce") -> None:
    """Compile in-process: either diagnostics with an error, or a well-shaped module."""
    result = compile_source(SourceFile(name, text))
    if result.generated is None:
        assert not result.ok, "no code and no error"
        return
    assert not shape_problems(result.generated.code)
    compile(result.generated.code, name, "exec")


@st.composite
def mutated_specs(draw: st.DrawFn) -> str:
    return mutate(draw(specs(max_depth=2)), draw(st.randoms(use_true_random=False)), max_mutations=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated_specs())
def test_mutated_specs_never_crash_the_compiler(text: str) -> None:
    compile_text(text)


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_random_text_never_crashes_the_compiler(text: str) -> None:
    compile_text(text)


def mcec(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}
    )


#: ``mcec ARGS`` in a folder, in this process (tests/conftest.py's ``mcec_in_process``): for the inputs
#: of size and depth and the paths tests, which look at what was written where and said, not at the
#: process (the byte-level inputs and the kill test keep real ones).
Run = Callable[..., subprocess.CompletedProcess[str]]


NASTY_INPUTS: dict[str, bytes] = {
    "random_bytes": bytes(random.Random(7).randrange(256) for _ in range(4000)),
    "invalid_utf8": b"pipeline p : int -> int = a;\n\xff\xfe\n",
    "nul_bytes": b"state\x00 S\nstep a : int -> int = m.a\x00\n",
    "megabyte_line": b"pipeline p : int -> int = " + b" >>= ".join([b"a"] * 200_000) + b";\n",
    "deep_parens": b"fn a : int -> int = m.a\npipeline p : int -> int = " + b"(" * 100_000 + b"a" + b")" * 100_000 + b";\n",
    "deep_par": b"fn a : int -> int = m.a\npipeline p : int -> int = " + b"par <" * 20_000 + b"a, a" + b">, a" * 19_999 + b">;\n",
    "many_declarations": b"import m\n" + b"".join(b"fn f%d : int -> int = m.f\n" % i for i in range(5_000))
    + b"pipeline p : int -> int = " + b" >>= ".join(b"f%d" % i for i in range(5_000)) + b";\n",
}


#: The inputs whose bytes reach the output of a real ``python -m mcec`` (undecodable bytes and control
#: characters quoted to a pipe); the others (size and depth) run in this process (tests/conftest.py),
#: where an exception out of the compiler fails the test as a traceback would.
THROUGH_A_PROCESS = frozenset({"random_bytes", "invalid_utf8", "nul_bytes"})


@pytest.mark.parametrize("command", ["check", "compile"])
@pytest.mark.parametrize("name", sorted(NASTY_INPUTS))
def test_nasty_files_give_diagnostics_or_success_never_a_traceback(
    tmp_path: Path, name: str, command: str, mcec_in_process: Run
) -> None:
    spec = tmp_path / f"{name}.mce"
    spec.write_bytes(NASTY_INPUTS[name])
    args = [command, "--no-mypy", spec.name] if command == "compile" else [command, spec.name]
    done = mcec(*args, cwd=tmp_path) if name in THROUGH_A_PROCESS else mcec_in_process(*args, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "internal compiler error" not in done.stderr
    if done.returncode == 1:
        assert "error[MCE" in done.stdout
    generated = tmp_path / f"{name}_mce.py"
    if generated.exists():
        assert not shape_problems(generated.read_text())


HOSTILE_COMMANDS = [
    'python -c \\"import os\\"\\n\\"); import os; os.system(\\"rm -rf /\\")  #',
    "\\u202e\\u2066evil\\u2069 \\\\\\\\ \\t",
    '\\"\\"\\" triple \\"\\"\\"',
    "\\ud83d\\ude00 \\u0000",
]


@pytest.mark.parametrize("command", HOSTILE_COMMANDS)
def test_server_command_strings_cannot_inject_code(command: str) -> None:
    spec = (
        f'# """ ); import os; os.system("x") \u202e #\n'
        f'server evil = stdio "{command}"\n'
        "tool t : dict[str, Any] -> str = evil.run_it\n"
        "pipeline p : dict[str, Any] -> str ! ToolFailed | ToolUnavailable = t;\n"
    )
    result = compile_source(SourceFile("evil.mce", spec))
    assert result.generated is not None, result.diagnostics
    code = result.generated.code
    assert not shape_problems(code)
    tree = ast.parse(code)
    calls = {
        node.func.id
        for statement in tree.body
        if not isinstance(statement, ast.AsyncFunctionDef)
        for node in ast.walk(statement)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert calls <= {"Site", "StdioServer", "tool", "check_fresh", "Asks"} | DESCRIPTOR_CALLS | HANDLE_CALLS
    servers = [s for s in tree.body if isinstance(s, ast.Assign) and getattr(s.value.func, "id", "") == "StdioServer"]  # type: ignore[union-attr]
    assert len(servers) == 1
    # the command reaches the runtime exactly as the spec's string literal says
    import json

    assert servers[0].value.args[1].value == json.loads(f'"{command}"')  # type: ignore[union-attr,attr-defined]


@pytest.mark.parametrize(
    "name",
    ["ﬁle", "ａ", "Ω", "ℌ", "a\u200bb", "𝐚"],  # NFKC look-alikes and invisible characters
)
def test_non_ascii_names_are_rejected(name: str) -> None:
    spec = f"import m\nfn {name} : int -> int = m.f\npipeline p : int -> int = {name};\n"
    result = compile_source(SourceFile("names.mce", spec))
    assert not result.ok and result.generated is None
    assert any(d.code in ("MCE001", "MCE016") for d in result.diagnostics)


SPEC = "import m\nfn f : int -> int = m.f\npipeline p : int -> int = f;\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a.mce").write_text(SPEC)
    (tmp_path / "m.py").write_text("def f(value: int) -> int:\n    return value\n")  # the module the spec names
    return tmp_path


def test_unwritable_output_folder_is_a_diagnostic(project: Path, tmp_path: Path, mcec_in_process: Run) -> None:
    if os.geteuid() == 0:
        target = Path("/sys")  # read-only even for root
    else:
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o555)
    done = mcec_in_process("compile", "--no-mypy", "-o", str(target), "a.mce", cwd=project)
    assert done.returncode == 2 and "MCE006" in done.stdout and "Traceback" not in done.stderr


def test_symlinked_target_is_not_written_through(project: Path, tmp_path: Path, mcec_in_process: Run) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (project / "a_mce.py").symlink_to(victim)
    done = mcec_in_process("compile", "--no-mypy", "a.mce", cwd=project)
    assert done.returncode == 2 and "symbolic link" in done.stdout
    assert victim.read_text() == "precious"


def test_output_folder_elsewhere_works(project: Path, tmp_path_factory: pytest.TempPathFactory, mcec_in_process: Run) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = mcec_in_process("compile", "--no-mypy", "-o", str(elsewhere), "a.mce", cwd=project)
    assert done.returncode == 0, done.stdout
    assert (elsewhere / "a_mce.py").read_text().startswith("# Generated by mcec")


def test_kill_during_compile_leaves_old_or_new_file(project: Path) -> None:
    spec = project / "big.mce"
    steps = " >>= ".join(["f"] * 1500)
    spec.write_text(f"import m\nfn f : int -> int = m.f\npipeline p : int -> int = {steps};\n")
    target = project / "big_mce.py"
    assert mcec("compile", "--no-mypy", "big.mce", cwd=project).returncode == 0
    old = target.read_text()
    spec.write_text(spec.read_text().replace("pipeline p", "pipeline q"))
    rng = random.Random(3)
    for _ in range(3):
        process = subprocess.Popen([sys.executable, "-m", "mcec", "compile", "--no-mypy", "big.mce"], cwd=project)
        time.sleep(rng.uniform(0.2, 2.0))
        process.send_signal(signal.SIGKILL)
        process.wait()
        text = target.read_text()
        assert text == old or (text.startswith("# Generated by mcec") and "async def q(" in text and text.endswith("\n"))
        ast.parse(text)
    assert mcec("compile", "--no-mypy", "big.mce", cwd=project).returncode == 0
    assert not [p.name for p in project.iterdir() if p.name.endswith(".tmp")]
