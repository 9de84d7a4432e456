"""The syntax of LLM steps (docs/language.md §10): `model`, `llm`, templates and `budget(N)`,
whose words stay soft — ordinary names everywhere else."""

from __future__ import annotations

from mcec import syntax as s
from mcec.span import SourceFile
from mcec.syntax import parse


def decls(text: str) -> list[s.Decl]:
    parsed = parse(SourceFile("t.mce", text))
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    return list(parsed.module.decls)


def test_model_and_llm_declarations() -> None:
    model, inline, triple, file = decls(
        'model fast = openai "gpt-4o-mini"\n'
        'llm a : T -> str = fast "Hi {{ name }}\\n"\n'
        'llm b : T -> A | B = fast """\n  one "two"\n  \\n three"""\n'
        'llm c : T -> str = fast file "prompts/c.j2"\n'
    )
    assert isinstance(model, s.ModelDecl) and model.model_id == "gpt-4o-mini" and model.provider.text == "openai"
    assert isinstance(inline, s.LlmDecl) and inline.template == s.Template("Hi {{ name }}\n", False, False, inline.template.span)
    assert isinstance(triple, s.LlmDecl) and triple.template.text == '\n  one "two"\n  \\n three' and triple.template.triple
    assert isinstance(file, s.LlmDecl) and file.template.is_file and file.template.text == "prompts/c.j2"
    assert isinstance(triple.output, s.TypeUnion) and triple.model.text == "fast"


def test_budget_is_a_prefix_combinator() -> None:
    (pipeline,) = decls("pipeline p : A -> B = budget(100) a >>= b;")
    assert isinstance(pipeline, s.PipelineDecl) and isinstance(pipeline.body, s.Bind)
    first = pipeline.body.parts[0]
    assert isinstance(first, s.Budget) and first.tokens == 100 and isinstance(first.body, s.Ref)


def test_the_new_words_are_soft() -> None:
    found = decls(
        "state S\n"
        "step model : A -> A = impl.model\n"
        "step llm : A -> A = impl.llm\n"
        "fn budget : A -> A = impl.budget\n"
        "fn openai : A -> A = impl.openai\n"
        "fn file : A -> A = impl.file\n"
        "pipeline p : A -> A = model >>= llm >>= budget >>= openai >>= file;\n"
    )
    assert [d.name.text for d in found[1:6] if isinstance(d, (s.StepDecl, s.FnDecl))] == [
        "model", "llm", "budget", "openai", "file"
    ]


def test_a_syntax_error_names_the_new_declaration_words() -> None:
    parsed = parse(SourceFile("t.mce", "stat S\n"))
    assert parsed.module is None
    message = parsed.diagnostics[0].message + (parsed.diagnostics[0].help or "")
    assert "`model`" in message and "`llm`" in message


def test_model_options_parse_to_names_and_values_as_written() -> None:
    (model, bare) = decls(
        'model fast = openai "gpt-4o" (temperature=0.5, max_tokens=64, system="Be \\"brief\\".",\n'
        '    base_url="http://127.0.0.1:8000/v1",)\n'
        'model plain = openai "x"\n'
    )
    assert isinstance(model, s.ModelDecl) and isinstance(bare, s.ModelDecl)
    assert [(o.name.text, o.value) for o in model.options] == [
        ("temperature", 0.5),
        ("max_tokens", 64),
        ("system", 'Be "brief".'),
        ("base_url", "http://127.0.0.1:8000/v1"),
    ]
    assert model.span.end == model.options[-1].span.end + 2  # the declaration ends at its `)`
    assert bare.options == ()
    # the option names are names, not words: `timeout=` is no combinator, `model=` no declaration
    (odd,) = decls('model m = openai "x" (timeout=3, model=1, file="f")')
    assert isinstance(odd, s.ModelDecl) and [o.name.text for o in odd.options] == ["timeout", "model", "file"]
