"""The standard `id` (docs/language.md §5, "The standard `id`"): a fn every spec has without
declaring it, ``A -> A`` for the A it is given where it stands; ``par <id, classify>`` keeps the
input beside what is made of it. Checked, compiled (mypy --strict on the module) and interpreted
alike; a spec's own `id` takes its place; a toolbox cannot list it, a plan may use it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from spec_gen import HEADER
from toolbox import TState

from agentmonad import Ok, PlanRejected
from mcec.check.typed import TIdentity, TPar
from mcec.compiler import compile_source
from mcec.plans.engine import AcceptedPlan, CheckedToolbox
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile
from shared_index import shared_index

SPEC = HEADER + """\
pipeline keep : int -> tuple[int, int] = par <id, double>;
pipeline classify_then_act : int -> int = par <id, inc> >>= add_pair;
pipeline chained : int -> int = id >>= double >>= id;
pipeline nested : int -> int = par <id, id, spread >>= each(limit=2) (par <id, negate> >>= add_pair) >>= total> >>= add_triple;
pipeline unchanged : int -> int = id;
pipeline narrowed : int -> int = split >>= match { int => id, str => parse };
pipeline recovered : int -> int = even_only catch Odd => (recover >>= id);
"""


def _compiled(text: str, name: str) -> Any:
    source = SourceFile(name, text)
    result = compile_source(source, index=shared_index(source.path))
    return source, result


def _diagnostics(text: str, name: str = "idspec.mce") -> list[tuple[str, str]]:
    """The (code, message) of every error of ``text``."""
    _, result = _compiled(text, name)
    return [(d.code, d.message) for d in result.diagnostics if d.is_error]  # not HEADER's unused names (W001)


@pytest.fixture(scope="module")
def compiled() -> tuple[Any, Any]:
    source, result = _compiled(SPEC, "identity.mce")
    assert result.ok, render_text(result.diagnostics, {"identity.mce": source}, color=False)
    assert result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated)


def test_id_takes_the_type_it_is_given_where_it_stands(compiled: tuple[Any, Any]) -> None:
    program, _ = compiled
    bodies = {p.name: p.body for p in program.pipelines}
    keep = bodies["keep"]
    assert isinstance(keep, TPar) and str(keep.sig) == "int -> tuple[int, int]"
    [kept, doubled] = keep.branches
    assert isinstance(kept, TIdentity) and kept.written == "id" and str(kept.sig) == "int -> int"
    assert not keep.sig.stateful and keep.sig.errors == frozenset()  # no effect, no state, no error
    unchanged = bodies["unchanged"]
    assert isinstance(unchanged, TIdentity) and str(unchanged.sig) == "int -> int"


@pytest.mark.parametrize(
    ("pipeline", "value", "expected"),
    [
        ("keep", 5, (5, 10)),
        ("classify_then_act", 5, 11),
        ("chained", 4, 8),
        ("nested", 3, 3 + 3 + 0),
        ("unchanged", 7, 7),
        ("narrowed", 4, 4),
        ("narrowed", 6, 6),
        ("recovered", 3, 1003),
        ("recovered", 4, 2),
    ],
)
def test_compiled_and_interpreted_runs_pass_the_value_on(compiled: tuple[Any, Any], pipeline: str, value: int,
                                                         expected: object) -> None:
    program, module = compiled
    ran = asyncio.run(getattr(module, pipeline)(TState(), value))
    interpreted = asyncio.run(Interpreter(program).run(pipeline, TState(), value))
    assert ran == interpreted
    assert isinstance(ran, Ok) and ran.value == expected, ran


def test_a_mismatch_through_id_names_it() -> None:
    found = _diagnostics(HEADER + "pipeline p : int -> int = id >>= parse;\n")
    assert [code for code, _ in found] == ["MCE010"]
    assert "`id`" in found[0][1] and "int" in found[0][1], found
    # a body of `id` alone is checked as any body, not as an empty block
    [(code, message)] = _diagnostics(HEADER + "pipeline p : int -> str = id;\n")
    assert code == "MCE012" and "empty body" not in message and message.endswith("its body produces int"), message


def test_a_spec_of_its_own_id_uses_its_own() -> None:
    own = HEADER + "fn id : int -> list[int] = tb.spread\npipeline p : int -> int = id >>= total;\n"
    source, result = _compiled(own, "own.mce")
    assert result.ok, render_text(result.diagnostics, {"own.mce": source}, color=False)
    assert result.program is not None and result.generated is not None
    assert str(result.program.pipelines[0].body.sig) == "int -> int"
    module = load_module(result.program, result.generated)
    assert asyncio.run(module.p(TState(), 3)) == asyncio.run(Interpreter(result.program).run("p", TState(), 3))


def test_a_toolbox_cannot_list_the_standard_id() -> None:
    found = _diagnostics(HEADER + "toolbox t : int -> int = id, double\npipeline p : int -> int = double;\n")
    assert [code for code, _ in found] == ["MCE031"], found
    assert found[0][1].startswith("`id` is the standard identity fn")


def test_a_plan_may_use_id_without_its_toolbox_listing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "plans"))
    from plan_support import compiled_edge

    module, _ = compiled_edge("spin")  # toolbox spin : int -> int | str = same, tick
    checked = module.TOOLBOX_spin.checked()
    assert isinstance(checked, CheckedToolbox)
    assert isinstance(checked.check("par <id, tick> >>= pick"), PlanRejected)  # `pick` is not in it
    assert isinstance(checked.check("id >>= tick >>= id"), AcceptedPlan)
