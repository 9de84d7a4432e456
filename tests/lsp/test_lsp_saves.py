"""``mcec lsp``'s full check on save: at most one mypy per spec at a time, a newer save kills
the running one, and the findings shown are those of the last text saved.

The server runs mypy's child on a Python that ``MCEC_MYPY_PYTHON`` names: here a wrapper that
notes when each mypy process starts and ends (its pid) and whether another one was running
then (an exclusive ``flock`` the running one holds: the kernel releases it when the process
dies, killed or not), and that waits for a gate file before it runs the real mypy, so that
the runs of the old server overlapped whatever the machine's speed. Nothing here measures time.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsp_helpers import AGENT, diagnostics, open_spec
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

#: The wrapper run as ``WRAPPER -c CODE ARGS…`` in place of ``python -c CODE ARGS…``.
WRAPPER = '''#!{python}
import fcntl, os, sys, time

LOG, LOCK, GATE = {log!r}, {lock!r}, {gate!r}


def note(line):
    with open(LOG, "a", encoding="utf-8") as log:  # one short appended line: written whole
        log.write(line + "\\n")


lock = open(LOCK, "a")
try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held until this process ends
    alone = "alone"
except BlockingIOError:
    alone = "overlapping"
note(f"start {{os.getpid()}} {{alone}}")
while not os.path.exists(GATE):
    time.sleep(0.01)
real_exit = os._exit


def noted_exit(status):  # the mypy child leaves with os._exit once it has printed its verdict
    note(f"end {{os.getpid()}}")
    real_exit(status)


os._exit = noted_exit
assert sys.argv[1] == "-c"
code, sys.argv, sys.path[0] = sys.argv[2], ["-c", *sys.argv[3:]], ""
exec(compile(code, "<mypy child>", "exec"), {{"__name__": "__main__"}})
'''

#: A Python implementation only mypy can judge (the checker cannot read a lambda's type).
LATE = "\n\nshow_late = lambda found: 3  # noqa: E731  (an int where the declaration says str)\n"


def _saved_text(shift: int) -> str:
    """The spec with ``shift`` blank lines before ``fn show``, bound to the lambda: mypy's finding
    (MCE100) is at ``fn show``'s line, which tells which text it was found in."""
    return AGENT.replace(
        "fn show     : Found -> str          = impl.show",
        "\n" * shift + "fn show     : Found -> str          = impl.show_late",
    )


def _line_of_show(text: str) -> int:
    return text[: text.index("fn show")].count("\n")


class Watch:
    """The wrapper's files: its log, its lock and its gate."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.log, self.lock, self.gate = folder / "runs.log", folder / "runs.lock", folder / "open"
        self.log.touch()
        self.python = folder / "python"
        self.python.write_text(
            WRAPPER.format(python=sys.executable, log=str(self.log), lock=str(self.lock), gate=str(self.gate)),
            encoding="utf-8",
        )
        self.python.chmod(self.python.stat().st_mode | stat.S_IXUSR)

    def lines(self) -> list[list[str]]:
        return [line.split() for line in self.log.read_text(encoding="utf-8").splitlines()]

    async def started(self, count: int) -> None:
        """Wait until ``count`` mypy processes have started (a guard, not a measure: 240 s)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 240
        while sum(1 for line in self.lines() if line[0] == "start") < count:
            assert loop.time() < deadline, f"fewer than {count} mypy runs started: {self.lines()}"
            await asyncio.sleep(0.02)


@pytest.fixture
def watch(tmp_path: Path) -> Watch:
    return Watch(tmp_path / "watch")


@pytest_asyncio.fixture
async def watched_client(watch: Watch) -> AsyncIterator[LanguageClient]:
    """A fresh ``mcec lsp`` whose mypy runs through the wrapper."""
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "mcec", "lsp"],
        server_env={**os.environ, "MCEC_MYPY_PYTHON": str(watch.python)},
    )
    client = await config.start()
    await client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield client
    watch.gate.touch()  # whatever is still waiting may end
    await client.shutdown_session()
    await client.stop()


def _save(client: LanguageClient, spec: Path, version: int, text: str) -> None:
    """What an editor sends when the user edits the spec to ``text`` and saves it."""
    uri = spec.resolve().as_uri()
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    spec.write_text(text, encoding="utf-8")
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))


@pytest.mark.asyncio
async def test_saves_in_a_row_run_one_mypy_at_a_time_and_show_the_last_texts_findings(
    watched_client: LanguageClient, project: Path, watch: Watch
) -> None:
    client = watched_client
    (project / "impl.py").write_text((project / "impl.py").read_text(encoding="utf-8") + LATE, encoding="utf-8")
    spec = project / "agent.mce"
    uri = spec.resolve().as_uri()
    first = _saved_text(0)
    spec.write_text(first, encoding="utf-8")
    await open_spec(client, spec)
    _save(client, spec, 2, first)
    await watch.started(1)  # the first save's mypy runs (held at the gate)
    texts = [_saved_text(shift) for shift in range(1, 10)]
    for version, text in enumerate(texts, start=3):
        _save(client, spec, version, text)
    # the server reads messages in order: once this is answered, every save above was handled
    await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    watch.gate.touch()
    last = _line_of_show(texts[-1])
    shown = await diagnostics(
        client, uri, lambda d: any(x.code == "MCE100" for x in d), timeout=240
    )
    assert [d.range.start.line for d in shown if d.code == "MCE100"] == [last]
    runs = watch.lines()
    starts = [pid for kind, pid, *_ in runs if kind == "start"]
    ends = [pid for kind, pid, *_ in runs if kind == "end"]
    assert all(line[2] == "alone" for line in runs if line[0] == "start"), runs  # never two at once
    assert starts[0] not in ends  # the first save's mypy was killed, not waited for
    assert ends == [starts[-1]], runs  # only the last one ran to its end: the last text's
    with pytest.raises(ProcessLookupError):
        os.kill(int(starts[0]), 0)  # and it is gone


@pytest.mark.asyncio
async def test_closing_a_spec_kills_its_running_mypy(watched_client: LanguageClient, project: Path, watch: Watch) -> None:
    client = watched_client
    (project / "impl.py").write_text((project / "impl.py").read_text(encoding="utf-8") + LATE, encoding="utf-8")
    spec = project / "agent.mce"
    uri = spec.resolve().as_uri()
    await open_spec(client, spec)
    _save(client, spec, 2, _saved_text(1))
    await watch.started(1)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    [(_, pid, _)] = watch.lines()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 240  # a guard: the kill was sent before the answer above
    while _alive(int(pid)):
        assert loop.time() < deadline, "the closed spec's mypy still runs"
        await asyncio.sleep(0.02)
    watch.gate.touch()
    assert watch.lines() == [["start", pid, "alone"]]  # it never ran to its end


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie not yet reaped by the server counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat_file:
            return stat_file.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
