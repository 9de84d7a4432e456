"""A ``file`` template that is not a small regular file is MCE023, never read whole (issue 29, item 11).

A template that was a symlink to ``/dev/zero`` made ``mcec check``, ``pytest --mce`` and
the hatch hook (all of them the checker's :func:`mcec.check.llm.read_template`) allocate
until memory ran out; a named pipe would block forever. The checker now asks the open
file what it is and reads at most one byte over ``MAX_TEMPLATE_BYTES``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from mcec.check import check
from mcec.diagnostics import Diagnostic
from mcec.span import SourceFile
from mcec.syntax import parse

SPEC = """\
model fast = openai "gpt-4o-mini"
llm ask : str -> str = fast file "prompt.j2"
pipeline a : str -> str = ask;
"""

#: The limit docs/language.md §10 gives (mcec.check.llm.MAX_TEMPLATE_BYTES).
MAX_TEMPLATE_BYTES = 1 << 20


def _checked(folder: Path) -> list[Diagnostic]:
    spec = folder / "s.mce"
    spec.write_text(SPEC, encoding="utf-8")
    source = SourceFile(str(spec), SPEC)
    parsed = parse(source)
    assert parsed.module is not None
    return [d for d in check(parsed.module, source).diagnostics if d.is_error]


def test_a_template_linked_to_dev_zero_is_mce023(tmp_path: Path) -> None:
    (tmp_path / "prompt.j2").symlink_to("/dev/zero")
    [found] = _checked(tmp_path)
    assert found.code == "MCE023"
    assert found.message == "the template file `prompt.j2` of `ask` is not a regular file (it is a character device)"


def test_a_template_over_the_limit_is_mce023(tmp_path: Path) -> None:
    (tmp_path / "prompt.j2").write_bytes(b"x" * (MAX_TEMPLATE_BYTES + 1))
    [found] = _checked(tmp_path)
    assert found.code == "MCE023"
    assert found.message == f"the template file `prompt.j2` of `ask` is too big ({MAX_TEMPLATE_BYTES + 1:,} bytes)"
    assert "1 MiB" in (found.help or "")


def test_a_template_at_the_limit_is_read(tmp_path: Path) -> None:
    (tmp_path / "prompt.j2").write_bytes(b"x" * (MAX_TEMPLATE_BYTES - 12) + b"{{ value }}\n")
    assert _checked(tmp_path) == []


def test_a_template_that_is_a_named_pipe_does_not_block(tmp_path: Path) -> None:
    """Opening a FIFO for reading waits for a writer: the file is opened without blocking."""
    os.mkfifo(tmp_path / "prompt.j2")
    [found] = _checked(tmp_path)
    assert found.message.endswith("is not a regular file (it is a named pipe)")


def test_a_template_that_is_not_utf8_is_mce023(tmp_path: Path) -> None:
    (tmp_path / "prompt.j2").write_bytes(b"Say \xff{{ value }}")
    [found] = _checked(tmp_path)
    assert found.message == "the template file `prompt.j2` of `ask` is not UTF-8 text (byte 0xff at offset 4)"


def _limited() -> None:
    """In the child: 2 GiB of address space, so reading /dev/zero whole fails fast instead of
    taking the machine's memory (mypy and the checker need far less)."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


@pytest.mark.skipif(sys.platform != "linux", reason="/dev/zero and RLIMIT_AS as on Linux")
def test_mcec_check_of_a_folder_with_a_dev_zero_template_reports_it(tmp_path: Path) -> None:
    """`mcec check DIR` as a user runs it, under a memory and time guard so a regression fails."""
    (tmp_path / "prompt.j2").symlink_to("/dev/zero")
    (tmp_path / "s.mce").write_text(SPEC, encoding="utf-8")
    (tmp_path / "big.mce").write_text(SPEC.replace("prompt.j2", "big.j2"), encoding="utf-8")
    (tmp_path / "big.j2").write_bytes(b"x" * (3 * MAX_TEMPLATE_BYTES))
    ran = subprocess.run(
        [sys.executable, "-m", "mcec", "check", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,
    )
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr and "internal compiler error" not in ran.stdout + ran.stderr
    output = ran.stdout + ran.stderr
    assert "error[MCE023]: the template file `prompt.j2` of `ask` is not a regular file (it is a character device)" in output
    assert f"error[MCE023]: the template file `big.j2` of `ask` is too big ({3 * MAX_TEMPLATE_BYTES:,} bytes)" in output
