"""Shared by the control-flow law tests on *compiled* code (tests/codegen/test_compiled_*.py):
the law header, the strategies, compiling a spec in memory and observing a run.

Every law pipeline starts its body at the same column (:data:`BODY_COLUMN`) and puts ``e``
at the same column, so the sites of e's failures (step, column) are comparable across the
two sides of a law; the line is left out. Runs use ``fake_retry_clock``: no retry waits,
and the pauses asked for are part of what is compared.

The tests were one file until issue 30; they are four now (the identity laws; retry and
loop observed run by run; timeout cancellation and state; a deadline firing inside every
kind of nested helper) so that ``--dist loadfile`` spreads them over the workers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Coroutine
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from spec_gen import HEADER, PLAN_HEADER, Gen, expressions, plan_toolboxes
from toolbox import Neg, Odd, TState

from agentmonad import Defect, Err, LoopExhausted, MergeConflict, Ok, Outcome, PlanRejected, Site, Timeout
from agentmonad.control import fake_retry_clock
from mcec.compiler import compile_source
from shared_index import shared_index
from mcec.render import render_text
from mcec.run.runner import load_module
from mcec.span import SourceFile


LAW_HEADER = (
    HEADER
    + (
        "step probe : int -> int = tb.probe\n"
        "fn as_text : int -> int | str = tb.as_text\n"
        "async step hang : int -> int = tb.hang\n"
    )
    + PLAN_HEADER  # so that an `e` may spawn a plan (docs/language.md §12)
)
#: The toolboxes LAW_HEADER declares, for ``expressions``.
TOOLBOXES = plan_toolboxes()
#: The column (0-based, after the pipeline's head) where every law pipeline's body starts.
BODY_COLUMN = 48
ERRORS: dict[str, type] = {
    "Odd": Odd,
    "Neg": Neg,
    "MergeConflict": MergeConflict,
    "LoopExhausted": LoopExhausted,
    "Timeout": Timeout,
    "PlanRejected": PlanRejected,
}

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TIMED = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])

bodies = st.integers(0, 2).flatmap(lambda depth: expressions(depth, toolboxes=TOOLBOXES))
inputs = st.integers(-20, 20) | st.just(13)  # 13 makes `crash` raise: a Defect
states = st.builds(
    TState,
    log=st.lists(st.sampled_from(["a", "b"]), max_size=2).map(tuple),
    count=st.integers(-3, 3),
    last=st.integers(-3, 3),
)
_counter = itertools.count()

Observed = tuple[Any, ...]


def line(name: str, sig: str, body: str, at: int = 0) -> str:
    """``pipeline name : sig = body;`` with the body at column ``BODY_COLUMN + at``."""
    head = f"pipeline {name} : {sig} ="
    assert len(head) < BODY_COLUMN, head
    return head.ljust(BODY_COLUMN) + " " * at + body + ";"


def compile_lines(*lines: str) -> Any:
    """The module compiled from the law header and ``lines``."""
    text = LAW_HEADER + "\n".join(lines) + "\n"
    source = SourceFile(f"law_{next(_counter)}.mce", text)
    result = compile_source(source, index=shared_index(source.path))
    assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False) + text
    assert result.program is not None and result.generated is not None
    return load_module(result.program, result.generated)


def where(site: Site | None) -> tuple[str, int] | None:
    """A site without its line: the step and the column."""
    return None if site is None else (site.step, site.column)


def observe(run: Callable[[], Coroutine[Any, Any, Outcome[Any, Any, Any]]]) -> Observed:
    """One run on a fresh event loop, as comparable data; the retry pauses asked for last."""
    with fake_retry_clock() as pauses:
        try:
            out = asyncio.run(run())
        except Defect as defect:
            return ("defect", type(defect.cause).__name__, defect.state, where(defect.site), pauses)
    if isinstance(out, Ok):
        return ("ok", out.value, out.state, pauses)
    assert isinstance(out, Err)
    return ("err", out.error, out.state, where(out.site), pauses)


def call(module: Any, pipeline: str, state: TState, value: int) -> Observed:
    """Observe ``module.pipeline(state, value)``."""
    return observe(lambda: getattr(module, pipeline)(state, value))


class Recorder:
    """Stands in for the ``probe`` step: records the (state, value) of each run."""

    def __init__(self) -> None:
        self.runs: list[tuple[TState, int]] = []

    def __call__(self, state: TState, value: int) -> Ok[TState, int]:
        self.runs.append((state, value))
        return Ok(value, state)


@st.composite
def retry_arguments(draw: st.DrawFn, body: Gen, attempts: int) -> tuple[str, tuple[type, ...] | None, float]:
    """``retry(attempts, on=…, backoff=…)``'s argument text, its ``on`` classes (None: every
    error) and its backoff: ``on`` names only errors ``body`` can raise (else MCE014)."""
    text = str(attempts)
    on: tuple[type, ...] | None = None
    if len(body.errors) > 0 and draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(sorted(body.errors)), min_size=1, unique=True))
        text += ", on=" + " | ".join(names)
        on = tuple(ERRORS[n] for n in names)
    backoff = draw(st.sampled_from([None, 0.0, 0.25]))
    if backoff is not None:
        text += f", backoff={backoff:g}"
    return text, on, 0.5 if backoff is None else backoff

