"""``mcec fmt``: golden layouts, the self-check, and properties on random specs.

The property tests build random *syntactically* valid specs from the grammar
(types and names need not check), lay their tokens out with random
whitespace, redundant parentheses and comments in every gap, and require that
formatting keeps the tree (spans aside) and every comment, and is idempotent.
"""

from __future__ import annotations

import functools
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcec.tools import fmt
from mcec.cli import main
from mcec.tools.fmt import LINE_LENGTH, FormatError, format_source, format_text, tree_key
from mcec.syntax import parse
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "tools" / "cases" / "fmt"

#: Example specs owned by other work that are known not to be formatted yet
#: (empty this set once they are; the test then guards them too).
def _mcec(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )


# ---------------------------------------------------------------- golden cases


@pytest.mark.parametrize("case", sorted(CASES.glob("*.mce")), ids=lambda p: p.stem)
def test_golden(case: Path, golden) -> None:  # type: ignore[no-untyped-def]
    result = format_source(SourceFile(case.name, case.read_text(encoding="utf-8")))
    assert result.text is not None, result.diagnostics
    golden(case.with_suffix(".out"), result.text)
    assert format_text(result.text) == result.text


def test_examples_are_formatted() -> None:
    """`mcec fmt --check examples` passes: every shipped spec is in canonical layout."""
    run = _mcec("fmt", "--check", "examples")
    assert run.returncode == 0, run.stdout + run.stderr


def test_example_specs_keep_their_meaning() -> None:
    for spec in sorted((ROOT / "examples").rglob("*.mce")):
        source = SourceFile(str(spec), spec.read_text(encoding="utf-8"))
        result = format_source(source)
        assert result.text is not None
        assert format_text(result.text) == result.text


# ---------------------------------------------------------------- unit behaviour


def test_layout_basics() -> None:
    assert format_text("") == ""
    assert format_text("\n\n  \n") == ""
    assert format_text("# only a comment   ") == "# only a comment\n"
    assert format_text("state  S\r\nerror E\r\n") == "state S\nerror E\n"
    assert format_text("\ufeffstate S") == "state S\n"
    assert format_text("from a.b import X,Y as  Z\nimport a.b as m") == "from a.b import X, Y as Z\nimport a.b as m\n"


def test_blank_lines_are_kept_but_at_most_one() -> None:
    text = "\n\nstate S\n\n\n\nerror E\nerror F\n\n\n# c\n\n\nerror G\n\n"
    assert format_text(text) == "state S\n\nerror E\nerror F\n\n# c\n\nerror G\n"


def test_tables_align_colons_and_equals() -> None:
    text = (
        "step a : int -> int = m.a\n"
        "async step longer_name : int -> list[int] ! E | F = m.b\n"
        "fn f : str -> str = m.f\n"
        "\n"
        "tool t : A -> B = srv.t\n"
    )
    assert format_text(text) == (
        "step a                 : int -> int               = m.a\n"
        "async step longer_name : int -> list[int] ! E | F = m.b\n"
        "fn f                   : str -> str               = m.f\n"
        "\n"
        "tool t : A -> B = srv.t\n"
    )


def test_a_very_long_signature_does_not_widen_the_table() -> None:
    long_type = "tuple[" + ", ".join(f"Type{i}" for i in range(12)) + "]"
    out = format_text(f"fn a : int -> int = m.a\nfn b : {long_type} -> int = m.b\n")
    assert out.splitlines()[0] == "fn a : int -> int = m.a"
    assert out.splitlines()[1:] == ["fn b", f"    : {long_type} -> int", "    = m.b"]


LONG = "dict[str, list[tuple[Plan, SearchResults, Answer, Plan, Plan, Plan, Plan, Plan, Plan, Plan, Plan]]]"


def test_a_declaration_too_long_for_a_line_is_broken_before_its_parts() -> None:
    """Past 100 columns: the implementation gets a line, then the signature and the `!` clause too."""
    out = format_text(
        f"step s : A -> B ! E = impl.{'s' * 90}\n"
        f"step t : A -> {LONG} ! E1 | E2 = impl.t\n"
        f"fn f : {LONG} -> A = impl.f\n"
        f"tool x : A -> {LONG} ! E = srv.x\n"
        "step u : A -> B = impl.u\n"
    )
    assert out.splitlines() == [
        "step s : A -> B ! E",
        f"    = impl.{'s' * 90}",
        "step t",
        f"    : A -> {LONG}",
        "    ! E1 | E2",
        "    = impl.t",
        "fn f",
        f"    : {LONG} -> A",
        "    = impl.f",
        "tool x",
        f"    : A -> {LONG}",
        "    ! E",
        "    = srv.x",
        "step u : A -> B = impl.u",
    ]
    assert format_text(out) == out


