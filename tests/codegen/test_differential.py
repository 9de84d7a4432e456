"""Compiled code vs the reference interpreter, on random well-typed specs.

The main correctness oracle of the code generator: for random specs over the
toolbox (tests/spec_gen.py) and random inputs, the generated module and
``mcec.run.interpret`` must agree on the value, the error (type, arguments and
the site that reported it), the final state, and on defects — and, for
``retry``, on the pauses asked for between attempts (both run under
``fake_retry_clock``, so no retry waits).
"""

from __future__ import annotations

import asyncio
import gc
import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_gen import HEADER, specs
from toolbox import TState

from agentmonad import Defect, Err, Ok
from agentmonad.compiled import hooks_alive
from agentmonad.context import hooks
from agentmonad.events import EffectEnded, EffectStarted, Event
from agentmonad.control import fake_retry_clock
from mcec.compiler import compile_source
from shared_index import shared_index
from mcec.run.interpret import Interpreter
from mcec.render import render_text
from mcec.run.runner import load_module
from mcec.span import SourceFile
from journals import PassThroughJournal

_counter = itertools.count()


def _observe(coro: Any) -> tuple[Any, ...]:
    """Run a pipeline call (retry pauses recorded, not waited) and reduce its result
    to comparable data, the pauses last."""
    with fake_retry_clock() as pauses:
        try:
            outcome = asyncio.run(coro)
        except Defect as defect:
            return ("defect", type(defect.cause).__name__, defect.state, defect.site, pauses)
    if isinstance(outcome, Ok):
        return ("ok", outcome.value, outcome.state, pauses)
    assert isinstance(outcome, Err)
    return ("err", type(outcome.error).__name__, outcome.error, outcome.state, outcome.site, pauses)


def compile_spec(text: str) -> Any:
    """Compile a spec in memory; fail the test with rendered diagnostics on errors."""
    source = SourceFile(f"diff_{next(_counter)}.mce", text)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False) + text
    assert result.program is not None and result.generated is not None
    return result.program, load_module(result.program, result.generated)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), inputs=st.lists(st.integers(-60, 60), min_size=1, max_size=4))
def test_compiled_matches_interpreter(spec: str, inputs: list[int]) -> None:
    program, module = compile_spec(spec)
    interpreter = Interpreter(program)
    for value in inputs:
        compiled = _observe(module.main(TState(), value))
        interpreted = _observe(interpreter.run("main", TState(), value))
        assert compiled == interpreted, f"input {value}\n{spec}"


def test_defect_and_sites_agree() -> None:
    spec = (
        "from toolbox import TState, Odd\nimport toolbox as tb\nstate TState\nerror Odd\n"
        "step inc : int -> int = tb.inc\nstep crash : int -> int = tb.crash\n"
        "step even_only : int -> int ! Odd = tb.even_only\n"
        "pipeline main : int -> int ! Odd = inc >>= crash >>= even_only;\n"
    )
    program, module = compile_spec(spec)
    interpreter = Interpreter(program)
    crashed = _observe(module.main(TState(), 12))
    assert crashed[0] == "defect" and crashed[1] == "ValueError"
    assert crashed[2] == TState(count=1)  # the state the failing step received
    assert crashed == _observe(interpreter.run("main", TState(), 12))
    failed = _observe(module.main(TState(), 0))
    assert failed[0] == "err" and failed[4].step == "even_only" and failed[4].line == 8
    assert failed == _observe(interpreter.run("main", TState(), 0))


def test_negative_literal_patterns_agree() -> None:
    """``-1``/``-2`` arms (and an arm given ``Literal[-1]`` that starts a ``par`` beside an ``int``
    branch) pick the same arm, value and state compiled and interpreted, on either side of 0."""
    spec = HEADER + (
        "pipeline main : int -> int ! MergeConflict = match {\n"
        "    -1 => (par <match { _ => note }, inc> >>= add_pair),\n"
        "    -2 => (note >>= double),\n"
        "    0 => inc,\n"
        "    _ => negate,\n"
        "};\n"
    )
    program, module = compile_spec(spec)
    interpreter = Interpreter(program)
    values = {}
    for value in range(-4, 3):
        compiled = _observe(module.main(TState(), value))
        assert compiled == _observe(interpreter.run("main", TState(), value)), value
        assert compiled[0] == "ok", compiled
        values[value] = compiled[1]
    # -1: note(-1) + inc(-1); -2: double; 0: inc; the rest negated
    assert values == {-4: 4, -3: 3, -2: -4, -1: -1, 0: 1, 1: -1, 2: -2}


