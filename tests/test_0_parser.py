"""Parser: every valid spec in ``tests/cases/parse`` parses cleanly, with a golden AST dump."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mcec import syntax as s
from mcec.parser import load_grammar, parse
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
        if item.name in s.POSITION_FIELDS or item.name in ("span", "path"):
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
        lines.append(f"{pad}  keyword: {_at(node.keyword)}")  # a property: where the keyword is
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


def test_deep_parentheses_and_pars_parse() -> None:
    depth = 10_000
    body = _only_pipeline_body("(" * depth + "a" + ")" * depth)
    assert isinstance(body, s.Ref)
    body = _only_pipeline_body("par <a, " * depth + "a" + ">" * depth)
    assert isinstance(body, s.Par)


def test_long_chain_is_one_node() -> None:
    body = _only_pipeline_body(" >>= ".join(["a"] * 100_000))
    assert isinstance(body, s.Bind) and len(body.parts) == 100_000


def test_fast_constructors_build_ordinary_equal_objects() -> None:
    from mcec.construct import fast_constructor as _fast_constructor

    source = SourceFile("a.mce", "xabcd\n")
    make_span = _fast_constructor(Span)
    span = make_span(source, 1, 4)
    assert type(span) is Span and span == Span(source, 1, 4)
    assert hash(span) == hash(Span(source, 1, 4))
    assert (span.path, span.line, span.column, span.end_line, span.end_column) == ("a.mce", 1, 2, 1, 5)
    name = _fast_constructor(s.Name)("x", source, 1, 4)
    assert type(name) is s.Name and name == s.Name("x", source, 1, 4)
    assert hash(name) == hash(s.Name("x", SourceFile("a.mce", "xabcd\n"), 1, 4))
    assert name != s.Name("x", source, 1, 3) and name.span == span
    with pytest.raises(dataclasses.FrozenInstanceError):
        name.text = "y"  # type: ignore[misc]
    # Refused (a frozen slotted dataclass of Python 3.11 raises TypeError for a name that is not a field).
    with pytest.raises((AttributeError, TypeError)):
        name.span = span  # type: ignore[misc]


def _syntax_classes() -> list[type]:
    return [v for v in vars(s).values() if isinstance(v, type) and dataclasses.is_dataclass(v) and v.__module__ == s.__name__]


@pytest.mark.parametrize("cls", _syntax_classes(), ids=lambda c: c.__name__)
def test_every_syntax_class_takes_the_fast_path(cls: type) -> None:
    """The class switch of fast_constructor works for every node (it falls back silently when layouts differ)."""
    from mcec.construct import fast_constructor
    from mcec.fastinit import takes_fast_path

    assert takes_fast_path(fast_constructor(cls))


def test_the_parsers_constructors_take_the_fast_path() -> None:
    from mcec import construct
    from mcec.fastinit import takes_fast_path

    makers = [getattr(construct, name) for name in construct.__all__ if name.isupper() and not name.endswith("_BUILDER")]
    assert len(makers) == 19 and all(takes_fast_path(make) for make in makers)


@pytest.mark.parametrize("cls", [c for c in _syntax_classes() if c is not s.Module], ids=lambda c: c.__name__)
def test_nodes_keep_their_position_in_three_last_fields(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    assert names[-3:] == ["source", "start", "end"] and "span" not in names
    assert issubclass(cls, s.Node) and not [f for f in dataclasses.fields(cls) if f.name == "source" and f.repr]


def test_a_node_repr_shows_its_span_not_its_source() -> None:
    source = SourceFile("a.mce", "ab\n  cd" + "x" * 10_000)
    ref = s.Ref("cd", source, 5, 7)
    assert repr(ref) == "Ref(name='cd', span=Span('a.mce', 2:3-2:5))"
    qual = s.QualName((s.Name("cd", source, 5, 7),), source, 5, 7)
    assert repr(qual) == "QualName(parts=(Name(text='cd', span=Span('a.mce', 2:3-2:5)),), span=Span('a.mce', 2:3-2:5))"


def test_an_object_built_in_place_from_builder_class_is_the_frozen_node() -> None:
    """What the descent parser does with NAME_BUILDER and REF_BUILDER, instead of calling NAME and REF."""
    from mcec import construct
    from mcec.fastinit import builder_class

    source = SourceFile("a.mce", "ab cd")
    node = construct.NAME_BUILDER()
    node.text, node.source, node.start, node.end = "cd", source, 3, 5
    node.__class__ = s.Name
    assert type(node) is s.Name and node == construct.NAME("cd", source, 3, 5) == s.Name("cd", source, 3, 5)
    assert hash(node) == hash(s.Name("cd", source, 3, 5))
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.text = "ab"
    with pytest.raises(ValueError):
        builder_class(s.Name)  # the dataclass itself: no builder behind it


def test_a_fallback_is_detected() -> None:
    """takes_fast_path tells the two kinds of constructor apart (so the test above can fail)."""
    from mcec.fastinit import _compile_maker, takes_fast_path

    names = ["text", "source", "start", "end"]
    builder = type("_Unused", (), {"__slots__": tuple(names)})
    assert not takes_fast_path(_compile_maker(s.Name, names, builder, switch=False))
    assert takes_fast_path(_compile_maker(s.Name, names, builder, switch=True))
    assert not takes_fast_path(s.Name)


def test_the_descriptor_fallback_of_fast_constructors_builds_the_same_objects() -> None:
    from mcec.fastinit import _compile_maker

    source = SourceFile("a.mce", "xabcd\n")
    builder = type("_Unused", (), {"__slots__": ("source", "start", "end")})
    make_span = _compile_maker(Span, ["source", "start", "end"], builder, switch=False)
    span = make_span(source, 1, 4)
    assert type(span) is Span and span == Span(source, 1, 4) and span.end_column == 5
    with pytest.raises(dataclasses.FrozenInstanceError):
        span.start = 0  # type: ignore[misc]