def test_a_pipeline_header_too_long_for_a_line_is_broken() -> None:
    out = format_text(
        f"pipeline p : A -> {LONG} ! E = a >>= b;\n"
        f"pipeline q : A -> {LONG} {{ step a; b; }}\n"
        f"pipeline r : A -> {LONG} {{}}\n"
    )
    assert out.splitlines() == [
        "pipeline p",
        f"    : A -> {LONG}",
        "    ! E",
        "    = a >>= b;",
        "pipeline q",
        f"    : A -> {LONG} {{",
        "    step a;",
        "    b;",
        "}",
        "pipeline r",
        f"    : A -> {LONG} {{}}",
    ]
    assert format_text(out) == out


def test_comments_inside_a_broken_declaration_stay_where_they_were() -> None:
    text = (
        f"step t # after the name\n  : A -> {LONG} # after the signature\n"
        "  ! E # after the errors\n  = impl.t # after the implementation\n"
        f"pipeline p # name\n  : A -> {LONG} # sig\n  {{ # open\n  a; # stmt\n}}\n"
    )
    out = format_text(text)
    assert out.splitlines() == [
        "step t  # after the name",
        f"    : A -> {LONG}  # after the signature",
        "    ! E  # after the errors",
        "    = impl.t  # after the implementation",
        "pipeline p  # name",
        f"    : A -> {LONG} {{  # sig",
        "    # open",
        "    a;  # stmt",
        "}",
    ]
    assert format_text(out) == out


def test_servers_align_and_keep_their_string_as_written() -> None:
    out = format_text('server s = stdio  "python -m x \\u00e9"\nserver longer=stdio "a\\"b"')
    assert out == 'server s      = stdio "python -m x \\u00e9"\nserver longer = stdio "a\\"b"\n'


def test_expressions_minimal_parentheses_and_breaking() -> None:
    assert format_text("pipeline p : A -> B = ((a >>= (b))) >>= (c catch E=>(h>>=k));") == (
        "pipeline p : A -> B = a >>= b >>= (c catch E => (h >>= k));\n"
    )
    assert format_text("pipeline p : A -> B = each(limit = 3)(local a) orelse (b orelse c);") == (
        "pipeline p : A -> B = each(limit=3) local a orelse (b orelse c);\n"
    )
    names = ", ".join(f"branch_number_{i}" for i in range(8))
    out = format_text(f"pipeline p : A -> B {{ par <{names}> ; }}")
    assert out.splitlines() == [
        "pipeline p : A -> B {",
        "    par <",
        *[f"        branch_number_{i}," for i in range(7)],
        "        branch_number_7",
        "    >;",
        "}",
    ]


def test_long_pipeline_moves_its_expression_to_the_next_line() -> None:
    text = "pipeline some_long_pipeline_name : Request -> Briefing ! SourceDown | MergeConflict = par <news, weather> >>= compose;"
    assert format_text(text).splitlines() == [
        "pipeline some_long_pipeline_name : Request -> Briefing ! SourceDown | MergeConflict =",
        "    par <news, weather> >>= compose;",
    ]


def test_comments_stay_in_order_and_attached() -> None:
    text = """# header

from m import A # trailing on import
pipeline p : A -> A { # after brace
    # before a
    step a; # after a
    par <
        x, # after x
        # before y
        y
        # at the end of the group
    >;

    # at the end of the block
}
step s : A # inside a declaration
  -> A = m.s
"""
    assert format_text(text) == """# header

from m import A  # trailing on import
pipeline p : A -> A {  # after brace
    # before a
    step a;  # after a
    par <
        x,  # after x
        # before y
        y
        # at the end of the group
    >;

    # at the end of the block
}
# inside a declaration
step s : A -> A = m.s
"""


def test_empty_block_and_block_with_only_a_comment() -> None:
    assert format_text("pipeline p : A -> A {  }") == "pipeline p : A -> A {}\n"
    assert format_text("pipeline p : A -> A { # nothing yet\n}") == "pipeline p : A -> A {  # nothing yet\n}\n"