# ---------------------------------------------------------------- the effect seam (issue 30)


class EffectLog(PassThroughJournal):
    """A journal and an event sink at once (what a durable or traced run attaches): every
    effect it hears of, as comparable data."""

    def __init__(self) -> None:
        self.heard: list[tuple[Any, ...]] = []

    def emit(self, event: Event) -> None:
        match event:
            case EffectStarted(effect=effect):
                self.heard.append(("started", effect.kind, effect.site, effect.index, None))
            case EffectEnded(effect=effect, outcome=outcome, error=error):
                self.heard.append((outcome, effect.kind, effect.site, effect.index, error))
            case _:
                pass  # the run and its groups: not effects

    def record(self, effect: Any, result: object) -> None:
        self.heard.append(("recorded", effect.kind, effect.site, effect.index, result))


def _by_index(heard: list[tuple[Any, ...]]) -> dict[tuple[int, ...], list[tuple[Any, ...]]]:
    """What a log heard, in order per ``each``/``par`` element index (branches run
    concurrently, so only the order inside one branch is the spec's)."""
    by_index: dict[tuple[int, ...], list[tuple[Any, ...]]] = {}
    for one in heard:
        by_index.setdefault(one[3], []).append(one)
    return by_index


def _effects(run: Any) -> dict[tuple[int, ...], list[tuple[Any, ...]]]:
    """The effects a hooked run reports (see :func:`_by_index`) and its observed result."""
    log = EffectLog()
    with hooks(journal=log, events=log):
        observed = _observe(run())
    by_index = _by_index(log.heard)
    by_index[("observed",)] = [observed]  # type: ignore[index]
    return by_index


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), value=st.integers(-60, 60))
def test_a_hooked_compiled_run_reports_the_effects_of_the_interpreted_one(spec: str, value: int) -> None:
    """With a hook attached, every step, ``fn``, tool and model call of a compiled run goes through
    the effect seam with the same kind, site (spec, line, column, step name) and element index as
    the interpreted run of the same spec, and the sink hears the same starts, results and failures."""
    program, module = compile_spec(spec)
    interpreter = Interpreter(program)
    compiled = _effects(lambda: module.main(TState(), value))
    interpreted = _effects(lambda: interpreter.run("main", TState(), value))
    assert compiled == interpreted, f"input {value}\n{spec}"


def test_a_hooked_compiled_run_reports_every_step_par_and_each_with_its_index_and_no_fn() -> None:
    spec = HEADER + (
        "pipeline main : int -> int ! MergeConflict | Neg =\n"
        "    inc >>= par<double, inc> >>= add_pair >>= spread >>= each(slow_inc) >>= total;\n"
    )
    program, module = compile_spec(spec)
    compiled = _effects(lambda: module.main(TState(), 5))
    assert compiled == _effects(lambda: Interpreter(program).run("main", TState(), 5))
    assert compiled[("observed",)][0][0] == "ok"  # type: ignore[index]
    started = sorted((h[1], h[2].step, h[3]) for heard in compiled.values() for h in heard if h[0] == "started")
    spread = len(started) - 2
    assert spread == 3, started  # 5 + 1 = 6; 12 + 7 = 19; 19 % 4 = 3 elements
    # the fns (double, add_pair, spread, total) are no effects (docs/language.md §14)
    assert started == [
        ("step", "inc", ()),
        ("step", "inc", (1,)),
    ] + [("step", "slow_inc", (i,)) for i in range(spread)]
    first = compiled[()][0][2]
    assert (first.step, first.line, first.column) == ("inc", HEADER.count("\n") + 2, 5)  # the spec's own site


