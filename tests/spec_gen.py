"""Random well-typed `.mce` specs over the toolbox (tests/toolbox.py), for
differential and fault tests. Every expression is ``int -> int``; the
generator tracks each expression's error set and statefulness exactly as
the language reference (docs/language.md §5) defines them, so it only writes
``catch`` clauses and ``retry(on=…)`` arguments that can fire (no MCE014).

The v2 control-flow forms stay in the ``int -> int`` world through a few toolbox
entries: ``if`` tests ``is_even``/``is_positive`` (or a chain ending in one);
``match`` tests an ``int`` against int literals, then ``_`` or ``int``, or the
``int | str`` of ``split`` against ``int``, string literals and ``str``/``_``,
its text arms parsed back with ``parse``; a ``loop`` body ends in ``countdown``
or ``split`` (an ``int`` goes round, text ends the loop and is parsed back);
``retry`` mostly wraps a body that can fail (``flaky`` succeeds once the state
has counted enough attempts); ``timeout`` deadlines are long enough never to
fire, so both sides of a differential run agree on timing. ``spawn(t) p`` (§12)
runs a plan over a toolbox of :data:`PLAN_HEADER` (or ``helpers``, over the helper
pipelines): ``pick_plan`` writes a plan chosen by the input (one in six rejected,
so ``PlanRejected`` is caught and retried on like any error), ``write_plan`` always
the same one.

Every construct of the language must be generated here: the differential test
(compiled ≡ interpreted) and the fuzzers cover only what this module writes
(see tests/README.md)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import assert_never

from hypothesis import strategies as st

from mcec import syntax as s

HEADER = """\
from toolbox import TState, Odd, Neg
import toolbox as tb

state TState
error Odd
error Neg