def test_tree_key_ignores_spans_but_not_meaning() -> None:
    def key(text: str) -> object:
        module = parse(SourceFile("x.mce", text)).module
        assert module is not None
        return tree_key(module)

    assert key("pipeline p : A -> B = a >>= b;") == key("pipeline p:A->B=\n  (a) >>= (b) ;")
    assert key("pipeline p : A -> B = a >>= b;") != key("pipeline p : A -> B = b >>= a;")
    assert key("pipeline p : A -> B { step a; }") != key("pipeline p : A -> B { a; }")
    assert key("pipeline p : A -> B = each a;") != key("pipeline p : A -> B = each(limit=1) a;")


def test_unparsable_text_raises_value_error() -> None:
    with pytest.raises(ValueError):
        format_text("pipeline p : A -> = a;")


def test_nesting_at_the_limit_is_formatted() -> None:
    from mcec.syntax import MAX_DEPTH

    depth = MAX_DEPTH - 1
    text = "pipeline p : A -> A = " + "local " * depth + "a;"
    out = format_text(text)
    assert out.count("local") == depth


# ---------------------------------------------------------------- the command


def test_cli_formats_checks_and_diffs(tmp_path: Path) -> None:
    messy = tmp_path / "messy.mce"
    messy.write_text("state   S\nstep a:int->int=m.a", encoding="utf-8")
    clean = tmp_path / "sub" / "clean.mce"
    clean.parent.mkdir()
    clean.write_text("state S\n", encoding="utf-8")

    check = _mcec("fmt", "--check", str(tmp_path))
    assert check.returncode == 1
    assert check.stdout == f"would reformat {messy}\n"
    assert "1 file would be reformatted, 1 file left unchanged." in check.stderr
    assert messy.read_text(encoding="utf-8") == "state   S\nstep a:int->int=m.a"

    diff = _mcec("fmt", "--diff", str(messy))
    assert diff.returncode == 0
    assert "+step a : int -> int = m.a" in diff.stdout
    assert messy.read_text(encoding="utf-8") == "state   S\nstep a:int->int=m.a"

    write = _mcec("fmt", str(tmp_path))
    assert write.returncode == 0, write.stderr
    assert f"reformatted {messy}" in write.stderr
    assert messy.read_text(encoding="utf-8") == "state S\nstep a : int -> int = m.a\n"
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".")]  # no temporary left behind

    again = _mcec("fmt", "--check", str(tmp_path))
    assert again.returncode == 0 and again.stdout == ""


