"""``mcec lsp`` end to end over stdio: diagnostics (open, edit, save, across specs), hover,
definition, references, completion, code actions, formatting, symbols, semantic tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import AGENT, ROOT, change, diagnostics, open_spec, position
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

RESEARCH = ROOT / "examples" / "research" / "research.mce"


def _doc(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=path.resolve().as_uri())


@pytest.mark.asyncio
async def test_an_example_opens_clean(client: LanguageClient) -> None:
    assert await open_spec(client, RESEARCH) == []


@pytest.mark.asyncio
async def test_diagnostics_follow_edits_with_the_codes_spans_and_help_of_mcec_check(
    client: LanguageClient, project: Path
) -> None:
    spec = project / "agent.mce"
    uri = spec.resolve().as_uri()
    assert await open_spec(client, spec) == []
    typo = AGENT.replace("ask >>= look", "aks >>= look")
    change(client, uri, 2, typo)
    published = await diagnostics(client, uri, lambda d: bool(d))
    [found] = [d for d in published if d.severity == lsp.DiagnosticSeverity.Error]
    assert found.code == "MCE002"
    assert found.message == "unknown name `aks`\nhelp: did you mean `ask`?"
    assert found.range == lsp.Range(start=position(typo, "aks", inside=0), end=position(typo, "aks", inside=3))
    change(client, uri, 3, AGENT)
    assert await diagnostics(client, uri) == []


@pytest.mark.asyncio
async def test_a_syntax_error_is_reported_as_typed(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    uri = spec.resolve().as_uri()
    await open_spec(client, spec)
    change(client, uri, 2, AGENT + "pipeline broken : str -> str = ask >>= ;\n")
    published = await diagnostics(client, uri, lambda d: bool(d))
    assert [d.code for d in published] == ["MCE001"]


@pytest.mark.asyncio
async def test_save_runs_the_full_check_with_mypy(client: LanguageClient, project: Path) -> None:
    # What only mypy sees: an implementation the checker cannot read statically (a lambda).
    (project / "impl.py").write_text(
        (project / "impl.py").read_text(encoding="utf-8")
        + "\n\nshow2 = lambda found: 3  # noqa: E731  (mypy infers it; the checker cannot read it)\n",
        encoding="utf-8",
    )
    text = AGENT.replace("fn show     : Found -> str          = impl.show", "fn show     : Found -> str          = impl.show2")
    spec = project / "agent.mce"
    spec.write_text(text, encoding="utf-8")
    uri = spec.resolve().as_uri()
    fast = await open_spec(client, spec)
    assert all(d.code != "MCE100" for d in fast)
    client.diagnostics.pop(uri, None)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=_doc(spec)))
    full = await diagnostics(client, uri, lambda d: any(x.code == "MCE100" for x in d), timeout=240)
    assert any(d.code == "MCE100" for d in full)


OTHER = """\
from impl import Memo, Query
import impl

state Memo

fn ask : str -> Query = impl.ask
pipeline asking : str -> Query = ask;
"""

USER = """\
from impl import Memo, Oops, Query, Found
from other_mce import asking
import impl

state Memo
error Oops

step look   : Query -> Found ! Oops = impl.look
fn show     : Found -> str          = impl.show

pipeline answer : str -> str ! Oops = asking >>= look >>= show;
"""


@pytest.mark.asyncio
async def test_a_used_spec_changing_under_an_open_one_checks_it_again(client: LanguageClient, project: Path) -> None:
    other, user = project / "other.mce", project / "user.mce"
    other.write_text(OTHER, encoding="utf-8")
    user.write_text(USER, encoding="utf-8")
    assert await open_spec(client, user) == []
    assert await open_spec(client, other) == []
    # `asking` now gives a str: `look` (which takes a Query) no longer fits after it, in user.mce
    broken = OTHER.replace("pipeline asking : str -> Query = ask;", "fn echo : str -> str = impl.echo\npipeline asking : str -> str = echo;")
    broken = broken.replace("fn ask : str -> Query = impl.ask\n", "")
    change(client, other.resolve().as_uri(), 2, broken)
    other.write_text(broken, encoding="utf-8")
    client.diagnostics.pop(user.resolve().as_uri(), None)
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=_doc(other)))
    found = await diagnostics(client, user.resolve().as_uri(), lambda d: bool(d))
    assert [d.code for d in found] == ["MCE010"]
    # and back, when the file changes outside the editor (closed there: an open spec's text is the editor's)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=_doc(other)))
    other.write_text(OTHER, encoding="utf-8")
    client.diagnostics.pop(user.resolve().as_uri(), None)
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=other.resolve().as_uri(), type=lsp.FileChangeType.Changed)]
        )
    )
    assert await diagnostics(client, user.resolve().as_uri()) == []


@pytest.mark.asyncio
async def test_an_unsaved_used_spec_is_what_an_open_one_is_checked_against(client: LanguageClient, project: Path) -> None:
    """A used spec open in the editor is read as the editor holds it: its unsaved edits reach the
    specs using it without a save, and undoing them does too."""
    other, user = project / "other.mce", project / "user.mce"
    other.write_text(OTHER, encoding="utf-8")
    user.write_text(USER, encoding="utf-8")
    assert await open_spec(client, user) == []
    assert await open_spec(client, other) == []
    broken = OTHER.replace("pipeline asking : str -> Query = ask;", "fn echo : str -> str = impl.echo\npipeline asking : str -> str = echo;")
    broken = broken.replace("fn ask : str -> Query = impl.ask\n", "")
    client.diagnostics.pop(user.resolve().as_uri(), None)
    change(client, other.resolve().as_uri(), 2, broken)  # not saved: the file on disk is as it was
    found = await diagnostics(client, user.resolve().as_uri(), lambda d: bool(d))
    assert [d.code for d in found] == ["MCE010"]
    assert other.read_text(encoding="utf-8") == OTHER
    client.diagnostics.pop(user.resolve().as_uri(), None)
    change(client, other.resolve().as_uri(), 3, OTHER)
    assert await diagnostics(client, user.resolve().as_uri()) == []


@pytest.mark.asyncio
async def test_a_diagnostic_kept_by_a_recheck_is_shown_where_it_moved(client: LanguageClient, project: Path) -> None:
    # An edit inside `first` re-checks only `first`: the diagnostic of `second` is the previous
    # check's, moved with its declaration (relative spans), and published at its new place.
    spec = project / "agent.mce"
    uri = spec.resolve().as_uri()
    text = AGENT + "pipeline first : str -> str ! Oops = ask >>= look >>= show;\npipeline second : str -> Query = aks;\n"
    [before] = await open_spec(client, spec, text)
    assert before.code == "MCE002" and before.range.start == position(text, "aks", inside=0)
    for version, edited in enumerate(
        [
            text.replace("= ask >>= look >>= show;\npipeline second", "= ask >>=\n\n  look >>= show;\npipeline second"),
            text.replace("first : str -> str ! Oops = ask", "first : str -> str ! Oops =   ask"),
            text,
        ],
        start=2,
    ):
        change(client, uri, version, edited)
        [moved] = await diagnostics(client, uri, lambda d: bool(d))
        assert moved.code == "MCE002"
        assert moved.range == lsp.Range(start=position(edited, "aks", inside=0), end=position(edited, "aks", inside=3))