step inc : int -> int = tb.inc
step note : int -> int = tb.note
step remember : int -> int = tb.remember
step even_only : int -> int ! Odd = tb.even_only
step no_negatives : int -> int ! Neg = tb.no_negatives
async step slow_inc : int -> int ! Neg = tb.slow_inc
step crash : int -> int = tb.crash
fn double : int -> int = tb.double
fn negate : int -> int = tb.negate
fn recover : Odd | Neg -> int = tb.recover
fn recover_conflict : MergeConflict -> int = tb.recover_conflict
fn spread : int -> list[int] = tb.spread
fn total : list[int] -> int = tb.total
fn add_pair : tuple[int, int] -> int = tb.add_pair
fn add_triple : tuple[int, int, int] -> int = tb.add_triple
fn is_even : int -> bool = tb.is_even
step is_positive : int -> bool = tb.is_positive
step split : int -> int | str = tb.split
step countdown : int -> int | str = tb.countdown
fn parse : str -> int = tb.parse
step flaky : int -> int ! Odd = tb.flaky
fn recover_loop : LoopExhausted -> int = tb.recover_loop
fn recover_timeout : Timeout -> int = tb.recover_timeout
"""

#: Declared (after the helper pipelines) by a spec that uses ``spawn`` (docs/language.md §12):
#: two planners (``write_plan`` always writes ``double >>= inc``, which only ``counting`` and
#: ``failing`` accept; ``pick_plan``'s plan depends on the input, one in six is rejected) and
#: the fixed toolboxes of :data:`TOOLBOXES`. Every toolbox lists ``add_pair``, ``spread``,
#: ``total`` and ``is_even`` too, for ``pick_plan``'s ``par``, ``each`` and ``if`` plans.
PLAN_HEADER = """\
from agentmonad import PlanRequest
step write_plan : PlanRequest -> str = tb.write_plan
fn pick_plan : PlanRequest -> str = tb.pick_plan
fn recover_plan : PlanRejected -> int = tb.recover_plan
toolbox pure : int -> int = double, negate, add_pair, spread, total, is_even
toolbox counting : int -> int ! MergeConflict = inc, note, double, add_pair, spread, total, is_even
toolbox failing : int -> int ! Odd | Neg | MergeConflict = even_only, no_negatives, slow_inc, flaky, crash, remember, add_pair, spread, total, is_even
"""

#: The entries every toolbox lists besides its ``int -> int`` ones (see :data:`PLAN_HEADER`).
PLAN_HELPERS = "add_pair, spread, total, is_even"

#: name -> (errors, stateful)
ATOMS: dict[str, tuple[frozenset[str], bool]] = {
    "inc": (frozenset(), True),
    "note": (frozenset(), True),
    "remember": (frozenset(), True),
    "even_only": (frozenset({"Odd"}), True),
    "no_negatives": (frozenset({"Neg"}), True),
    "slow_inc": (frozenset({"Neg"}), True),
    "crash": (frozenset(), True),
    "flaky": (frozenset({"Odd"}), True),
    "double": (frozenset(), False),
    "negate": (frozenset(), False),
}


@dataclass(frozen=True)
class Gen:
    """A generated expression: its text (a term: safe to use anywhere), errors, statefulness."""

    text: str
    errors: frozenset[str]
    stateful: bool


#: toolbox -> (its declared errors, whether an entry may change state), as PLAN_HEADER declares them
TOOLBOXES: dict[str, tuple[frozenset[str], bool]] = {
    "pure": (frozenset(), False),
    "counting": (frozenset({"MergeConflict"}), True),
    "failing": (frozenset({"Odd", "Neg", "MergeConflict"}), True),
}

#: planner -> stateful (a step may change state, a fn cannot)
PLANNERS: dict[str, bool] = {"write_plan": True, "pick_plan": False}

#: error -> the handler a ``catch`` of it uses (Odd and Neg share one: ``catch Odd | Neg => recover``)
HANDLERS: dict[str, str] = {
    "Odd": "recover",
    "Neg": "recover",
    "MergeConflict": "recover_conflict",
    "LoopExhausted": "recover_loop",
    "Timeout": "recover_timeout",
    "PlanRejected": "recover_plan",
}

#: ``int -> bool`` conditions for ``if``: name -> stateful
PREDICATES: dict[str, bool] = {"is_even": False, "is_positive": True}

#: ``int -> int | str`` steps: a loop body ending in one goes round on ints and ends on text
ENDERS = ("countdown", "split")

#: Deadlines generous enough never to fire in a test run (so both sides agree on timing).
SECONDS = ("30", "60", "12.5")

#: Literals an ``int`` match tests for (small, so generated values hit them; negative ones too).
INT_LITERALS = (-2, -1, 0, 1, 2, 3, 4)


def _union(parts: list[Gen]) -> frozenset[str]:
    """The errors of all ``parts``."""
    return frozenset[str]().union(*(p.errors for p in parts))


@st.composite
def expressions(
    draw: st.DrawFn,
    depth: int,
    pipelines: tuple[tuple[str, Gen], ...] = (),
    toolboxes: tuple[tuple[str, Gen], ...] = (),
) -> Gen:
    """An ``int -> int`` expression, at most ``depth`` levels deep.

    Any of them may be the body of a literal ``match`` arm, which is given ``Literal[0]``:
    a ``match`` or an ``if`` at the head of a part takes that type, and a literal type
    goes wherever ``int`` does (a ``par`` beside ``int`` branches, an ``orelse``, a
    ``loop`` whose results go round as ``int``).

    ``toolboxes`` (name, errors and statefulness of each ``toolbox`` the spec declares:
    :data:`PLAN_HEADER`'s and perhaps one of the helper pipelines) lets it write
    ``spawn(t) planner`` — only then, as a spec without them declares no toolbox.

    """
    kinds = ["atom"] * 3 + (["pipeline"] if pipelines else []) + (["spawn"] if toolboxes else [])
    if depth > 0:
        kinds += ["bind", "bind", "par2", "par3", "each", "catch", "orelse", "local"]
        kinds += ["if", "match_int", "match_union", "loop", "retry", "timeout"]
    kind = draw(st.sampled_from(kinds))
    if kind == "spawn" and draw(st.integers(0, 2)) > 0:  # a third as likely as a step: others stay covered
        kind = "atom"
    if kind == "spawn":  # t : int -> int ! E, planner : PlanRequest -> str: int -> int ! E | PlanRejected
        toolbox, box = draw(st.sampled_from(toolboxes))
        planner = draw(st.sampled_from(sorted(PLANNERS)))
        return Gen(f"(spawn({toolbox}) {planner})", box.errors | {"PlanRejected"}, box.stateful or PLANNERS[planner])
    if kind == "atom":
        name = draw(st.sampled_from(sorted(ATOMS)))
        errors, stateful = ATOMS[name]
        return Gen(name, errors, stateful)
    if kind == "pipeline":
        name, gen = draw(st.sampled_from(pipelines))
        return Gen(name, gen.errors, gen.stateful)
    head = expressions(depth - 1, pipelines, toolboxes)  # given what this expression is given
    sub = expressions(depth - 1, pipelines, toolboxes)  # given an int
    if kind == "bind":
        first = draw(head)
        parts = [first, *draw(st.lists(sub, min_size=1, max_size=3))]
        text = "(" + " >>= ".join(p.text for p in parts) + ")"
        return Gen(text, _union(parts), any(p.stateful for p in parts))
    if kind in ("par2", "par3"):
        n = 2 if kind == "par2" else 3
        branches = draw(st.lists(head, min_size=n, max_size=n))
        errors = _union(branches)
        if sum(b.stateful for b in branches) >= 2:
            errors |= {"MergeConflict"}
        joiner = "add_pair" if n == 2 else "add_triple"
        text = "(par <" + ", ".join(b.text for b in branches) + "> >>= " + joiner + ")"
        return Gen(text, errors, any(b.stateful for b in branches))
    if kind == "each":
        body = draw(sub)
        limit = draw(st.sampled_from(["", "(limit=1)", "(limit=2)", "(limit=5)"]))
        errors = body.errors | ({"MergeConflict"} if body.stateful else frozenset())
        return Gen(f"(spread >>= each{limit} {body.text} >>= total)", errors, body.stateful)
    if kind == "catch":
        body = draw(head)
        handled = sorted({HANDLERS[e] for e in body.errors if e in HANDLERS})
        if not handled:
            return body
        handler = draw(st.sampled_from(handled))
        catchable = sorted(e for e in body.errors if HANDLERS.get(e) == handler)
        caught = draw(st.lists(st.sampled_from(catchable), min_size=1, max_size=len(catchable), unique=True))
        text = f"({body.text} catch {' | '.join(caught)} => {handler})"
        return Gen(text, body.errors - set(caught), body.stateful)
    if kind == "orelse":
        first, second = draw(head), draw(head)
        text = f"({first.text} orelse {second.text})"
        return Gen(text, second.errors, first.stateful or second.stateful)
    if kind == "local":
        body = draw(head)
        return Gen(f"(local {body.text})", body.errors, False)
    return draw(_control(kind, head, sub))


@st.composite
def _control(
    draw: st.DrawFn,
    kind: str,
    head: st.SearchStrategy[Gen],
    sub: st.SearchStrategy[Gen],
) -> Gen:
    """The v2 control-flow forms (docs/language.md §5), each ``int -> int``, with the error
    sets and statefulness §5 gives them. ``head`` draws the parts given what the form is
    given (a literal arm's body among them), ``sub`` those given an ``int``."""
    if kind == "if":  # condition and branches are all given the original input
        predicate = draw(st.sampled_from(sorted(PREDICATES)))
        condition = Gen(predicate, frozenset(), PREDICATES[predicate])
        if draw(st.booleans()):  # a condition that is a chain: its errors and state count too
            before = draw(head)
            condition = Gen(f"({before.text} >>= {predicate})", before.errors, before.stateful or condition.stateful)
        then, otherwise = draw(head), draw(head)
        parts = [condition, then, otherwise]
        text = f"(if {condition.text} then {then.text} else {otherwise.text})"
        return Gen(text, _union(parts), any(p.stateful for p in parts))
    if kind == "match_int":  # literal arms, then `_` or `int` for the rest
        literals = draw(st.lists(st.sampled_from(INT_LITERALS), min_size=1, max_size=3, unique=True))
        literal_arms = draw(st.lists(head, min_size=len(literals), max_size=len(literals)))
        last_pattern, last = draw(st.sampled_from(["_", "int"])), draw(head)
        arms = [f"{n} => {b.text}" for n, b in zip(literals, literal_arms)] + [f"{last_pattern} => {last.text}"]
        bodies = [*literal_arms, last]
        return Gen(f"(match {{ {', '.join(arms)} }})", _union(bodies), any(b.stateful for b in bodies))
    if kind == "match_union":  # over `split`'s `int | str`; text arms are parsed back to int
        on_int = draw(sub)
        texts = draw(st.lists(st.sampled_from(['"0"', '"3"', '"-3"']), max_size=2, unique=True))
        bodies = [on_int]
        arms = []
        for pattern in [*texts, draw(st.sampled_from(["str", "_"]))]:
            after: Gen | None = draw(st.none() | sub)
            arm = Gen("parse", frozenset(), False) if after is None else Gen(f"(parse >>= {after.text})", after.errors, after.stateful)
            arms.append(f"{pattern} => {arm.text}")
            bodies.append(arm)
        arms.insert(draw(st.integers(0, len(texts))), f"int => {on_int.text}")  # before the catch-all arm
        return Gen(f"(split >>= match {{ {', '.join(arms)} }})", _union(bodies), True)
    if kind == "loop":  # ints go round, the ender's text ends the loop and is parsed back
        bound = draw(st.integers(1, 4))
        ender = draw(st.sampled_from(ENDERS))
        first: Gen | None = draw(st.none() | head)
        if first is None:
            return Gen(f"(loop({bound}) {ender} >>= parse)", frozenset({"LoopExhausted"}), True)
        errors = first.errors | {"LoopExhausted"}
        return Gen(f"(loop({bound}) ({first.text} >>= {ender}) >>= parse)", errors, True)
    body = draw(head)
    if kind == "retry":  # `on=` names only errors the body can raise (else MCE014)
        fails_by = draw(st.sampled_from([None, "flaky", "flaky", "even_only"]))  # mostly a body that can fail
        if fails_by is not None:
            errors, _ = ATOMS[fails_by]
            body = Gen(f"({body.text} >>= {fails_by})", body.errors | errors, True)
        arguments = [str(draw(st.integers(1, 3)))]
        if len(body.errors) > 0 and draw(st.booleans()):
            on = draw(st.lists(st.sampled_from(sorted(body.errors)), min_size=1, max_size=len(body.errors), unique=True))
            arguments.append("on=" + " | ".join(on))
        backoff = draw(st.sampled_from([None, "0", "0.01"]))
        if backoff is not None:
            arguments.append(f"backoff={backoff}")
        return Gen(f"(retry({', '.join(arguments)}) {body.text})", body.errors, body.stateful)
    assert kind == "timeout", kind
    seconds = draw(st.sampled_from(SECONDS))
    return Gen(f"(timeout({seconds}) {body.text})", body.errors | {"Timeout"}, body.stateful)


#: The constructs :func:`specs` does not write, by class name, and where each is covered instead.
NOT_WRITTEN: dict[str, str] = {
    "SubAgent": "needs a second spec with a state of its own: tests/cli/test_adapter_props.py",
    "Budget": "needs an llm step and a model endpoint: tests/test_llm_budget_state.py",
    "ServerDecl": "needs an MCP server: tests/test_mcp_research.py, tests/runtime",
    "ToolDecl": "needs an MCP server: tests/test_mcp_research.py, tests/runtime",
    "ModelDecl": "needs a model endpoint: tests/test_llm_react.py, tests/test_llm_model_options.py",
    "LlmDecl": "needs a model endpoint: tests/test_llm_react.py, tests/test_llm_model_options.py",
    "AskDecl": "needs a person (a human-input handler): tests/cli/test_ask.py, compiled and interpreted",
    "RenameDecl": "only says what an earlier version called a step: tests/durable/test_upgrade_migrations.py",
}


def construct(node: s.Expr | s.Decl) -> str:
    """Which branch of this module writes a node like ``node`` (:func:`expressions`' kinds, or the
    part of :data:`HEADER`, :data:`PLAN_HEADER` or :func:`specs` that declares it).

    A match over every kind of expression and declaration, so that a new construct is a mypy error
    here until this module writes it (the differential test and the fuzzers cover only what it
    writes), or says in :data:`NOT_WRITTEN` why not. tests/test_exhaustive_dispatch.py holds
    :func:`specs` to it."""
    match node:
        case s.Ref():
            return "atom"
        case s.Bind():
            return "bind"
        case s.Par():
            return "par"
        case s.Each() | s.Local() | s.Catch() | s.OrElse() | s.Loop() | s.Retry() | s.Timeout() | s.Spawn():
            return type(node).__name__.lower()
        case s.Match():
            return "match"
        case s.IfElse():
            return "if"
        case s.FromImport() | s.ModuleImport() | s.StateDecl() | s.ErrorDecl() | s.StepDecl() | s.FnDecl():
            return "header"
        case s.ToolboxDecl():
            return "plan header"
        case s.PipelineDecl():
            return "pipeline"
        case (s.SubAgent() | s.Budget() | s.ServerDecl() | s.ToolDecl() | s.ModelDecl() | s.LlmDecl() | s.AskDecl()
              | s.RenameDecl()):
            raise AssertionError(f"not written: {NOT_WRITTEN[type(node).__name__]}")
        case _:
            assert_never(node)


def plan_toolboxes() -> tuple[tuple[str, Gen], ...]:
    """:data:`PLAN_HEADER`'s toolboxes, as :func:`expressions` takes them."""
    return tuple((name, Gen(name, errors, stateful)) for name, (errors, stateful) in TOOLBOXES.items())


def helpers_toolbox(pipelines: list[tuple[str, Gen]]) -> tuple[str, Gen]:
    """``toolbox helpers`` over the helper pipelines (and ``double``): its declaration and what
    a spawn over it may do. A plan may ``par`` or ``each`` a stateful helper: MergeConflict."""
    stateful = any(gen.stateful for _, gen in pipelines)
    errors = _union([gen for _, gen in pipelines]) | ({"MergeConflict"} if stateful else frozenset())
    entries = ", ".join([name for name, _ in pipelines] + ["double", PLAN_HELPERS])
    declared = f" ! {' | '.join(sorted(errors))}" if errors else ""
    return f"toolbox helpers : int -> int{declared} = {entries}", Gen("helpers", errors, stateful)


@st.composite
def specs(draw: st.DrawFn, max_depth: int = 3) -> str:
    """A whole spec: a few helper pipelines and a ``main : int -> int``. A spec that uses
    ``spawn`` declares :data:`PLAN_HEADER` after the helpers, and ``toolbox helpers`` over them
    when it has some (only ``main`` spawns over that one: a helper's spawn is over a fixed toolbox)."""
    pipelines: list[tuple[str, Gen]] = []
    lines = [HEADER]
    fixed = plan_toolboxes()
    for index in range(draw(st.integers(0, 2))):
        gen = draw(expressions(draw(st.integers(0, max_depth - 1)), tuple(pipelines), fixed))
        name = f"sub_{index}"
        lines.append(f"pipeline {name} : int -> int = {gen.text};")
        pipelines.append((name, gen))
    toolboxes, declarations = fixed, [PLAN_HEADER]
    if pipelines:
        declaration, helpers = helpers_toolbox(pipelines)
        toolboxes, declarations = (*fixed, ("helpers", helpers)), [PLAN_HEADER, declaration + "\n"]
    main = draw(expressions(draw(st.integers(1, max_depth)), tuple(pipelines), toolboxes))
    lines.append(f"pipeline main : int -> int = {main.text};")
    if any("spawn(" in line for line in lines):
        lines[-1:-1] = "".join(declarations).splitlines()
    return "\n".join(lines) + "\n"


# -- fault plans (tests/test_7_fault_injection.py) ------------------------------

#: toolbox name -> (is_async, declared error class name or None, is a fn)
FAULTABLE: dict[str, tuple[bool, str | None, bool]] = {
    "inc": (False, None, False),
    "note": (False, None, False),
    "remember": (False, None, False),
    "crash": (False, None, False),
    "even_only": (False, "Odd", False),
    "no_negatives": (False, "Neg", False),
    "slow_inc": (True, "Neg", False),
    "double": (False, None, True),
    "negate": (False, None, True),
    "flaky": (False, "Odd", False),
    "is_positive": (False, None, False),
    "split": (False, None, False),
    "countdown": (False, None, False),
    "is_even": (False, None, True),
}

STEP_FAULTS = ("undeclared", "err-undeclared", "returns-none", "cancel-self", "cancel-outer")


@dataclass(frozen=True)
class Fault:
    """Inject ``kind`` into a step when ``value % modulus == residue`` (so both
    implementations see the same faults for the same (step, value))."""

    kind: str
    modulus: int
    residue: int
    delay: int = 0


@st.composite
def faults_for(draw: st.DrawFn, name: str) -> Fault:
    """A fault that fits the toolbox entry ``name``: fns can only raise; only
    steps with a declared error raise it; only the async step can be delayed."""
    is_async, declared, is_fn = FAULTABLE[name]
    kinds: list[str] = ["undeclared"] if is_fn else list(STEP_FAULTS)
    if declared is not None:
        kinds += ["declared"] * 2
    if is_async:
        kinds += ["delay"] * 2
    kind = draw(st.sampled_from(kinds))
    modulus = draw(st.integers(1, 3))
    residue = draw(st.integers(0, modulus - 1))
    delay = draw(st.integers(1, 4)) if kind == "delay" else 0
    return Fault(kind, modulus, residue, delay)


@st.composite
def fault_plans(draw: st.DrawFn, spec: str | None = None) -> dict[str, Fault]:
    """Faults for up to three toolbox entries (those ``spec`` uses, if given)."""
    candidates = sorted(FAULTABLE)
    if spec is not None:
        body = spec[len(HEADER) :]
        used = [n for n in candidates if re.search(rf"\b{n}\b", body)]
        candidates = used or candidates
    names = draw(st.lists(st.sampled_from(candidates), unique=True, min_size=1, max_size=3))
    return {name: draw(faults_for(name)) for name in names}


# ---------------------------------------------------------------- token mutations (fuzzing)

#: A rough `.mce` tokenizer: enough to cut specs into pieces worth mutating.
TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+|\"(?:[^\"\\\n]|\\.)*\"|>>=|->|=>|#[^\n]*|.", re.S)
#: What mutations insert: keywords, punctuation, and characters that must be rejected.
VOCABULARY = [
    "par", "each", "(limit=0)", "local", "catch", "orelse", ">>=", "<", ">", "(", ")", "{", "}", ";", ",",
    "|", "!", ":", "=", "->", "=>", "step", "fn", "pipeline", "state", "error", "import", "from", "as",
    "class", "None", "Never", "list[", "]", '"', "\n", "#", "\u202e", "é", "\x00", "Odd", "inc", "main",
    # v2 (soft keywords: words only where the grammar expects them)
    "match", "if", "then", "else", "_", "loop", "retry", "timeout", "on", "backoff", "(2)", "(0)", "(0.5)",
    "Literal[", "LoopExhausted", "Timeout", "str", "int",
    # checked plans (§12: `toolbox` a soft keyword, `spawn` one when `(` follows)
    "spawn", "spawn(pure)", "toolbox", "PlanRejected", "PlanRequest", "pick_plan", "helpers",
]


def mutate(text: str, rng: random.Random, max_mutations: int) -> str:
    """Apply 1 to ``max_mutations`` token-level mutations (delete, duplicate, swap,
    insert, replace) to ``text``; shared by the test suite and benchmarks/fuzz.py."""
    tokens = TOKEN.findall(text)
    for _ in range(rng.randint(1, max_mutations)):
        if not tokens:
            break
        index = rng.randrange(len(tokens))
        action = rng.choice(["delete", "duplicate", "swap", "insert", "replace"])
        if action == "delete":
            del tokens[index]
        elif action == "duplicate":
            tokens.insert(index, tokens[index])
        elif action == "swap" and index + 1 < len(tokens):
            tokens[index], tokens[index + 1] = tokens[index + 1], tokens[index]
        elif action == "insert":
            tokens.insert(index, rng.choice(VOCABULARY))
        else:
            tokens[index] = rng.choice(VOCABULARY)
    return "".join(tokens)
