"""A pure fn is no effect (issue 48 item 1, docs/language.md §14): compiled and interpreted code
call it plainly, hooked or not, a chain of fns of one type writes over one name, and a long chain
is cut into helpers with the last run inline. Its failures are Defects at its own site as before."""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import Any

from toolbox import TState

from agentmonad import Defect, Ok
from agentmonad.context import hooks
from agentmonad.events import EffectStarted, Event
from mcec.compiler import compile_source
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile
from shared_index import shared_index

HEADER = (
    "from toolbox import TState\nimport toolbox as tb\nstate TState\n"
    "step inc : int -> int = tb.inc\n"
    "fn double : int -> int = tb.double\nfn negate : int -> int = tb.negate\n"
    "fn fragile : int -> int = tb.fragile\nfn spread : int -> list[int] = tb.spread\n"
    "fn total : list[int] -> int = tb.total\n"
)
_counter = itertools.count()


def _compile(text: str) -> tuple[Any, Any, str]:
    source = SourceFile(f"fns_{next(_counter)}.mce", text)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False)
    assert result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated), result.generated.code


class _Sink:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


def _function(code: str, name: str) -> str:
    """The text of the generated ``async def name`` (up to the next top-level definition)."""
    start = code.index(f"async def {name}(")
    end = code.find("\nasync def ", start + 1)
    return code[start : end if end >= 0 else len(code)]


def test_a_chain_of_fns_of_one_type_writes_over_one_name_and_never_reads_the_run_context() -> None:
    spec = HEADER + "pipeline main : int -> int = double >>= negate >>= spread >>= total >>= double >>= negate;\n"
    program, module, code = _compile(spec)
    main = _function(code, "main")
    assert "hooked_run" not in main and "run is not None" not in main and "fn_effect" not in code
    # one type from double to negate, and again after total: the output overwrites the input
    assert re.findall(r"(\w+) = (\w+)\((\w+)\)", main) == [
        ("v", "double", "value"), ("v", "negate", "v"), ("v_2", "spread", "v"), ("v_3", "total", "v_2"),
        ("v_3", "double", "v_3"), ("v_3", "negate", "v_3"),
    ]
    # double 6, negate -6, spread [-6, -5], total -11, double -22, negate 22
    assert asyncio.run(module.main(TState(), 3)) == Ok(22, TState())


def test_a_hooked_run_of_fns_tells_the_sink_no_effect_compiled_or_interpreted() -> None:
    spec = HEADER + "pipeline main : int -> int = double >>= inc >>= negate;\n"
    program, module, _ = _compile(spec)
    for run in (lambda: module.main(TState(), 5), lambda: Interpreter(program).run("main", TState(), 5)):
        sink = _Sink()
        with hooks(events=sink):
            outcome = asyncio.run(run())
        assert isinstance(outcome, Ok) and outcome.value == -11
        started = [e.effect for e in sink.events if isinstance(e, EffectStarted)]
        assert [(e.kind, e.site.step if e.site else None) for e in started] == [("step", "inc")]


def test_a_long_chain_of_fns_is_cut_into_helpers_and_a_fn_that_raises_is_a_defect_at_its_own_site() -> None:
    """700 fns: a helper of 500 (a fn counts two fifths of a step towards CHUNK = 200), the last
    200 inline in the pipeline's function; the fn at 650 raises on 0."""
    parts = ["negate"] * 700
    parts[650] = "fragile"
    spec = HEADER + f"pipeline main : int -> int =\n    {' >>= '.join(parts)};\n"
    program, module, code = _compile(spec)
    assert code.count("async def ") == 2
    # the helper: v = negate(value), then v = negate(v); main: the helper's output v, then v_2
    assert code.count("v = negate(v)") == 499 and code.count("v_2 = negate(v_2)") == 198 and "v_2 = fragile(v_2)" in code
    assert asyncio.run(module.main(TState(), 3)) == Ok(-3, TState())  # 699 negates and fragile(-3) = -3
    for run in (lambda: module.main(TState(), 0), lambda: Interpreter(program).run("main", TState(), 0)):
        try:
            asyncio.run(run())
        except Defect as defect:
            assert isinstance(defect.cause, ZeroDivisionError) and defect.site is not None
            assert (defect.site.step, defect.site.line, defect.site.column) == ("fragile", HEADER.count("\n") + 2, 5 + len("negate >>= ") * 650)
        else:
            raise AssertionError("fragile(0) did not raise")
