"""Sub-agents (docs/language.md §11, ``local(state=f) p``), on random pairs of specs.

A "sub" spec on state ``Notes`` declares pipelines ``p0``…``p2 : str -> str`` built from a few
stateful and stateless steps and fns over text (``note`` fails on an empty text, ``clip`` on a
long one, ``crash`` breaks on a ``?``) in chains, ``par``, ``each``, ``catch``, ``orelse``,
``local``, ``retry`` and ``match``; a "main" spec on state ``Chat`` uses them through
``local(state=f) p`` in random positions of random expressions of the same forms (and ``if``)
beside its own steps. Both are compiled in memory (the sub spec's
text is written to a temporary folder on ``sys.path``, where the checker reads it, and
``load_module`` runs its generated module first). The properties:

1. compiled ≡ interpreted: Ok/Err/Defect, value, error type and message, final state, site;
2. the adapter law: ``local(state=f) p`` gives p's outcome from ``f(s)`` (value, or error and
   site) with the caller's state ``s``; and in any context, the expression equals the one with
   each ``local(state=f) p`` replaced by an oracle step that runs the sub spec's compiled ``p``
   from ``f(s)`` and gives back the caller's state (tests/cli/adapter_props/impl.py);
3. a raising adapter is a Defect at the ``local``'s adapter site, with the caller's state (the
   adapters put the state they were given in their exception's message).
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import itertools
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmonad import Defect, Err, Ok
from agentmonad.control import fake_retry_clock
from mcec.check.typed import Program
from mcec.compiler import compile_source
from mcec.render import render_text
from mcec.run.interpret import Interpreter
from mcec.run.runner import load_module
from mcec.span import SourceFile

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the fixture package `adapter_props`

from adapter_props import impl  # noqa: E402
from adapter_props.models import Chat, Notes  # noqa: E402

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SUB_HEADER = """\
from adapter_props.models import Notes, Blank, TooLong
import adapter_props.impl as impl

state Notes
error Blank
error TooLong

step note : str -> str ! Blank = impl.note
step clip : str -> str ! TooLong = impl.clip
step recall : str -> str = impl.recall
step crash : str -> str = impl.crash
fn upper : str -> str = impl.upper
fn half : str -> str = impl.half
fn excuse : Blank | TooLong -> str = impl.excuse
fn pair : tuple[str, str] -> str = impl.pair
fn chars : str -> list[str] = impl.chars
fn glue : list[str] -> str = impl.glue
"""

MAIN_HEADER = """\
from adapter_props.models import Chat, Notes, Blank, TooLong, Busy
from {module} import {names}
import adapter_props.impl as impl

state Chat
error Blank
error TooLong
error Busy

