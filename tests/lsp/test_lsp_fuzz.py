"""A crash-free fuzz of ``mcec lsp``: random edits (as incremental changes, in UTF-16 positions)
to a real spec, each followed by hover, definition, completion, code action and symbols
requests; the server must answer every request, publish diagnostics for the final text, and
never log an internal error. One server for all examples, as an editor has."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_helpers import ROOT, diagnostics, open_spec
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

RESEARCH = ROOT / "examples" / "research" / "research.mce"
TEXT = RESEARCH.read_text(encoding="utf-8")
PIECES = [">>=", "step ", "match { ", "=> ", ", ", "}", "{", ";", "(", ")", "\n", " ", "par<", "\"", "{{ ", "|", "!", "é", "😀", "pipeline p : str -> str = ", "catch ", "orelse ", "#", "\t", "x"]

edits = st.lists(
    st.tuples(st.floats(0, 1), st.integers(0, 12), st.lists(st.sampled_from(PIECES), max_size=4).map("".join)),
    min_size=1,
    max_size=6,
)


def _position(text: str, offset: int) -> lsp.Position:
    line_start = text.rfind("\n", 0, offset) + 1
    before = text[line_start:offset]
    return lsp.Position(line=text.count("\n", 0, offset), character=len(before.encode("utf-16-le")) // 2)


@pytest.mark.asyncio
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=edits, cursor=st.floats(0, 1))
async def test_random_edits_never_crash_the_server(client: LanguageClient, changes: list[tuple[float, int, str]], cursor: float) -> None:
    uri = RESEARCH.resolve().as_uri()
    if uri not in client.diagnostics:
        await open_spec(client, RESEARCH)
    text = TEXT
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=0),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    document = lsp.TextDocumentIdentifier(uri=uri)
    for version, (where, removed, inserted) in enumerate(changes, start=1):
        start = int(where * len(text))
        end = min(len(text), start + removed)
        change = lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start=_position(text, start), end=_position(text, end)), text=inserted
        )
        text = text[:start] + inserted + text[end:]
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version), content_changes=[change]
            )
        )
        at = _position(text, int(cursor * len(text)))
        await client.text_document_hover_async(lsp.HoverParams(text_document=document, position=at))
        await client.text_document_definition_async(lsp.DefinitionParams(text_document=document, position=at))
        completions = await client.text_document_completion_async(lsp.CompletionParams(text_document=document, position=at))
        assert completions is not None
        await client.text_document_code_action_async(
            lsp.CodeActionParams(text_document=document, range=lsp.Range(start=at, end=at), context=lsp.CodeActionContext(diagnostics=[]))
        )
        assert await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=document)) is not None
        await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(text_document=document))
    # the final text is checked and its diagnostics published (the server is alive and caught up)
    client.diagnostics.pop(uri, None)
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=len(changes) + 1),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await diagnostics(client, uri)
    errors = [m.message for m in client.log_messages if "internal error" in m.message]
    assert errors == []