def test_cli_leaves_an_unparsable_file_alone(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mce"
    text = "state S\npipeline p : A -> = a;\n"
    bad.write_text(text, encoding="utf-8")
    run = _mcec("fmt", str(bad))
    assert run.returncode == 1
    assert "error[MCE001]" in run.stdout and f"{bad}:2:" in run.stdout
    assert "1 file could not be formatted" in run.stderr
    assert "Traceback" not in run.stderr
    assert bad.read_text(encoding="utf-8") == text


def test_cli_missing_path_and_bad_utf8(tmp_path: Path) -> None:
    assert _mcec("fmt", str(tmp_path / "nope.mce")).returncode == 2
    binary = tmp_path / "binary.mce"
    binary.write_bytes(b"state S\n\xff\n")
    run = _mcec("fmt", str(binary))
    assert run.returncode == 1 and "not valid UTF-8" in run.stdout
    assert binary.read_bytes() == b"state S\n\xff\n"


def test_self_check_refuses_to_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "x.mce"
    spec.write_text("state S\nerror E\n", encoding="utf-8")
    monkeypatch.setattr(fmt, "_format_module", lambda module, text: "state S\n")  # drops a declaration
    with pytest.raises(FormatError):
        format_source(SourceFile(str(spec), spec.read_text(encoding="utf-8")))
    assert main(["fmt", str(spec)]) == 3
    assert "internal error" in capsys.readouterr().err
    assert spec.read_text(encoding="utf-8") == "state S\nerror E\n"


# ---------------------------------------------------------------- properties

NAMES = ["a", "b", "c_1", "fetch", "Merge_x", "news", "_p"]
TYPES = ["int", "str", "None", "A", "m.B", "Any"]
COMMENTS = ["# c", "#", "# tricky >>= par < , ; { } # x", "#!x  ", "# é ünïcode"]

name = st.sampled_from(NAMES)
qual = st.lists(name, min_size=1, max_size=3).map(".".join)


@functools.cache
def _types(depth: int) -> st.SearchStrategy[list[str]]:
    atom = st.sampled_from(TYPES).map(lambda t: [t])
    if depth == 0:
        return atom
    sub = _types(depth - 1)
    apply = st.tuples(st.sampled_from(["list", "dict", "tuple", "m.G"]), st.lists(sub, min_size=1, max_size=3)).map(
        lambda hv: [hv[0], "["] + sum(([*a, ","] for a in hv[1][:-1]), []) + hv[1][-1] + ["]"]
    )
    union = st.lists(st.one_of(atom, apply), min_size=2, max_size=3).map(
        lambda ms: sum(([*m, "|"] for m in ms[:-1]), []) + ms[-1]
    )
    return st.one_of(atom, apply, union)


#: an error type: a name or a generic without unions (no filtering: cheap to draw)
error_atom = st.one_of(
    st.sampled_from(TYPES).map(lambda t: [t]),
    st.tuples(st.sampled_from(["list", "m.G"]), st.sampled_from(TYPES)).map(lambda ht: [ht[0], "[", ht[1], "]"]),
)


@functools.cache
def _error_list() -> st.SearchStrategy[list[str]]:
    return st.lists(error_atom, min_size=1, max_size=3).map(lambda es: ["!"] + sum(([*e, "|"] for e in es[:-1]), []) + es[-1])


def _paren(tokens: list[str]) -> list[str]:
    return ["(", *tokens, ")"]


@functools.cache
def _expr(depth: int) -> st.SearchStrategy[list[str]]:
    return _expr_at(depth)


@st.composite
def _expr_at(draw: st.DrawFn, depth: int) -> list[str]:
    """An expression as tokens; it is always a *term* (parenthesised when needed),
    plus random redundant parentheses."""
    kinds = ["ref"] if depth == 0 else ["ref", "bind", "par", "each", "local", "catch", "orelse"]
    kind = draw(st.sampled_from(kinds))
    sub = _expr(depth - 1) if depth > 0 else None
    if kind == "ref":
        tokens = [draw(name)]
    elif kind == "bind":
        assert sub is not None
        parts = draw(st.lists(sub, min_size=2, max_size=3))
        tokens = _paren(sum(([*p, ">>="] for p in parts[:-1]), []) + parts[-1])
    elif kind == "par":
        assert sub is not None
        branches = draw(st.lists(sub, min_size=1, max_size=3))
        tokens = ["par", "<", *sum(([*b, ","] for b in branches[:-1]), []), *branches[-1], ">"]
    elif kind == "each":
        assert sub is not None
        limit = draw(st.one_of(st.none(), st.integers(0, 99)))
        tokens = ["each", *([] if limit is None else ["(", "limit", "=", str(limit), ")"]), *draw(sub)]
    elif kind == "local":
        assert sub is not None
        tokens = ["local", *draw(sub)]
    elif kind == "catch":
        assert sub is not None
        errors = draw(st.lists(error_atom, min_size=1, max_size=3))
        tokens = _paren([*draw(sub), "catch", *sum(([*e, "|"] for e in errors[:-1]), []), *errors[-1], "=>", *draw(sub)])
    else:
        assert sub is not None
        tokens = _paren([*draw(sub), "orelse", *draw(sub)])
    if draw(st.integers(0, 5)) == 0:
        tokens = _paren(tokens)
    return tokens


@st.composite
def _decl(draw: st.DrawFn) -> list[str]:
    kind = draw(st.sampled_from(["from", "import", "state", "error", "step", "fn", "server", "tool", "pipe", "block"]))
    if kind == "from":
        entries = draw(st.lists(st.tuples(name, st.one_of(st.none(), name)), min_size=1, max_size=3))
        tokens = ["from", draw(qual), "import"]
        for index, (n, alias) in enumerate(entries):
            tokens += [n] + (["as", alias] if alias else []) + ([","] if index < len(entries) - 1 else [])
        return tokens
    if kind == "import":
        alias = draw(st.one_of(st.none(), name))
        return ["import", draw(qual), *(["as", alias] if alias else [])]
    if kind == "state":
        merge = draw(st.one_of(st.none(), qual))
        return ["state", *draw(_types(2)), *(["merge", merge] if merge else [])]
    if kind == "error":
        return ["error", *draw(_types(1))]
    sig = [*draw(_types(2)), "->", *draw(_types(2))]
    errors = draw(st.one_of(st.just([]), _error_list()))
    if kind == "step":
        return [*(["async"] if draw(st.booleans()) else []), "step", draw(name), ":", *sig, *errors, "=", draw(qual)]
    if kind == "fn":
        return ["fn", draw(name), ":", *sig, "=", draw(qual)]
    if kind == "server":
        literal = draw(st.sampled_from(['"python -m srv"', '"a \\"quoted\\" \\\\ arg"', '"\\u00e9\\t"', '""', '"ü"']))
        return ["server", draw(name), "=", "stdio", literal]
    if kind == "tool":
        return ["tool", draw(name), ":", *sig, *errors, "=", draw(name), ".", draw(name)]
    head = ["pipeline", draw(name), ":", *sig, *errors]
    if kind == "pipe":
        return [*head, "=", *draw(_expr(2)), ";"]
    statements = draw(st.lists(st.tuples(st.booleans(), _expr(2)), max_size=3))
    body = sum(([*(["step"] if kw else []), *e, ";"] for kw, e in statements), [])
    return [*head, "{", *body, "}"]


SEPARATORS = [" ", " ", " ", "\n", "\n    ", "\n\n", "\n\n\n  ", "\t", "\r\n"]


@st.composite
def specs(draw: st.DrawFn) -> str:
    """A random spec: tokens joined by random whitespace, comments in random gaps.

    The layout comes from a seeded ``random.Random`` (one draw instead of
    several per token keeps generation fast; the tree is what shrinks).
    """
    decls = draw(st.lists(_decl(), max_size=5))
    rng = random.Random(draw(st.integers(0, 2**32)))
    tokens = [token for decl in decls for token in decl]
    pieces: list[str] = [rng.choice(["", "\n", "# top\n", "\n\n"])]
    for token in tokens:
        pieces.append(token)
        separator = rng.choice(SEPARATORS)
        if rng.randrange(5) == 0:
            comment = rng.choice(COMMENTS)
            separator = rng.choice([" ", "", "\n", "\n\n  "]) + comment + rng.choice(["\n", "\n\n", "\n  "])
        pieces.append(separator)
    if rng.random() < 0.5:
        pieces.append(rng.choice(COMMENTS))
    return "".join(pieces)


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(specs())
def test_property_tree_comments_and_idempotence(text: str) -> None:
    source = SourceFile("random.mce", text)
    parsed = parse(source)
    assert parsed.module is not None, (text, parsed.diagnostics)
    result = format_source(source)  # raises FormatError if the self-check fails
    assert result.text is not None
    again = parse(SourceFile("random.mce", result.text)).module
    assert again is not None
    assert tree_key(again) == tree_key(parsed.module)
    assert [c.text.rstrip() for c in again.comments] == [c.text.rstrip() for c in parsed.module.comments]
    assert format_text(result.text) == result.text
    assert result.text == "" or (result.text.endswith("\n") and not result.text.endswith("\n\n"))
    assert all(line == line.rstrip() for line in result.text.splitlines())


# ---------------------------------------------------------------- issue 18, item 29


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 30), st.integers(1, 60), st.integers(1, 60)), min_size=2, max_size=6
    )
)
def test_table_alignment_never_takes_a_line_past_the_limit(rows: list[tuple[int, int, int]]) -> None:
    """A table of declarations that each fit on a line stays within LINE_LENGTH once aligned
    (the padding used to make a 104-column line out of lines that fit)."""
    lines = []
    for index, (name, sig, impl) in enumerate(rows):
        line = f"step {'n' * name}{index} : {'A' * sig} -> B = m.{'f' * impl}"
        if len(line) <= LINE_LENGTH:
            lines.append(line)
    out = format_text("\n".join(lines) + "\n")
    assert all(len(line) <= LINE_LENGTH for line in out.splitlines()), out


def test_the_parentheses_a_reader_needs_are_kept() -> None:
    """`(a >>= b) catch E => h` used to lose its parentheses (it means the same without them,
    but a reader would take the catch for b's)."""
    text = (
        "pipeline p : A -> A = (a >>= b) catch E => h;\n"
        "pipeline q : A -> A = (a catch E => h) orelse (f >>= g);\n"
        "pipeline r : A -> A = x >>= (a >>= b) >>= ((c));\n"
    )
    assert format_text(text) == (
        "pipeline p : A -> A = (a >>= b) catch E => h;\n"
        "pipeline q : A -> A = (a catch E => h) orelse (f >>= g);\n"
        "pipeline r : A -> A = x >>= a >>= b >>= c;\n"
    )
    assert format_text("pipeline p : A -> A = a >>= b catch E => h;\n") == "pipeline p : A -> A = a >>= b catch E => h;\n"
