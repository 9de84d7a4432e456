"""Parser: every valid spec in ``tests/syntax/cases/parse`` parses cleanly, with a golden AST dump."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mcec import syntax as s
from mcec.syntax import parse
from mcec.syntax.grammar import load_grammar
from mcec.span import SourceFile, Span

CASES = Path(__file__).parent / "cases" / "parse"


def _at(span: Span) -> str:
    return f"@{span.line}:{span.column}-{span.end_line}:{span.end_column}"


def dump(node: object, indent: int = 0) -> list[str]:
    """A readable, indented dump of a syntax node (one field per line)."""
    pad = "  " * indent
    if isinstance(node, s.Name):
        return [f"{pad}Name {node.text!r} {_at(node.span)}"]
    if isinstance(node, s.QualName):
        return [f"{pad}QualName {node.dotted!r} {_at(node.span)}"]
    if isinstance(node, s.Comment):
        return [f"{pad}Comment {node.text!r} {_at(node.span)}"]
    assert dataclasses.is_dataclass(node), node
    lines = [f"{pad}{type(node).__name__} {_at(node.span)}"]  # type: ignore[attr-defined]
    for item in dataclasses.fields(node):
        if item.name in ("span", "path", "keyword", "bases"):
            continue
        value = getattr(node, item.name)
        label = f"{pad}  {item.name}:"
        if isinstance(value, Span):
            lines.append(f"{label} {_at(value)}")
        elif isinstance(value, tuple):
            if not value:
                lines.append(f"{label} ()")
            else:
                lines.append(label)
                for element in value:
                    lines.extend(dump(element, indent + 2))
        elif dataclasses.is_dataclass(value):
            lines.append(label)
            lines.extend(dump(value, indent + 2))
        else:
            lines.append(f"{label} {value!r}")
    if isinstance(node, s.KeywordNode):
        lines.append(f"{pad}  keyword: {_at(node.keyword)}")  # where the keyword is
    return lines


def case_files() -> list[Path]:
    return sorted(CASES.glob("*.mce"))


@pytest.mark.parametrize("path", case_files(), ids=lambda p: p.stem)
def test_valid_spec_parses(path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    text = path.read_bytes().decode("utf-8")
    result = parse(SourceFile(path.name, text))
    assert result.diagnostics == ()
    assert result.module is not None
    golden(path.with_suffix(".ast.txt"), "\n".join(dump(result.module)) + "\n")


def test_grammar_is_found() -> None:
    assert "pipeline_decl" in load_grammar()


def _only_pipeline_body(text: str) -> s.Expr | s.Block:
    result = parse(SourceFile("t.mce", "pipeline p : A -> B = " + text + ";"))
    assert result.diagnostics == ()
    assert result.module is not None
    decl = result.module.decls[0]
    assert isinstance(decl, s.PipelineDecl)
    return decl.body


def test_bind_is_flat_and_parentheses_leave_no_node() -> None:
    body = _only_pipeline_body("a >>= (b >>= c) >>= ((d))")
    assert isinstance(body, s.Bind)
    assert [p.name for p in body.parts if isinstance(p, s.Ref)] == ["a", "b", "c", "d"]


def test_precedence_orelse_catch_bind() -> None:
    body = _only_pipeline_body("a >>= b catch E => h orelse f")
    assert isinstance(body, s.OrElse)
    assert isinstance(body.body, s.Catch)
    assert isinstance(body.body.body, s.Bind)


def test_catch_chains_nest_left() -> None:
    body = _only_pipeline_body("a catch E => h catch F | G => k")
    assert isinstance(body, s.Catch) and isinstance(body.body, s.Catch)
    assert len(body.errors) == 2


def test_one_branch_par_and_zero_limit_are_kept() -> None:
    body = _only_pipeline_body("par <a> >>= each(limit=0) b")
    assert isinstance(body, s.Bind)
    par, each = body.parts
    assert isinstance(par, s.Par) and len(par.branches) == 1
    assert isinstance(each, s.Each) and each.limit == 0 and each.limit_span is not None


def test_spans_point_at_the_text() -> None:
    text = "pipeline p : A -> B = a >>= bb;"
    result = parse(SourceFile("t.mce", text))
    assert result.module is not None
    decl = result.module.decls[0]
    assert isinstance(decl, s.PipelineDecl)
    assert text[decl.span.start : decl.span.end] == text
    assert isinstance(decl.body, s.Bind)
    assert text[decl.body.span.start : decl.body.span.end] == "a >>= bb"


def test_deep_parentheses_leave_no_node_and_parse() -> None:
    depth = 10_000
    body = _only_pipeline_body("(" * depth + "a" + ")" * depth)
    assert isinstance(body, s.Ref)


def test_nesting_up_to_the_limit_parses_and_one_more_level_is_mce001() -> None:
    """Expressions and types nest at most MAX_DEPTH levels (the later phases recurse)."""
    from mcec.syntax import MAX_DEPTH

    at_limit = "par <a, " * (MAX_DEPTH - 1) + "a" + ">" * (MAX_DEPTH - 1)
    body = _only_pipeline_body(at_limit)
    assert isinstance(body, s.Par)
    deeper = "local " * MAX_DEPTH + "a"
    result = parse(SourceFile("t.mce", f"pipeline p : A -> A = {deeper};"))
    assert result.module is None
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "MCE001" and f"more than {MAX_DEPTH} levels" in diagnostic.message
    # the innermost part is the one reported
    assert diagnostic.span.start == len("pipeline p : A -> A = ") + len("local ") * MAX_DEPTH
    deep_type = "list[" * MAX_DEPTH + "A" + "]" * MAX_DEPTH
    result = parse(SourceFile("t.mce", f"fn f : {deep_type} -> A = m.f"))
    assert result.module is None and "this type nests" in result.diagnostics[0].message


def test_a_number_too_long_for_python_is_a_diagnostic() -> None:
    """4,301 digits would make int() raise (Python's int-string limit); numbers have at most 18."""
    result = parse(SourceFile("t.mce", "pipeline p : A -> A = each(limit=" + "9" * 4_301 + ") a;"))
    assert result.module is None
    (diagnostic,) = result.diagnostics
    assert diagnostic.code == "MCE019" and "4,301 digits" in diagnostic.message


def test_long_chain_is_one_node() -> None:
    body = _only_pipeline_body(" >>= ".join(["a"] * 100_000))
    assert isinstance(body, s.Bind) and len(body.parts) == 100_000


def _syntax_classes() -> list[type]:
    from mcec.syntax import tree

    return [v for v in vars(tree).values() if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == tree.__name__]


@pytest.mark.parametrize("cls", [c for c in _syntax_classes() if c is not s.Module], ids=lambda c: c.__name__)
def test_nodes_are_frozen_and_end_with_their_span(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    assert names[-1] == "span" and issubclass(cls, s.Node)
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


def test_a_node_repr_shows_its_span_not_its_source() -> None:
    source = SourceFile("a.mce", "ab\n  cd" + "x" * 10_000)
    ref = s.Ref("cd", Span(source, 5, 7))
    assert repr(ref) == "Ref(name='cd', span=Span('a.mce', 2:3-2:5))"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.name = "ab"  # type: ignore[misc]
