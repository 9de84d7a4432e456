"""Nothing is lost: concurrent builds, stale temporaries, an unusable ``.mcec``,
``fmt`` through links, outputs that would collide (issue 18, items 16–20).

Builds side by side, and a build waiting on another's lock, are real ``python -m mcec``
subprocesses; what a single command does to the files (``fmt`` through links, an unusable
``.mcec``) runs it in this process (``mcec_in_process``: the same ``main``, without an
interpreter's start; ``fmt`` and ``build`` keep real subprocesses here and in tests/tools/test_fmt.py).
"""

from __future__ import annotations

import os
import stat
import string
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcec.cli.output import is_stale_temporary, temporary_name, write_module

SPEC = """\
import app.impl as impl

fn show : int -> str = impl.show

pipeline p : int -> str = show;
"""

#: ``mcec_in_process`` (tests/conftest.py): ``run(*args, cwd=FOLDER)``.
McecRun = Callable[..., subprocess.CompletedProcess[str]]

IMPL = '''\
def show(value: int) -> str:
    return f"<{value}>"
'''


def mcec(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=project, capture_output=True, text=True, env=env, timeout=300
    )


def _project(root: Path, specs: int) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "__init__.py").write_text("")
    (root / "app" / "impl.py").write_text(IMPL)
    for n in range(specs):
        (root / "app" / f"s{n}.mce").write_text(SPEC)
    return root


def _no_internal_error(done: subprocess.CompletedProcess[str]) -> None:
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "internal compiler error" not in output, output


# ---------------------------------------------------------------- item 16: concurrent builds


