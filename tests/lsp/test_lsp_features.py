"""``mcec lsp``'s answers over stdio: hover, definition, references, completion, code actions,
formatting, document symbols and semantic tokens, on the examples and on a test project.

The tests of this module share one server (a module-scoped client): starting one per test was
most of the module's time. Each test works in its own project folder (or on an example, opened
again), so what an earlier test left open does not change its answers.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsp_helpers import AGENT, ROOT, change, diagnostics, open_spec, position
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

RESEARCH = ROOT / "examples" / "research" / "research.mce"
RESEARCH_TEXT = RESEARCH.read_text(encoding="utf-8")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=[sys.executable, "-m", "mcec", "lsp"]))
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """One ``mcec lsp`` for the tests of this module, initialised once."""
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


def _doc(path: Path) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=path.resolve().as_uri())


async def _hover(client: LanguageClient, path: Path, at: lsp.Position) -> str:
    found = await client.text_document_hover_async(lsp.HoverParams(text_document=_doc(path), position=at))
    assert found is not None and isinstance(found.contents, lsp.MarkupContent)
    return found.contents.value


async def _definition(client: LanguageClient, path: Path, at: lsp.Position) -> list[lsp.Location]:
    found = await client.text_document_definition_async(lsp.DefinitionParams(text_document=_doc(path), position=at))
    assert isinstance(found, list)
    return [x for x in found if isinstance(x, lsp.Location)]


# ---------------------------------------------------------------- hover


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_shows_a_steps_type_and_the_state(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    text = await _hover(client, RESEARCH, position(RESEARCH_TEXT, "step plan_action >>=", inside=6))
    assert "step plan_action : str -> ToolCall ! LLMError" in text
    assert "state: `AgentState`" in text


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_names_a_streaming_llm_step_so(client: LanguageClient) -> None:
    briefing = ROOT / "examples" / "briefing" / "briefing.mce"
    await open_spec(client, briefing)
    text = briefing.read_text(encoding="utf-8")
    hovered = await _hover(client, briefing, position(text, "retry(2, on=LLMUnavailable, backoff=0.5) summarize", inside=45))
    assert "stream llm summarize : Briefing -> Summary ! LLMFailed | LLMUnavailable" in hovered


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_shows_a_pipelines_checked_type(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    text = await _hover(client, RESEARCH, position(RESEARCH_TEXT, "pipeline lookup", inside=10))
    assert "pipeline lookup : SearchArgs -> str ! ToolFailed | ToolUnavailable" in text


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_shows_the_type_of_an_expression(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    text = await _hover(client, RESEARCH, position(RESEARCH_TEXT, "match {", inside=1))
    assert "match : AddArgs | Answer | SearchArgs -> str | Turn ! Timeout | ToolFailed | ToolUnavailable | LLMError" in text


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_a_diagnostic_gives_its_help_and_explanation(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    text = AGENT.replace("ask >>= look", "aks >>= look")
    spec.write_text(text, encoding="utf-8")
    await open_spec(client, spec)
    shown = await _hover(client, spec, position(text, "aks"))
    assert "**MCE002** (error): unknown name `aks`" in shown
    assert "help: did you mean `ask`?" in shown
    assert "`mcec explain MCE002`:" in shown


# ---------------------------------------------------------------- definition and references


@pytest.mark.asyncio(loop_scope="module")
async def test_definition_of_a_step_is_its_declaration(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    [found] = await _definition(client, RESEARCH, position(RESEARCH_TEXT, ">>= execute_tool", inside=5))
    assert found.uri == RESEARCH.resolve().as_uri()
    assert found.range.start == position(RESEARCH_TEXT, "execute_tool :", inside=0)


@pytest.mark.asyncio(loop_scope="module")
async def test_definition_of_an_implementation_is_the_python_function(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    [found] = await _definition(client, RESEARCH, position(RESEARCH_TEXT, "impl.plan_action", inside=7))
    impl = ROOT / "examples" / "research" / "impl.py"
    assert found.uri == impl.resolve().as_uri()
    line = impl.read_text(encoding="utf-8").splitlines()[found.range.start.line]
    assert line.startswith("def plan_action(")


@pytest.mark.asyncio(loop_scope="module")
async def test_definition_of_an_imported_class_is_the_class(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    [found] = await _definition(client, RESEARCH, position(RESEARCH_TEXT, "-> ToolCall", inside=4))
    impl = ROOT / "examples" / "research" / "impl.py"
    assert found.uri == impl.resolve().as_uri()
    assert impl.read_text(encoding="utf-8").splitlines()[found.range.start.line].startswith("class ToolCall")


@pytest.mark.asyncio(loop_scope="module")
async def test_definition_of_a_template_is_the_file(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    [found] = await _definition(client, RESEARCH, position(RESEARCH_TEXT, '"decide.j2"', inside=3))
    assert found.uri == (ROOT / "examples" / "research" / "decide.j2").resolve().as_uri()


@pytest.mark.asyncio(loop_scope="module")
async def test_definition_of_a_used_pipeline_is_in_the_other_spec(client: LanguageClient) -> None:
    meta = ROOT / "examples" / "meta" / "meta.mce"
    text = meta.read_text(encoding="utf-8")
    await open_spec(client, meta)
    [found] = await _definition(client, meta, position(text, ") investigate", inside=3))
    specialists = ROOT / "examples" / "meta" / "specialists.mce"
    assert found.uri == specialists.resolve().as_uri()
    other = specialists.read_text(encoding="utf-8").splitlines()[found.range.start.line]
    assert "pipeline investigate" in other


@pytest.mark.asyncio(loop_scope="module")
async def test_references_list_every_use(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    found = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=_doc(RESEARCH),
            position=position(RESEARCH_TEXT, "fn hits_text", inside=4),
            context=lsp.ReferenceContext(include_declaration=True),
        )
    )
    assert found is not None
    # every `hits_text` but the Python path `impl.hits_text` (that is a Python name)
    assert len(found) == RESEARCH_TEXT.count("hits_text") - RESEARCH_TEXT.count("impl.hits_text") == 3


# ---------------------------------------------------------------- completion


async def _complete(client: LanguageClient, path: Path, text: str, at: lsp.Position) -> list[lsp.CompletionItem]:
    change(client, path.resolve().as_uri(), 2, text)
    found = await client.text_document_completion_async(lsp.CompletionParams(text_document=_doc(path), position=at))
    assert isinstance(found, lsp.CompletionList)
    return found.items


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_offers_the_steps_that_fit_first(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    await open_spec(client, spec)
    typing = AGENT.replace("ask >>= look >>= show;", "ask >>= ")
    items = await _complete(client, spec, typing, position(typing, "ask >>= ", inside=8))
    by_label = {item.label: item for item in items}
    assert by_label["look"].detail == "step : Query -> Found ! Oops"
    best = sorted(items, key=lambda i: i.sort_text or i.label)[0]
    assert best.label == "look"  # takes the Query `ask` gives
    assert {"par", "match", "retry", "catch"} <= set(by_label)


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_at_the_start_of_a_line_offers_declaration_keywords(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    await open_spec(client, spec)
    typing = AGENT + "pi"
    items = await _complete(client, spec, typing, position(typing, "\npi", inside=3))
    assert {"pipeline", "step", "fn", "llm", "toolbox", "async", "stream"} <= {i.label for i in items}


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_in_a_signature_offers_types(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    await open_spec(client, spec)
    typing = AGENT + "fn more : Fo"
    items = await _complete(client, spec, typing, position(typing, ": Fo", inside=4))
    assert {"Found", "Query", "str", "list"} <= {i.label for i in items}


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_in_a_template_offers_the_inputs_fields(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    await open_spec(client, spec)
    typing = AGENT + 'model m = openai "gpt"\nllm tell : Query -> str = m "about {{ '
    items = await _complete(client, spec, typing, position(typing, "{{ ", inside=3))
    assert {"topic", "depth", "state"} <= {i.label for i in items}


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_in_a_streaming_llm_offers_types_and_the_inputs_fields(client: LanguageClient, project: Path) -> None:
    """`stream llm` (docs/language.md §14) is an llm declaration to completion too."""
    spec = project / "agent.mce"
    await open_spec(client, spec)
    typing = AGENT + 'model m = openai "gpt"\nstream llm tell : Qu'
    items = await _complete(client, spec, typing, position(typing, ": Qu", inside=4))
    assert {"Found", "Query", "str"} <= {i.label for i in items}
    typing = AGENT + 'model m = openai "gpt"\nstream llm tell : Query -> str = m "about {{ '
    items = await _complete(client, spec, typing, position(typing, "{{ ", inside=3))
    assert {"topic", "depth", "state"} <= {i.label for i in items}


#: What a template over a `Query` may read in the test project (the spec has a `state`).
QUERY_VARIABLES = {"topic", "depth", "state"}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    "declared",
    ['ask tell : Query -> str = "about {{ ', 'model m = openai "gpt"\nllm tell : Query -> str = m "about {{ '],
    ids=["ask", "llm"],
)
async def test_completion_in_an_inline_template_being_typed_offers_the_inputs_fields_only(
    client: LanguageClient, project: Path, declared: str
) -> None:
    """An ask's template is read as an llm's (docs/language.md §15): inside its `{{`, the question
    type's fields and `state`, not the spec's steps, pipelines or keywords."""
    spec = project / "agent.mce"
    await open_spec(client, spec)
    typing = AGENT + declared
    items = await _complete(client, spec, typing, position(typing, "{{ ", inside=3))
    assert {i.label for i in items} == QUERY_VARIABLES


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(
    "declared",
    ['ask tell : Query -> str = """about\n{{ }} at {{ depth }}"""\n', 'model m = openai "gpt"\nllm tell : Query -> str = m """about\n{{ }} at {{ depth }}"""\n'],
    ids=["ask", "llm"],
)
async def test_completion_in_a_multiline_template_of_a_spec_that_parses_offers_the_inputs_fields_only(
    client: LanguageClient, project: Path, declared: str
) -> None:
    """Where the template lies is read from the spec's tree (the cursor's line is not the head's)."""
    spec = project / "agent.mce"
    uri = spec.resolve().as_uri()
    await open_spec(client, spec)
    text = AGENT + declared
    change(client, uri, 2, text)
    await diagnostics(client, uri)  # checked: the server's tree is this text's
    found = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=_doc(spec), position=position(text, "{{ }}", inside=3))
    )
    assert isinstance(found, lsp.CompletionList)
    assert {i.label for i in found.items} == QUERY_VARIABLES


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_in_spawn_offers_toolboxes(client: LanguageClient) -> None:
    meta = ROOT / "examples" / "meta" / "meta.mce"
    text = meta.read_text(encoding="utf-8")
    await open_spec(client, meta)
    typing = text + "\npipeline again : PlanRequest -> str = spawn("
    items = await _complete(client, meta, typing, position(typing, "= spawn(", inside=8))
    assert [i.label for i in items] == ["specialists"]


