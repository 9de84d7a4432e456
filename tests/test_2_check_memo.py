"""The memos of name resolution change no result and no diagnostic.

:meth:`mcec.check.names.DeclarationChecker.type_of` remembers each type
expression that resolved cleanly by its source text, the checker does the same
for ``!`` clauses and shares equal signatures. A problem must
still be reported at every place it is written (the memos only hold what
resolved without a diagnostic), two spellings of one class must keep their own
spelling (``ClassRef`` equality ignores it), and checking any spec must give
exactly what it gives with the memos switched off.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcec.check import CheckResult, check
from mcec import syntax
from mcec.check import names as names_module
from mcec.diagnostics import DiagnosticSink
from mcec.parser import parse
from mcec.render import render_json
from mcec.span import SourceFile
from mcec.typed import Sig
from tests.spec_gen import mutate

ROOT = Path(__file__).resolve().parent.parent


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


#: Type expressions that are all different trees (the generic arities need not be right).
DIFFERENT_TYPES = [
    "A", "impl.A", "list", "list[A]", "list[impl.A]", "impl.list[A]", "list[A, A]", "list[list[A]]",
    "dict[str, A]", "dict[str, A | None]", "dict[str | A, None]", "dict[str, A] | None", "A | None",
    "None | A", "A | None | str", "tuple[A, tuple[A, A]]", "tuple[tuple[A, A], A]", "tuple[A | str]",
]


def type_exprs(types: list[str]) -> list[syntax.TypeExpr]:
    """Each of ``types`` parsed as the state type of a one-line spec."""
    found = []
    for text in types:
        module = parse(SourceFile("types.mce", f"state {text}\n")).module
        assert module is not None and isinstance(module.decls[0], syntax.StateDecl), text
        found.append(module.decls[0].type)
    return found


def test_the_memo_key_of_a_type_is_its_text_and_equal_keys_are_equal_trees() -> None:
    # Every type in three layouts: equal keys must mean equal trees (positions aside), and the
    # different trees of DIFFERENT_TYPES must get different keys in every layout.
    layouts = [
        DIFFERENT_TYPES,
        [t.replace("[", " [ ").replace(",", " ,  ").replace("|", "# c\n |") for t in DIFFERENT_TYPES],
        [t.replace(".", " . ").replace("]", " ]") for t in DIFFERENT_TYPES],
    ]
    by_key: dict[str, str] = {}
    for texts in layouts:
        exprs = type_exprs(texts)
        keys = [names_module.memo_key(expr) for expr in exprs]
        assert keys == texts  # exactly the text of the type, comments and all
        assert len(set(keys)) == len(texts)
        for key, expr in zip(keys, exprs):
            shape = without_positions(expr)
            assert by_key.setdefault(key, shape) == shape, key


def without_positions(node: object) -> str:
    """``node``'s tree with names and structure but no positions, to compare trees parsed at different places."""
    if isinstance(node, syntax.Name):
        return node.text
    if isinstance(node, tuple):
        return "(" + ",".join(without_positions(item) for item in node) + ")"
    assert isinstance(node, syntax.Node), node
    fields = [f.name for f in dataclasses.fields(node)][:-3]  # all but source, start, end
    return f"{type(node).__name__}(" + ",".join(without_positions(getattr(node, f)) for f in fields) + ")"


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


def test_declarations_are_ordinary_frozen_objects() -> None:
    """The checker builds them with fast constructors: they must be what the dataclass would build."""
    text = (
        "from app.impl import S, A, E\n"
        "import app.impl as impl\n"
        "state S\n"
        "error E\n"
        "step s : A -> A ! E = impl.s\n"
        "fn f : A -> list[A] = impl.f\n"
        "pipeline p : A -> list[A] ! E = s >>= f;\n"
    )
    module = parse(SourceFile("objects.mce", text)).module
    assert module is not None
    declared = names_module.DeclarationChecker(module, DiagnosticSink()).run()
    made: list[object] = [
        *declared.env.bindings.values(),
        *declared.steps.values(),
        *declared.fns.values(),
        *declared.pipelines.values(),
        *[step.impl for step in declared.steps.values()],
    ]
    assert {type(obj).__name__ for obj in made} >= {"Binding", "TStep", "TFn", "DeclaredPipeline", "PyRef"}
    for obj in made:
        assert dataclasses.is_dataclass(obj)
        copy = dataclasses.replace(obj)  # type: ignore[type-var]  # through the dataclass __init__
        assert type(obj) is type(copy) and obj == copy and hash(obj) == hash(copy)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, dataclasses.fields(obj)[0].name, None)


@contextmanager
def memos_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Check with every memo of name resolution switched off."""
    counter = iter(range(1 << 62))
    with monkeypatch.context() as patch:
        patch.setattr(names_module.DeclarationChecker, "type_of", lambda self, expr: self._fresh_type(expr, None))
        # A key that never repeats: `!` clauses are resolved again each time.
        patch.setattr(names_module, "memo_key", lambda *nodes: f"#{next(counter)}")
        patch.setattr(names_module.DeclarationChecker, "_sig", lambda self, i, o, e, s: Sig(i, o, e, s))
        yield


def outcome(text: str) -> tuple[str, str] | None:
    """Everything checking ``text`` produces, spellings included; None if it does not parse."""
    source = SourceFile("memo.mce", text)
    parsed = parse(source)
    if parsed.module is None or parsed.diagnostics:
        return None
    result = check(parsed.module, source)
    return "".join(render_json(d) + "\n" for d in result.diagnostics), repr(result.program)


def corpus() -> list[str]:
    """The checker's golden cases and the examples, each also mutated a few times."""
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "tests" / "cases" / "check").glob("*.mce"))]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "examples").rglob("*.mce"))]
    rng = random.Random(3)
    return texts + [mutate(text, rng, 3) for text in texts for _ in range(4)]


def test_checking_is_the_same_with_the_memos_off(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = corpus()
    with_memos = [outcome(text) for text in texts]
    with memos_off(monkeypatch):
        without = [outcome(text) for text in texts]
    assert sum(o is not None and o[0] != "" for o in with_memos) >= 20  # diagnostics are exercised
    for text, memo, plain in zip(texts, with_memos, without):
        assert memo == plain, text


def test_the_frontend_benchmark_spec_is_the_same_with_the_memos_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.frontend_bench import generate

    text = generate(300)
    with_memos = outcome(text)
    with memos_off(monkeypatch):
        assert outcome(text) == with_memos