def test_two_concurrent_builds_both_succeed_and_a_users_lookalike_file_survives(tmp_path: Path) -> None:
    project = _project(tmp_path, 30)
    notes = project / "app" / ".s1_mce.py.notes.tmp"  # the old loose cleanup pattern matched this
    notes.write_text("my notes\n")
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
    command = [sys.executable, "-m", "mcec", "build", "--no-mypy", "--force", "."]
    for _ in range(4):
        runs = [
            subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        results = [(run.wait(timeout=300), *run.communicate()) for run in runs]
        for status, stdout, stderr in results:
            assert status == 0, stdout + stderr
            assert "30 compiled, 0 up to date, 0 failed" in stdout
        assert notes.read_text() == "my notes\n"
    leftovers = [p.name for p in project.rglob("*.tmp") if p != notes]
    assert not leftovers
    assert len(list((project / "app").glob("s*_mce.py"))) == 30


def test_a_build_waits_while_another_holds_the_lock(tmp_path: Path) -> None:
    import fcntl

    project = _project(tmp_path, 2)
    (project / ".mcec").mkdir()
    with open(project / ".mcec" / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(project)}
        waiting = subprocess.Popen(
            [sys.executable, "-m", "mcec", "build", "--no-mypy", "."],
            cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        line = waiting.stderr.readline() if waiting.stderr is not None else ""
        assert "waiting for another build of . to finish" in line
        assert waiting.poll() is None  # still blocked on the lock
    out, err = waiting.communicate(timeout=300)
    assert waiting.returncode == 0 and "2 compiled" in out, out + err


# ---------------------------------------------------------------- item 16: which temporaries may go

_NAME_CHARS = string.ascii_letters + string.digits + "._-"


def _lookalikes(target: str) -> st.SearchStrategy[str]:
    """File names near the temporary name form: the old loose pattern, broken forms, live writers."""
    middle = st.text(_NAME_CHARS, min_size=0, max_size=20)
    live = st.sampled_from([os.getpid(), os.getppid(), 1])
    hexes = st.text("0123456789abcdef", min_size=8, max_size=8)
    return st.one_of(
        middle.map(lambda m: f".{target}.{m}.tmp"),
        st.builds(lambda pid, tag: temporary_name(target, pid, tag), live, hexes),
        st.builds(lambda m, tag: f".{target}.mcec-{m}-{tag}.tmp", middle, hexes),
        st.text(_NAME_CHARS, min_size=1, max_size=30).filter(lambda n: n not in {".", ".."}),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_lookalikes("s1_mce.py"), min_size=1, max_size=8, unique=True))
def test_writing_a_module_never_removes_a_file_it_cannot_prove_is_its_own_stale_temporary(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("out")
    names = [n for n in names if n != "s1_mce.py"]
    for name in names:
        (folder / name).write_text("user data\n")
    write_module(folder / "s1_mce.py", "# Generated by mcec (test)\n")
    survivors = sorted(p.name for p in folder.iterdir() if p.name != "s1_mce.py")
    # only a temporary of the exact form whose writer is gone may go (a random name can be one)
    assert survivors == sorted(n for n in names if not is_stale_temporary(n, "s1_mce.py"))
    assert all(n in survivors for n in names if not n.endswith(".tmp") or "mcec-" not in n)


def test_a_dead_writers_temporary_is_removed(tmp_path: Path) -> None:
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(finished.stdout)
    leftover = tmp_path / temporary_name("s1_mce.py", dead)
    leftover.write_text("half a module")
    other = tmp_path / temporary_name("s2_mce.py", dead)  # another target's: not this write's business
    other.write_text("half another module")
    write_module(tmp_path / "s1_mce.py", "# Generated by mcec (test)\n")
    assert not leftover.exists() and other.exists()


# ---------------------------------------------------------------- item 18: an unusable .mcec


def test_build_with_mcec_a_file_is_a_diagnostic(tmp_path: Path, mcec_in_process: McecRun) -> None:
    project = _project(tmp_path, 1)
    (project / ".mcec").write_text("not a folder\n")
    done = mcec_in_process("build", "--no-mypy", cwd=project)
    _no_internal_error(done)
    assert done.returncode == 2
    assert "error[MCE006]" in done.stdout and "`.mcec` is a file" in done.stdout
    assert (project / ".mcec").read_text() == "not a folder\n"


def test_build_state_that_cannot_be_saved_still_reports_everything(tmp_path: Path, mcec_in_process: McecRun) -> None:
    project = _project(tmp_path, 1)
    (project / "app" / "broken.mce").write_text("pipeline q : int -> int = nowhere;\n")
    (project / ".mcec" / "build.json").mkdir(parents=True)  # os.replace onto a folder fails, even for root
    done = mcec_in_process("build", "--no-mypy", cwd=project)
    _no_internal_error(done)
    assert done.returncode == 2
    assert "error[MCE002]: unknown name `nowhere`" in done.stdout  # collected before the save failed
    assert "error[MCE006]" in done.stdout and "cannot save the build state" in done.stdout
    assert "1 compiled, 0 up to date, 1 failed" in done.stdout
    assert (project / "app" / "s0_mce.py").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_build_with_a_read_only_mcec_is_a_diagnostic(tmp_path: Path) -> None:
    project = _project(tmp_path, 1)
    assert mcec(project, "build", "--no-mypy").returncode == 0
    (project / "app" / "s0.mce").write_text(SPEC + "\n")  # changed: must be rebuilt and recorded
    state = project / ".mcec"
    state.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        done = mcec(project, "build", "--no-mypy")
    finally:
        state.chmod(stat.S_IRWXU)
    _no_internal_error(done)
    assert done.returncode == 2 and "error[MCE006]" in done.stdout


# ---------------------------------------------------------------- item 17: fmt writes through links

UNFORMATTED = "fn show:int->str=impl.show\npipeline p:int->str=show;\n"
FORMATTED = "fn show : int -> str = impl.show\npipeline p : int -> str = show;\n"


@pytest.mark.parametrize("kind", ["relative", "absolute", "chain", "other-folder"])
def test_fmt_formats_the_file_a_symlink_points_to_and_keeps_the_link(tmp_path: Path, kind: str, mcec_in_process: McecRun) -> None:
    real = tmp_path / "specs" / "real.mce"
    real.parent.mkdir()
    real.write_text(UNFORMATTED)
    real.chmod(0o640)
    link = tmp_path / ("specs" if kind != "other-folder" else ".") / "link.mce"
    if kind == "relative":
        link.symlink_to("real.mce")
    elif kind == "absolute":
        link.symlink_to(real)
    elif kind == "chain":
        (tmp_path / "specs" / "middle.mce").symlink_to("real.mce")
        link.symlink_to("middle.mce")
    else:
        link.symlink_to("specs/real.mce")
    done = mcec_in_process("fmt", str(link.relative_to(tmp_path)), cwd=tmp_path)
    _no_internal_error(done)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and real.read_text() == FORMATTED
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert not [p for p in tmp_path.rglob(".*") if ".mcec-" in p.name]


def test_fmt_of_a_folder_writes_through_the_links_in_it(tmp_path: Path, mcec_in_process: McecRun) -> None:
    (tmp_path / "real.mce").write_text(UNFORMATTED)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "link.mce").symlink_to("../real.mce")
    done = mcec_in_process("fmt", "specs", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "specs" / "link.mce").is_symlink() and (tmp_path / "real.mce").read_text() == FORMATTED


def test_fmt_keeps_hard_links_together(tmp_path: Path, mcec_in_process: McecRun) -> None:
    first = tmp_path / "a.mce"
    first.write_text(UNFORMATTED)
    second = tmp_path / "b.mce"
    os.link(first, second)
    done = mcec_in_process("fmt", "a.mce", cwd=tmp_path)
    _no_internal_error(done)
    assert done.returncode == 0, done.stderr
    assert first.read_text() == second.read_text() == FORMATTED
    assert first.stat().st_ino == second.stat().st_ino and first.stat().st_nlink == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.mce", "b.mce"]  # the backup is gone