# ---------------------------------------------------------------- code actions


async def _actions(client: LanguageClient, path: Path, text: str, around: str) -> list[lsp.CodeAction]:
    uri = path.resolve().as_uri()
    change(client, uri, 2, text)
    await diagnostics(client, uri, lambda d: any(x.severity == lsp.DiagnosticSeverity.Error for x in d))
    at = position(text, around, inside=0)
    found = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=_doc(path),
            range=lsp.Range(start=at, end=at),
            context=lsp.CodeActionContext(diagnostics=[]),
        )
    )
    assert found is not None
    return [a for a in found if isinstance(a, lsp.CodeAction)]


def _apply(text: str, action: lsp.CodeAction, uri: str) -> str:
    """``text`` with the action's edits made (from the last to the first)."""
    assert action.edit is not None and action.edit.changes is not None
    lines = text.split("\n")

    def offset(p: lsp.Position) -> int:
        return sum(len(line) + 1 for line in lines[: p.line]) + p.character

    for edit in sorted(action.edit.changes[uri], key=lambda e: offset(e.range.start), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def _fixed_clean(client: LanguageClient, path: Path, text: str) -> None:
    """The fixed text checks without errors."""
    uri = path.resolve().as_uri()
    change(client, uri, 3, text)
    found = await diagnostics(client, uri)
    assert [d for d in found if d.severity == lsp.DiagnosticSeverity.Error] == []


@pytest.mark.asyncio(loop_scope="module")
async def test_the_close_match_name_fixes_a_typo(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    await open_spec(client, spec)
    text = AGENT.replace("ask >>= look", "aks >>= look")
    [action] = await _actions(client, spec, text, "aks")
    assert action.title == "change to `ask`"
    await _fixed_clean(client, spec, _apply(text, action, spec.resolve().as_uri()))


@pytest.mark.asyncio(loop_scope="module")
async def test_the_missing_error_is_added_to_the_pipelines_errors(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    await open_spec(client, spec)
    text = AGENT.replace("pipeline answer : str -> str ! Oops =", "pipeline answer : str -> str ! Never =")
    [action] = await _actions(client, spec, text, "look >>=")
    fixed = _apply(text, action, spec.resolve().as_uri())
    assert "pipeline answer : str -> str ! Oops =" in fixed
    await _fixed_clean(client, spec, fixed)


MATCHING = AGENT + """\
fn count : Query -> str = impl.echo_query
pipeline pick : Query | Found -> str = match { Found => show };
"""


@pytest.mark.asyncio(loop_scope="module")
async def test_the_missing_match_arms_are_added(client: LanguageClient, project: Path) -> None:
    (project / "impl.py").write_text(
        (project / "impl.py").read_text(encoding="utf-8") + "\n\ndef echo_query(query: Query) -> str:\n    return query.topic\n",
        encoding="utf-8",
    )
    spec = project / "agent.mce"
    await open_spec(client, spec)
    [action] = await _actions(client, spec, MATCHING, "match {")
    fixed = _apply(MATCHING, action, spec.resolve().as_uri())
    assert "match { Found => show, Query => count }" in fixed
    await _fixed_clean(client, spec, fixed)


# ---------------------------------------------------------------- formatting, symbols, tokens


@pytest.mark.asyncio(loop_scope="module")
async def test_formatting_is_mcec_fmt(client: LanguageClient, project: Path) -> None:
    from mcec.span import SourceFile
    from mcec.tools.fmt import format_source

    spec = project / "agent.mce"
    messy = AGENT.replace("fn show     : Found -> str          = impl.show", "fn show:Found->str=impl.show")
    spec.write_text(messy, encoding="utf-8")
    await open_spec(client, spec)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(text_document=_doc(spec), options=lsp.FormattingOptions(tab_size=4, insert_spaces=True))
    )
    assert edits is not None and len(edits) == 1
    assert edits[0].new_text == format_source(SourceFile(str(spec), messy)).text
    assert edits[0].range.start == lsp.Position(line=0, character=0)


@pytest.mark.asyncio(loop_scope="module")
async def test_document_symbols_list_the_declarations(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    found = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(text_document=_doc(RESEARCH)))
    assert found is not None
    names = {s.name for s in found if isinstance(s, lsp.DocumentSymbol)}
    assert {"plan_action", "answer", "react", "decide", "planner", "search"} <= names


@pytest.mark.asyncio(loop_scope="module")
async def test_semantic_tokens_mark_names_keywords_and_comments(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    found = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(text_document=_doc(RESEARCH)))
    assert found is not None and len(found.data) % 5 == 0
    line = column = 0
    decoded = []
    lines = RESEARCH_TEXT.split("\n")
    for i in range(0, len(found.data), 5):
        delta_line, delta_column, length, kind, _ = found.data[i : i + 5]
        line += delta_line
        column = column + delta_column if delta_line == 0 else delta_column
        decoded.append((lines[line][column : column + length], kind))
    assert ("pipeline", 0) in decoded and ("plan_action", 1) in decoded and ("ToolCall", 2) in decoded
    assert any(text.startswith("# research.mce") and kind == 6 for text, kind in decoded)


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_after_an_incremental_recheck_still_has_the_checked_types(client: LanguageClient) -> None:
    await open_spec(client, RESEARCH)
    edited = RESEARCH_TEXT.replace("= add_numbers;", "=  add_numbers;")
    change(client, RESEARCH.resolve().as_uri(), 2, edited)
    assert await diagnostics(client, RESEARCH.resolve().as_uri()) == []
    text = await _hover(client, RESEARCH, position(edited, "match {", inside=1))
    assert "match : AddArgs | Answer | SearchArgs -> str | Turn" in text


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_in_a_template_file_offers_the_variables_of_its_llm_step(
    client: LanguageClient, project: Path
) -> None:
    spec = project / "agent.mce"
    spec.write_text(AGENT + 'model m = openai "gpt"\nllm tell : Query -> str = m file "tell.j2"\n', encoding="utf-8")
    template = project / "tell.j2"
    text = "Tell me about {{ "
    template.write_text(text, encoding="utf-8")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=template.resolve().as_uri(), language_id="jinja", version=1, text=text)
        )
    )
    found = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=_doc(template), position=lsp.Position(line=0, character=len(text)))
    )
    assert isinstance(found, lsp.CompletionList)
    assert {i.label for i in found.items} == {"topic", "depth", "state"}
    assert template.resolve().as_uri() not in client.diagnostics  # a template is not checked as a spec


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_in_a_template_file_offers_the_variables_of_its_ask(client: LanguageClient, project: Path) -> None:
    spec = project / "agent.mce"
    spec.write_text(AGENT + 'ask tell : Query -> str = file "tell.j2"\n', encoding="utf-8")
    template = project / "tell.j2"
    text = "Shall I tell about {{ "
    template.write_text(text, encoding="utf-8")
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(uri=template.resolve().as_uri(), language_id="jinja", version=1, text=text)
        )
    )
    found = await client.text_document_completion_async(
        lsp.CompletionParams(text_document=_doc(template), position=lsp.Position(line=0, character=len(text)))
    )
    assert isinstance(found, lsp.CompletionList)
    assert {i.label for i in found.items} == QUERY_VARIABLES


