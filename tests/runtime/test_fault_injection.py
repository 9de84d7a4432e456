"""Random fault injection (issue #7): random compiled pipelines, random faults.

For random well-typed specs over the toolbox (tests/spec_gen.py) and random
fault plans (a declared error, an undeclared exception, an Err of an
undeclared type, a None return, a step cancelling itself, a step cancelling
the whole run from inside, extra awaits before an async step), the compiled
module and the reference interpreter — the oracle for docs/language.md §6 — must
give the same observation: value and state, or error, state and site, or a
Defect with the same cause, reason, state, site and number of attached
sibling defects, or a cancellation — and the same retry pauses (runs use
``fake_retry_clock``, so no retry waits). Faults are deterministic per (step,
value) and happen before any await of the step, so both runs see the same
faults in the same scheduling order (no race between two failures of a
``par`` can go differently).

Independently of the oracle: every Err and Defect names a step whose name is
written at its site (file:line:col) in the spec, and no task outlives a run.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import toolbox as tb
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from spec_gen import FAULTABLE, HEADER, STEP_FAULTS, Fault, fault_plans, specs
from toolbox import Neg, Odd, TState

from agentmonad import Defect, Err, Ok, Site
from agentmonad.control import fake_retry_clock
from mcec.compiler import compile_source
from shared_index import shared_index
from mcec.run.interpret import Interpreter
from mcec.render import render_text
from mcec.run.runner import load_module
from mcec.span import SourceFile

_counter = itertools.count()
FIRED: set[str] = set()  # fault kinds that fired in the current run
DECLARED = {"Odd": Odd, "Neg": Neg}


class Root:
    """The task running the pipeline (what a ``cancel-outer`` fault cancels)."""

    task: asyncio.Future[Any] | None = None


def _fake(name: str, fault: Fault) -> Callable[..., Any]:
    """The toolbox implementation of ``name`` with ``fault`` injected."""
    original = getattr(tb, name)
    is_async, declared, is_fn = FAULTABLE[name]

    def fires(value: int) -> bool:
        hit = value % fault.modulus == fault.residue
        if hit:
            FIRED.add(fault.kind)
        return hit

    def act(state: Any, value: int) -> Any:
        kind = fault.kind
        if kind == "undeclared":
            raise RuntimeError(f"{name} {value}")
        if kind == "declared":
            assert declared is not None
            raise DECLARED[declared](value)
        if kind == "err-undeclared":
            return Err(KeyError(value), state)
        if kind == "returns-none":
            return None
        if kind == "cancel-self":
            raise asyncio.CancelledError()
        raise AssertionError(kind)

    if is_fn:

        def fn(value: int) -> Any:
            return act(None, value) if fires(value) else original(value)

        return fn
    if is_async:

        async def astep(state: Any, value: int) -> Any:
            if fires(value):
                if fault.kind == "delay":
                    for _ in range(fault.delay):
                        await asyncio.sleep(0)
                elif fault.kind == "cancel-outer":
                    assert Root.task is not None
                    Root.task.cancel()
                else:
                    return act(state, value)  # before any await
            return await original(state, value)

        return astep

    def step(state: Any, value: int) -> Any:
        if fires(value):
            if fault.kind == "cancel-outer":
                assert Root.task is not None
                Root.task.cancel()
            else:
                return act(state, value)
        return original(state, value)

    return step


def _check_site(text: str, file: str, site: Site | None) -> None:
    """The site names a step, and that name is written there in the spec (or in the text of a plan
    the spec spawned, whose file is ``<plan t>``: docs/language.md §12)."""
    assert site is not None, "a failure without a site"
    assert site.line >= 1 and site.column >= 1, site
    if site.file.startswith("<plan ") and site.file.endswith(">"):
        return  # the plan's text is the planner's, not the spec's
    assert site.file == file, site
    line = text.splitlines()[site.line - 1]
    assert line[site.column - 1 :].startswith(site.step), (site, line)


async def _observe(make: Callable[[], Awaitable[Any]], text: str, file: str) -> tuple[Any, ...]:
    task = asyncio.ensure_future(make())
    Root.task = task
    try:
        out = await task
    except Defect as defect:
        _check_site(text, file, defect.site)
        for other in defect.others:
            _check_site(text, file, other.site)
        seen: tuple[Any, ...] = (
            "defect",
            type(defect.cause).__name__,
            defect.reason,
            defect.state,
            defect.site,
            len(defect.others),
        )
    except asyncio.CancelledError:
        seen = ("cancelled",)
    else:
        if isinstance(out, Ok):
            seen = ("ok", out.value, out.state)
        else:
            assert isinstance(out, Err)
            _check_site(text, file, out.site)
            seen = ("err", type(out.error).__name__, out.error, out.state, out.site)
    finally:
        Root.task = None
    leftover = asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]
    assert not leftover, "a task outlived the run"
    return seen


def _run(make: Callable[[], Awaitable[Any]], text: str, file: str) -> tuple[Any, ...]:
    """:func:`_observe` one run on a fresh event loop, retry pauses recorded (not waited) and
    appended to the observation."""
    with fake_retry_clock() as pauses:
        seen = asyncio.run(_observe(make, text, file))
    return (*seen, tuple(pauses))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=specs(), inputs=st.lists(st.integers(-60, 60), min_size=1, max_size=3), data=st.data())
def test_injected_faults_compiled_matches_interpreter(spec: str, inputs: list[int], data: st.DataObject) -> None:
    plans: list[dict[str, Fault]] = data.draw(st.lists(fault_plans(spec), min_size=3, max_size=6))
    file = f"inject_{next(_counter)}.mce"
    source = SourceFile(file, spec)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok, render_text(result.diagnostics, {file: source}, color=False) + spec
    assert result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    originals = {name: getattr(module, name) for name in FAULTABLE if hasattr(module, name)}
    for plan in plans:
        fakes = {name: _fake(name, fault) for name, fault in plan.items()}
        for name, impl in {**originals, **fakes}.items():
            setattr(module, name, impl)
        interpreter = Interpreter(result.program, overrides=fakes)
        for value in inputs:
            FIRED.clear()
            compiled = _run(lambda: module.main(TState(), value), spec, file)
            for kind in sorted(FIRED):  # what was exercised: `pytest --hypothesis-show-statistics` shows it
                event(f"fired {kind}")
            interpreted = _run(lambda: interpreter.run("main", TState(), value), spec, file)
            assert compiled == interpreted, f"input {value}, faults {plan}\n{spec}"
            event(f"outcome {compiled[0]}")


EVERY_STEP = (
    HEADER
    + "pipeline side : int -> int = (par <remember, note >>= crash> >>= add_pair) catch MergeConflict => recover_conflict;\n"
    + "pipeline main : int -> int = par <inc >>= no_negatives >>= double, spread >>= each(limit=2) "
    + "(slow_inc >>= even_only >>= negate) >>= total, side> >>= add_triple;\n"
)

#: The same for v2 control flow: faults inside retry (nested), loop, timeout, if and match arms.
EVERY_CONTROL_STEP = (
    HEADER
    + "pipeline main : int -> int = (match { 0 => double, 1 => negate, _ => inc })\n"
    + "    >>= timeout(30) (retry(2, on=LoopExhausted) (loop(5) (retry(3, on=Odd, backoff=0) flaky >>= countdown) >>= parse))\n"
    + "    >>= (if is_positive then (if is_even then note else even_only)\n"
    + "         else (split >>= match { int => inc, \"-3\" => parse, str => (parse >>= slow_inc) }));\n"
)


@pytest.mark.parametrize(
    ("spec", "values"), [(EVERY_STEP, (5, 6)), (EVERY_CONTROL_STEP, (0, 1, 5, -4, 40))], ids=["groups", "control"]
)
def test_every_fault_kind_at_every_step_compiled_matches_interpreter(spec: str, values: tuple[int, ...]) -> None:
    """Deterministic companion of the property test: every fault kind that fits,
    injected into every toolbox entry of one spec that nests par/each/catch (or
    the v2 control-flow forms), on a few inputs — so every kind surely fires."""
    file = f"inject_{next(_counter)}.mce"
    result = compile_source(SourceFile(file, spec), index=shared_index(file))
    assert result.ok and result.program is not None and result.generated is not None
    module = load_module(result.program, result.generated)
    originals = {name: getattr(module, name) for name in FAULTABLE}
    fired: dict[str, int] = {}
    fired_at: set[str] = set()
    for name, (is_async, declared, is_fn) in FAULTABLE.items():
        kinds = ["undeclared"] if is_fn else list(STEP_FAULTS)
        kinds += ["declared"] if declared else []
        kinds += ["delay"] if is_async else []
        for kind in kinds:
            fake = _fake(name, Fault(kind, 1, 0, 2))
            for other, impl in {**originals, name: fake}.items():
                setattr(module, other, impl)
            interpreter = Interpreter(result.program, overrides={name: fake})
            for value in values:
                FIRED.clear()
                compiled = _run(lambda: module.main(TState(), value), spec, file)
                fired[kind] = fired.get(kind, 0) + bool(FIRED)
                fired_at |= {name} if FIRED else set()
                interpreted = _run(lambda: interpreter.run("main", TState(), value), spec, file)
                assert compiled == interpreted, (name, kind, value)
    assert all(fired.values()), fired
    used = {name for name in FAULTABLE if re.search(rf"\b{name}\b", spec[len(HEADER) :])}
    assert fired_at == used, used - fired_at  # a fault fired at every step the spec uses