step turn : str -> str = impl.turn
step busy : str -> str ! Busy = impl.busy
step say : str -> str = impl.say
fn shorten : str -> str = impl.shorten
fn chars : str -> list[str] = impl.chars
fn glue : list[str] -> str = impl.glue
fn is_blank : str -> bool = impl.is_blank
fn apology : Blank | TooLong | Busy -> str = impl.apology
fn pair : tuple[str, str] -> str = impl.pair
fn notes_for : Chat -> Notes = impl.notes_for
fn fresh : Chat -> Notes = impl.fresh
fn no_notes : Chat -> Notes = impl.no_notes
fn picky : Chat -> Notes = impl.picky
"""

#: The oracle steps of the adapter law (one per non-raising adapter and sub pipeline).
ORACLES = "".join(
    f"async step via_{adapter}_p{i} : str -> str ! Blank | TooLong | MergeConflict = impl.via_{adapter}_p{i}\n"
    for adapter in ("notes_for", "fresh")
    for i in range(3)
)

#: name -> (errors, stateful)
SUB_ATOMS: dict[str, tuple[frozenset[str], bool]] = {
    "note": (frozenset({"Blank"}), True),
    "clip": (frozenset({"TooLong"}), True),
    "recall": (frozenset(), True),
    "crash": (frozenset(), True),
    "upper": (frozenset(), False),
    "half": (frozenset(), False),
}
MAIN_ATOMS: dict[str, tuple[frozenset[str], bool]] = {
    "turn": (frozenset(), True),
    "busy": (frozenset({"Busy"}), True),
    "say": (frozenset(), True),
    "shorten": (frozenset(), False),
}
#: the errors each spec's handler takes
HANDLED = {"sub": ("excuse", frozenset({"Blank", "TooLong"})), "main": ("apology", frozenset({"Blank", "TooLong", "Busy"}))}
LITERALS = ('""', '"a"', '"ab"', '"abc!"')
INPUTS = st.sampled_from(["", "abcdefgh", "a", "ab", "abc", "xy!", "?"])
STATES = st.builds(Chat, turns=st.integers(0, 5), said=st.sampled_from(["", "s", "said"]))


@dataclass(frozen=True)
class Gen:
    """A generated ``str -> str`` expression (a term), its errors and statefulness; ``oracle`` is
    its text with each ``local(state=f) p`` of a non-raising adapter replaced by ``via_f_p``."""

    text: str
    errors: frozenset[str]
    stateful: bool
    oracle: str = ""


def _union(parts: list[Gen]) -> frozenset[str]:
    return frozenset[str]().union(*(p.errors for p in parts))


@st.composite
def expressions(
    draw: st.DrawFn,
    depth: int,
    side: str,
    used: tuple[tuple[str, Gen], ...],
    adapters: tuple[str, ...] = ("notes_for", "fresh"),
) -> Gen:
    """A ``str -> str`` expression of the ``side`` ("sub" or "main") spec, at most ``depth`` deep.
    ``used``: the pipelines it may name (the sub spec's earlier ones; for the main spec, the sub
    spec's, each used through ``local(state=f)`` with one of ``adapters``)."""
    atoms = SUB_ATOMS if side == "sub" else MAIN_ATOMS
    kinds = (["used"] * (4 if side == "main" else 1) if used else []) + ["atom"] * 2
    if depth > 0:
        kinds += ["bind", "bind", "par", "catch", "orelse", "local", "match", "if", "each", "retry"]
    kind = draw(st.sampled_from(kinds))
    if kind == "atom":  # the sub spec's failing steps first (hypothesis favours early choices)
        name = draw(st.sampled_from(sorted(atoms, key=lambda n: (not atoms[n][0], n))))
        errors, stateful = atoms[name]
        return Gen(name, errors, stateful, name)
    if kind == "used":
        name, gen = draw(st.sampled_from(used))
        if side == "sub":
            return Gen(name, gen.errors, gen.stateful, name)
        adapter = draw(st.sampled_from(adapters))
        text = f"local(state={adapter}) {name}"
        oracle = text if adapter in ("no_notes", "picky") else f"via_{adapter}_{name}"
        return Gen(text, gen.errors, False, oracle)
    sub = expressions(depth - 1, side, used, adapters)
    if kind == "bind":
        parts = draw(st.lists(sub, min_size=2, max_size=3))
        text = "(" + " >>= ".join(p.text for p in parts) + ")"
        oracle = "(" + " >>= ".join(p.oracle for p in parts) + ")"
        return Gen(text, _union(parts), any(p.stateful for p in parts), oracle)
    if kind == "par":
        a, b = draw(sub), draw(sub)
        errors = a.errors | b.errors | ({"MergeConflict"} if a.stateful and b.stateful else frozenset())
        return Gen(
            f"(par <{a.text}, {b.text}> >>= pair)", errors, a.stateful or b.stateful, f"(par <{a.oracle}, {b.oracle}> >>= pair)"
        )
    if kind == "each":
        body = draw(sub)
        limit = draw(st.sampled_from(["", "(limit=1)", "(limit=2)"]))
        errors = body.errors | ({"MergeConflict"} if body.stateful else frozenset())
        return Gen(
            f"(chars >>= each{limit} {body.text} >>= glue)", errors, body.stateful, f"(chars >>= each{limit} {body.oracle} >>= glue)"
        )
    if kind == "catch":
        body = draw(sub)
        handler, takes = HANDLED[side]
        catchable = sorted(body.errors & takes)
        if not catchable:
            return body
        caught = draw(st.lists(st.sampled_from(catchable), min_size=1, max_size=len(catchable), unique=True))
        clause = f" catch {' | '.join(caught)} => {handler})"
        return Gen(f"({body.text}{clause}", body.errors - set(caught), body.stateful, f"({body.oracle}{clause}")
    if kind == "orelse":
        a, b = draw(sub), draw(sub)
        return Gen(f"({a.text} orelse {b.text})", b.errors, a.stateful or b.stateful, f"({a.oracle} orelse {b.oracle})")
    if kind == "local":
        body = draw(sub)
        return Gen(f"(local {body.text})", body.errors, False, f"(local {body.oracle})")
    if kind == "match":
        literals = draw(st.lists(st.sampled_from(LITERALS), min_size=1, max_size=2, unique=True))
        bodies = draw(st.lists(sub, min_size=len(literals) + 1, max_size=len(literals) + 1))
        patterns = [*literals, "_"]
        text = "(match { " + ", ".join(f"{p} => {b.text}" for p, b in zip(patterns, bodies)) + " })"
        oracle = "(match { " + ", ".join(f"{p} => {b.oracle}" for p, b in zip(patterns, bodies)) + " })"
        return Gen(text, _union(bodies), any(b.stateful for b in bodies), oracle)
    if kind == "if":
        if side == "sub":  # the sub spec has no predicate: a literal match stands in
            return draw(sub)
        a, b = draw(sub), draw(sub)
        return Gen(f"(if is_blank then {a.text} else {b.text})", a.errors | b.errors, a.stateful or b.stateful,
                   f"(if is_blank then {a.oracle} else {b.oracle})")
    assert kind == "retry", kind
    body = draw(sub)
    if side == "main" and draw(st.booleans()):  # a body that can fail, and succeed on a later turn
        body = Gen(f"(busy >>= {body.text})", body.errors | {"Busy"}, True, f"(busy >>= {body.oracle})")
    arguments = [str(draw(st.integers(1, 3)))]
    if body.errors and draw(st.booleans()):
        on = draw(st.lists(st.sampled_from(sorted(body.errors)), min_size=1, max_size=len(body.errors), unique=True))
        arguments.append("on=" + " | ".join(on))
    arguments.append("backoff=0")
    head = f"(retry({', '.join(arguments)}) "
    return Gen(f"{head}{body.text})", body.errors, body.stateful, f"{head}{body.oracle})")


@st.composite
def main_expressions(
    draw: st.DrawFn, pipelines: tuple[tuple[str, Gen], ...], adapters: tuple[str, ...] = ("notes_for", "fresh")
) -> Gen:
    """A main spec's expression with at least one sub-agent: one drawn without any gets one
    put before it, after it, or beside it in a ``par``."""
    gen = draw(expressions(draw(st.integers(1, 3)), "main", pipelines, adapters))
    if "local(state=" in gen.text:
        return gen
    extra = draw(expressions(0, "main", pipelines, adapters).filter(lambda g: "local(state=" in g.text))
    where = draw(st.sampled_from(["before", "after", "par"]))
    if where == "par":
        return Gen(
            f"(par <{extra.text}, {gen.text}> >>= pair)", gen.errors | extra.errors, gen.stateful,
            f"(par <{extra.oracle}, {gen.oracle}> >>= pair)",
        )
    first, second = (extra, gen) if where == "before" else (gen, extra)
    return Gen(
        f"({first.text} >>= {second.text})", gen.errors | extra.errors, gen.stateful,
        f"({first.oracle} >>= {second.oracle})",
    )


@st.composite
def sub_specs(draw: st.DrawFn) -> tuple[str, tuple[tuple[str, Gen], ...]]:
    """A sub spec's text (state Notes) and its pipelines ``p0``…``p2`` (each may use the earlier)."""
    pipelines: list[tuple[str, Gen]] = []
    lines = [SUB_HEADER]
    for index in range(3):
        gen = draw(expressions(draw(st.integers(0, 2)), "sub", tuple(pipelines)))
        name = f"p{index}"
        lines.append(f"pipeline {name} : str -> str = {gen.text};")
        pipelines.append((name, gen))
    return "\n".join(lines) + "\n", tuple(pipelines)


# -- compiling, cached by spec text -----------------------------------------------------------

FOLDER: Path | None = None
_compiled: dict[str, tuple[Program, ModuleType]] = {}
_counter = itertools.count()


def _folder() -> Path:
    global FOLDER
    if FOLDER is None:
        import tempfile

        FOLDER = Path(tempfile.mkdtemp(prefix="adapter_props_"))
        atexit.register(shutil.rmtree, FOLDER, ignore_errors=True)
        sys.path.insert(0, str(FOLDER))
    return FOLDER


def sub_module_name(sub: str) -> str:
    """The generated module of the sub spec ``sub``, written (once) as ``sub_<hash>.mce``."""
    name = "sub_" + hashlib.sha256(sub.encode()).hexdigest()[:16]
    path = _folder() / f"{name}.mce"
    if not path.exists():
        path.write_text(sub, encoding="utf-8")
    return f"{name}_mce"


def compiled(text: str, name: str) -> tuple[Program, ModuleType]:
    """The checked program and loaded module of spec ``text`` (compiled once per text)."""
    known = _compiled.get(text)
    if known is None:
        source = SourceFile(str(_folder() / f"{name}_{next(_counter)}.mce"), text)
        result = compile_source(source)
        assert result.ok, render_text(result.diagnostics, {source.path: source}, color=False) + text
        assert result.program is not None and result.generated is not None
        known = _compiled[text] = (result.program, load_module(result.program, result.generated))
    return known


def main_spec(sub: str, pipelines: dict[str, str]) -> str:
    """A main spec using ``p0``…``p2`` of ``sub``, declaring ``pipelines`` (name -> body)."""
    header = MAIN_HEADER.format(module=sub_module_name(sub), names="p0, p1, p2") + ORACLES
    return header + "".join(f"pipeline {name} : str -> str = {body};\n" for name, body in pipelines.items())


def observe(coro: Any, *, sites: bool = True) -> tuple[Any, ...]:
    """A run reduced to comparable data (retry pauses recorded, not waited)."""
    with fake_retry_clock() as pauses:
        try:
            outcome = asyncio.run(coro)
        except Defect as defect:
            return ("defect", type(defect.cause).__name__, str(defect.cause), defect.state, defect.site if sites else None)
    if isinstance(outcome, Ok):
        return ("ok", outcome.value, outcome.state, list(pauses))
    assert isinstance(outcome, Err)
    site = outcome.site if sites else None
    return ("err", type(outcome.error).__name__, str(outcome.error), outcome.state, site, list(pauses))


def run_sub(sub: str, pipeline: str, state: Notes, value: str) -> tuple[Any, ...]:
    module = sys.modules[sub_module_name(sub)]
    return observe(getattr(module, pipeline)(state, value))


def raising_sites(text: str, file: str) -> set[tuple[str, str, int, int]]:
    """Where the raising adapters (``no_notes``, ``picky``) are named in ``text``: the sites a
    Defect of theirs may have (step, file, line, column of the adapter's name)."""
    found = set()
    for match in re.finditer(r"local\(state=(no_notes|picky)\)", text):
        start = match.start(1)
        line = text.count("\n", 0, start) + 1
        column = start - (text.rfind("\n", 0, start) + 1) + 1
        found.add((match.group(1), file, line, column))
    return found


# -- the properties ---------------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), states=st.lists(STATES, min_size=1, max_size=2), inputs=st.lists(INPUTS, min_size=1, max_size=3))
def test_compiled_matches_interpreter(data: st.DataObject, states: list[Chat], inputs: list[str]) -> None:
    sub, pipelines = data.draw(sub_specs(), label="sub")
    adapters = ("notes_for", "notes_for", "fresh", "picky", "no_notes")
    gen = data.draw(main_expressions(pipelines, adapters), label="main")
    text = main_spec(sub, {"main": gen.text})
    program, module = compiled(text, "main")
    interpreter = Interpreter(program)
    for state, value in itertools.product(states, inputs):
        mine = observe(module.main(state, value))
        oracle = observe(interpreter.run("main", state, value))
        assert mine == oracle, f"{state} {value!r}\n{sub}\n{text}"


@SETTINGS
@given(data=st.data(), state=STATES, inputs=st.lists(INPUTS, min_size=1, max_size=4))
def test_a_sub_agent_gives_its_value_and_the_callers_state(data: st.DataObject, state: Chat, inputs: list[str]) -> None:
    """``local(state=f) p`` on (s, x) gives what p gives from f(s) on x (its value, or its error and
    site), with the caller's state s, compiled and interpreted."""
    sub, _ = data.draw(sub_specs(), label="sub")
    laws = {f"law_{adapter}_p{i}": f"local(state={adapter}) p{i}" for adapter in ("notes_for", "fresh") for i in range(3)}
    text = main_spec(sub, laws)
    program, module = compiled(text, "main")
    interpreter = Interpreter(program)
    adapters = {"notes_for": impl.notes_for, "fresh": impl.fresh}
    for name, value in itertools.product(laws, inputs):
        adapter, pipeline = name.split("_", 1)[1].rsplit("_", 1)
        alone = run_sub(sub, pipeline, adapters[adapter](state), value)
        for mine in (observe(getattr(module, name)(state, value)), observe(interpreter.run(name, state, value))):
            if alone[0] == "defect":  # a step of p broke: its Defect comes through as it is (the
                # state and site of the step that broke, in the sub spec, as for `local e`)
                assert mine == alone, (name, value, sub)
            elif alone[0] == "ok":
                assert mine == ("ok", alone[1], state, []), (name, value, sub)
            else:  # its error, message and site, with the caller's state (not the sub-agent's)
                assert mine == ("err", *alone[1:3], state, alone[4], []), (name, value, sub)


@SETTINGS
@given(data=st.data(), states=st.lists(STATES, min_size=1, max_size=2), inputs=st.lists(INPUTS, min_size=1, max_size=3))
def test_a_sub_agent_in_any_context_is_its_pipeline_run_from_the_adapted_state(
    data: st.DataObject, states: list[Chat], inputs: list[str]
) -> None:
    """In a random expression, each ``local(state=f) p`` can be replaced by a step that runs the
    sub spec's compiled ``p`` from ``f(s)`` and gives back ``s`` (value, error and state agree)."""
    sub, pipelines = data.draw(sub_specs(), label="sub")
    gen = data.draw(main_expressions(pipelines), label="main")
    assert gen.text != gen.oracle
    text = main_spec(sub, {"main": gen.text, "oracle": gen.oracle})
    _, module = compiled(text, "main")
    impl.SUB = sys.modules[sub_module_name(sub)]
    try:
        for state, value in itertools.product(states, inputs):
            mine = observe(module.main(state, value), sites=False)
            oracle = observe(module.oracle(state, value), sites=False)
            assert mine == oracle, f"{state} {value!r}\n{sub}\n{text}"
    finally:
        impl.SUB = None


@SETTINGS
@given(data=st.data(), states=st.lists(STATES, min_size=1, max_size=3), value=INPUTS)
def test_a_raising_adapter_is_a_defect_at_its_site_with_the_callers_state(
    data: st.DataObject, states: list[Chat], value: str
) -> None:
    """Where a raising adapter's Defect comes out of a random expression, it is at that adapter's
    site, with the state the adapter was given (its message); at the head it always does."""
    sub, pipelines = data.draw(sub_specs(), label="sub")
    adapters = ("notes_for", "no_notes", "picky")
    gen = data.draw(main_expressions(pipelines, adapters), label="main")
    used = data.draw(st.sampled_from(["p0", "p1", "p2"]))
    head = f"turn >>= local(state=no_notes) {used} >>= {gen.text}"
    text = main_spec(sub, {"main": gen.text, "head": head})
    program, module = compiled(text, "main")
    file = Path(program.path).name
    sites = raising_sites(text, file)
    line = next(i for i, l in enumerate(text.splitlines(), 1) if l.startswith("pipeline head "))
    column = text.splitlines()[line - 1].index("no_notes") + 1
    interpreter = Interpreter(program)
    for state in states:
        for name in ("main", "head"):
            for mine in (observe(getattr(module, name)(state, value)), observe(interpreter.run(name, state, value))):
                if name == "head":  # the first adapter raises: the caller's state is after `turn`
                    after = Chat(state.turns + 1, state.said)
                    assert mine == ("defect", "ValueError", repr(after), after, mine[4]), (mine, text)
                    site = mine[4]
                    assert (site.step, site.file, site.line, site.column) == ("no_notes", file, line, column)
                elif mine[0] == "defect" and mine[1] == "ValueError":  # an adapter's (`crash` raises others)
                    assert mine[2] == repr(mine[3]), (mine, text)
                    site = mine[4]
                    assert (site.step, site.file, site.line, site.column) in sites, (mine, sites, text)