@pytest.mark.asyncio(loop_scope="module")
async def test_references_of_a_pipeline_include_the_open_specs_that_use_it(client: LanguageClient) -> None:
    meta = ROOT / "examples" / "meta" / "meta.mce"
    specialists = ROOT / "examples" / "meta" / "specialists.mce"
    meta_text, specialists_text = meta.read_text(encoding="utf-8"), specialists.read_text(encoding="utf-8")
    await open_spec(client, meta)
    await open_spec(client, specialists)

    async def references(path: Path, at: lsp.Position) -> set[tuple[str, int]]:
        found = await client.text_document_references_async(
            lsp.ReferenceParams(text_document=_doc(path), position=at, context=lsp.ReferenceContext(include_declaration=True))
        )
        assert found is not None
        return {(location.uri, location.range.start.line) for location in found}

    uses_in_meta = {(meta.resolve().as_uri(), i) for i, line in enumerate(meta_text.splitlines()) if "investigate" in line and not line.startswith("#")}
    declared = {(specialists.resolve().as_uri(), i) for i, line in enumerate(specialists_text.splitlines()) if line.startswith("pipeline investigate")}
    assert uses_in_meta and declared
    # from the declaration in specialists.mce, and from a use in meta.mce: the same places
    from_declaration = await references(specialists, position(specialists_text, "pipeline investigate", inside=10))
    from_use = await references(meta, position(meta_text, ") investigate", inside=3))
    assert uses_in_meta | declared <= from_declaration
    assert uses_in_meta | declared <= from_use


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_a_match_pattern_shows_what_the_arm_receives(client: LanguageClient, project: Path) -> None:
    (project / "impl.py").write_text(
        (project / "impl.py").read_text(encoding="utf-8") + "\n\ndef echo_query(query: Query) -> str:\n    return query.topic\n",
        encoding="utf-8",
    )
    spec = project / "agent.mce"
    text = AGENT + "fn count : Query -> str = impl.echo_query\npipeline pick : Query | Found -> str = match { Found => show, _ => count };\n"
    spec.write_text(text, encoding="utf-8")
    assert await open_spec(client, spec) == []
    shown = await _hover(client, spec, position(text, "_ => count", inside=0))
    assert "_ => Query -> str" in shown and "this arm receives `Query`" in shown
