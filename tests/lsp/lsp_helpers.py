"""Helpers of the language server's tests: ``mcec lsp`` started as a real process, driven over
stdio by pytest-lsp's client (no mocked protocol). The fixtures are made available by conftest.py.

``project`` writes a small package of its own (a spec, its Python side, a template) into a
temporary folder, so that tests may edit and save specs without touching the examples.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

ROOT = Path(__file__).resolve().parents[2]

#: The Python side of the test project.
IMPL = '''\
from dataclasses import dataclass

from agentmonad import Ok, Outcome


class Oops(Exception):
    """A step failed."""


class Late(Exception):
    """A step was too late."""


@dataclass
class Memo:
    notes: list[str]


@dataclass
class Query:
    topic: str
    depth: int


@dataclass
class Found:
    text: str


class Missing:
    pass


def ask(text: str) -> Query:
    return Query(text, 1)


def look(state: Memo, query: Query) -> Outcome[Memo, Oops, Found]:
    return Ok(Found(query.topic), state)


def echo(text: str) -> str:
    return text


def show(found: Found) -> str:
    return found.text


def late(found: Found) -> Found:
    return found


def never(missing: Missing) -> str:
    return ""
'''

#: A clean spec of the test project.
AGENT = """\
from impl import Memo, Oops, Query, Found
import impl

state Memo
error Oops

fn ask      : str -> Query          = impl.ask
step look   : Query -> Found ! Oops = impl.look
fn show     : Found -> str          = impl.show

pipeline answer : str -> str ! Oops = ask >>= look >>= show;
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with ``impl.py`` and ``agent.mce`` (the spec above)."""
    (tmp_path / "impl.py").write_text(IMPL, encoding="utf-8")
    (tmp_path / "agent.mce").write_text(AGENT, encoding="utf-8")
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mcec", "lsp"]))
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A client that has initialised a fresh ``mcec lsp``."""
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def open_spec(client: LanguageClient, path: Path, text: str | None = None) -> list[lsp.Diagnostic]:
    """Open ``path`` (with ``text``, else its content) and return the diagnostics published for it."""
    uri = path.resolve().as_uri()
    client.diagnostics.pop(uri, None)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id="mce", version=1, text=path.read_text(encoding="utf-8") if text is None else text
            )
        )
    )
    return await diagnostics(client, uri)


async def diagnostics(
    client: LanguageClient,
    uri: str,
    until: Callable[[Sequence[lsp.Diagnostic]], bool] = lambda _: True,
    timeout: float = 30.0,
) -> list[lsp.Diagnostic]:
    """The diagnostics published for ``uri``, once they are there and satisfy ``until``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        found = client.diagnostics.get(uri)
        if found is not None and until(found):
            return list(found)
        if loop.time() > deadline:
            raise AssertionError(f"no diagnostics for {uri} within {timeout}s (last: {found})")
        await asyncio.sleep(0.02)


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    """Replace the whole text of an open spec (clearing what was published for it)."""
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def position(text: str, needle: str, occurrence: int = 0, inside: int = 1) -> lsp.Position:
    """The position ``inside`` characters into the ``occurrence``-th ``needle`` of ``text``."""
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    at += inside
    line = text.count("\n", 0, at)
    return lsp.Position(line=line, character=at - (text.rfind("\n", 0, at) + 1))
