"""What is written several times is checked at every place it is written.

A problem is reported at every occurrence, two spellings of one class keep
their own spelling (``ClassRef`` equality ignores it), and one type written in
two layouts resolves alike.
"""

from __future__ import annotations

from pathlib import Path

from mcec.check import CheckResult, check
from mcec.syntax import parse
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parents[2]


def checked(text: str) -> CheckResult:
    source = SourceFile("memo.mce", text)
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    return check(parsed.module, source)


def fn_signatures(text: str) -> dict[str, str]:
    """The signature of each fn of ``text``, as the checker spells it."""
    result = checked(text)
    assert result.program is not None, result.diagnostics
    return {f.name: str(f.sig) for f in result.program.fns}


def located(result: CheckResult, code: str) -> list[tuple[int, int, str]]:
    """(line, column, message) of every diagnostic with ``code``, in order."""
    return [(d.span.line, d.span.column, d.message) for d in result.diagnostics if d.code == code]


def test_an_unknown_type_is_reported_at_every_occurrence() -> None:
    result = checked(
        "from app.impl import S\n"
        "import app.impl as impl\n"
        "state S\n"
        "fn a : Strr -> Strr = impl.a\n"
        "fn b : list[Strr] -> list[Strr] = impl.b\n"
        "fn c : impl.Nope.X -> str = impl.c\n"
        "fn d : nope.X -> nope.X = impl.d\n"
        "pipeline p : str -> str = a >>= b >>= c >>= d;\n"
    )
    unknown = located(result, "MCE017")
    assert [(line, column) for line, column, _ in unknown] == [
        (4, 8), (4, 16), (5, 13), (5, 27), (7, 8), (7, 18),
    ], unknown
    assert unknown[0][2] == unknown[1][2] == "unknown type `Strr`"
    assert unknown[4][2] == unknown[5][2] == "unknown type `nope`"


def test_a_bad_generic_is_reported_at_every_occurrence() -> None:
    result = checked(
        "from app.impl import S\n"
        "import app.impl as impl\n"
        "state S\n"
        "fn a : list[int, str] -> list[int, str] = impl.a\n"
        "fn b : list[int, str] -> str = impl.b\n"
        "pipeline p : str -> str = a >>= b;\n"
    )
    assert [(line, column) for line, column, _ in located(result, "MCE017")] == [(4, 8), (4, 26), (5, 8)]


def test_an_undeclared_error_is_reported_at_every_occurrence() -> None:
    result = checked(
        "from app.impl import S, E1, E2\n"
        "import app.impl as impl\n"
        "state S\n"
        "error E1\n"
        "step a : str -> str ! E2 = impl.a\n"
        "step b : str -> str ! E2 = impl.b\n"
        "step c : str -> str ! E1 | E2 = impl.c\n"
        "pipeline p : str -> str ! E1 | E2 = a >>= b >>= c;\n"
    )
    undeclared = located(result, "MCE018")
    assert [(line, column) for line, column, _ in undeclared] == [(5, 23), (6, 23), (7, 28), (8, 32)], undeclared
    assert "of step `b`" in undeclared[1][2] and "of pipeline `p`" in undeclared[3][2]


def test_a_bad_signature_written_twice_is_reported_at_both() -> None:
    # Whole signatures are memoised by their text too: one with a diagnostic must not be.
    result = checked(
        "from app.impl import S, A\n"
        "import app.impl as impl\n"
        "state S\n"
        "fn a : A -> Nope = impl.a\n"
        "fn b : A -> Nope = impl.b\n"
        "step c : A -> A ! Oops = impl.c\n"
        "step d : A -> A ! Oops = impl.d\n"
        "pipeline p : A -> Nope = a;\n"
        "pipeline q : A -> Nope = b;\n"
    )
    assert [(line, column) for line, column, _ in located(result, "MCE017")] == [
        (4, 13), (5, 13), (6, 19), (7, 19), (8, 19), (9, 19),
    ]


def test_an_unknown_implementation_is_reported_at_every_occurrence() -> None:
    result = checked(
        "from app.impl import S\n"
        "import app.impl as impl\n"
        "state S\n"
        "fn a : str -> str = nope.a\n"
        "fn b : str -> str = nope.a\n"
        "pipeline p : str -> str = a >>= b;\n"
    )
    assert [(line, column) for line, column, _ in located(result, "MCE002")] == [(4, 21), (5, 21)]


def test_each_spelling_of_a_class_keeps_its_spelling() -> None:
    fns = fn_signatures(
        "from app.impl import S, A\n"
        "import app.impl as impl\n"
        "state S\n"
        "fn a : A -> list[A] = impl.a\n"
        "fn b : impl.A -> list[impl.A] = impl.b\n"
        "fn c : A -> list[A] = impl.c\n"
        "pipeline p : A -> list[A] = a;\n"
        "pipeline q : impl.A -> list[impl.A] = b;\n"
        "pipeline r : A -> list[A] = c;\n"
    )
    assert fns == {"a": "A -> list[A]", "b": "impl.A -> list[impl.A]", "c": "A -> list[A]"}


def test_a_type_written_twice_in_two_layouts_resolves_alike() -> None:
    fns = fn_signatures(
        "from app.impl import S, A\n"
        "import app.impl as impl\n"
        "state S\n"
        "fn a : dict[str, A | None] -> list[ impl.A ] = impl.a\n"
        "fn b : dict[ str , A|None ] -> list[impl . A] = impl.b\n"
        "pipeline p : dict[str, A | None] -> list[impl.A] = a;\n"
        "pipeline q : dict[str,A|None] -> list[impl.A] = b;\n"
    )
    assert fns["a"] == fns["b"] == "dict[str, None | A] -> list[impl.A]", fns