# A run that calls a pipeline (its own function) and a par (a function per branch) after an
# async step: what a function entered after a hook came or went reads.
_NESTED = HEADER + (
    "pipeline inner : int -> int = inc >>= double;\n"
    "pipeline main : int -> int ! MergeConflict | Neg =\n"
    "    inc >>= slow_inc >>= inner >>= par<double, inc> >>= add_pair;\n"
)


def _gate(module: Any, held: int) -> tuple[asyncio.Event, asyncio.Event]:
    """Make ``module``'s ``slow_inc`` wait, when called on ``held``, until the second event is
    set (it sets the first when it starts waiting); otherwise it is ``tb.slow_inc``."""
    import toolbox as tb

    waiting, gate = asyncio.Event(), asyncio.Event()

    async def slow_inc(state: TState, value: int) -> Any:
        if value == held:
            waiting.set()
            await gate.wait()
        return await tb.slow_inc(state, value)

    module.slow_inc = slow_inc
    return waiting, gate


def test_with_no_hook_alive_a_compiled_run_reads_no_run_context() -> None:
    """The no-hook path is one global test per function entry (``hooks_alive``): no run of a
    process that has no hooked context anywhere reads its ``ContextVar``; with a hook, each
    function entered reads it once (failed before: every entry read it)."""
    _, module = compile_spec(_NESTED)
    real, reads = module.hooked_run, []

    def counting() -> Any:
        reads.append(1)
        return real()

    module.hooked_run = counting
    gc.collect()
    assert not hooks_alive, "a hooked run context outlived the test that made it"
    assert _observe(module.main(TState(), 1))[0] == "ok"
    assert reads == []
    with hooks(events=EffectLog()):
        assert _observe(module.main(TState(), 1))[0] == "ok"
    assert len(reads) >= 3  # main, inner, a par branch


def test_a_hook_attached_while_an_unhooked_compiled_run_goes_on_leaves_that_run_plain() -> None:
    """Run A starts with no hook; while it waits, another task attaches one and runs B. A's
    functions entered from then on see a hook alive and read their run context, which has none:
    A's effects reach no hook and its outcome is unchanged; B reports exactly its own effects."""
    program, module = compile_spec(_NESTED)
    expected_plain = _observe(module.main(TState(), 100))
    waiting, gate = _gate(module, held=101)
    log = EffectLog()

    async def both() -> tuple[Any, Any]:
        plain = asyncio.create_task(module.main(TState(), 100))  # its context: no hook
        await waiting.wait()  # A is inside slow_inc, past main's entry
        with hooks(journal=log, events=log):
            hooked = await module.main(TState(), 1)
            gate.set()
            return await plain, hooked

    plain, hooked = asyncio.run(both())
    assert ("ok", plain.value, plain.state, []) == expected_plain
    expected = _effects(lambda: Interpreter(program).run("main", TState(), 1))
    assert _by_index(log.heard) | {("observed",): [_observe(_done(hooked))]} == expected  # type: ignore[operator]


def test_a_hooked_compiled_run_outliving_its_hooks_block_reports_every_effect() -> None:
    """A task started inside ``with hooks()`` keeps its hooked context after the block closes:
    the functions it enters afterwards still go through the seam (what a count of open
    ``hooks()`` blocks would get wrong), and it reports what the interpreter does."""
    program, module = compile_spec(_NESTED)
    waiting, gate = _gate(module, held=101)
    log = EffectLog()

    async def detached() -> Any:
        with hooks(journal=log, events=log):
            task = asyncio.create_task(module.main(TState(), 100))
            await waiting.wait()
        gc.collect()
        assert hooks_alive  # the task's context is hooked
        gate.set()
        return await task

    outcome = asyncio.run(detached())
    expected = _effects(lambda: Interpreter(program).run("main", TState(), 100))
    assert _by_index(log.heard) | {("observed",): [_observe(_done(outcome))]} == expected  # type: ignore[operator]


async def _done(outcome: Any) -> Any:
    """An outcome already had, as the coroutine :func:`_observe` takes."""
    return outcome
