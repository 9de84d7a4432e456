"""Random well-typed `.mce` specs over the toolbox (tests/toolbox.py), for
differential and fault tests. Every expression is ``int -> int``; the
generator tracks each expression's error set and statefulness exactly as
the language reference (docs/language.md §5) defines them, so it only writes
``catch`` clauses that can fire (no MCE014).

Every construct of the language must be generated here: the differential test
(compiled ≡ interpreted) and the fuzzers cover only what this module writes
(see tests/README.md)."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from hypothesis import strategies as st

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
"""

#: name -> (errors, stateful)
ATOMS: dict[str, tuple[frozenset[str], bool]] = {
    "inc": (frozenset(), True),
    "note": (frozenset(), True),
    "remember": (frozenset(), True),
    "even_only": (frozenset({"Odd"}), True),
    "no_negatives": (frozenset({"Neg"}), True),
    "slow_inc": (frozenset({"Neg"}), True),
    "crash": (frozenset(), True),
    "double": (frozenset(), False),
    "negate": (frozenset(), False),
}


@dataclass(frozen=True)
class Gen:
    """A generated expression: its text (a term: safe to use anywhere), errors, statefulness."""

    text: str
    errors: frozenset[str]
    stateful: bool


@st.composite
def expressions(draw: st.DrawFn, depth: int, pipelines: tuple[tuple[str, Gen], ...] = ()) -> Gen:
    """An ``int -> int`` expression, at most ``depth`` levels deep."""
    kinds = ["atom"] * 3 + (["pipeline"] if pipelines else [])
    if depth > 0:
        kinds += ["bind", "bind", "par2", "par3", "each", "catch", "orelse", "local"]
    kind = draw(st.sampled_from(kinds))
    if kind == "atom":
        name = draw(st.sampled_from(sorted(ATOMS)))
        errors, stateful = ATOMS[name]
        return Gen(name, errors, stateful)
    if kind == "pipeline":
        name, gen = draw(st.sampled_from(pipelines))
        return Gen(name, gen.errors, gen.stateful)
    sub = expressions(depth - 1, pipelines)
    if kind == "bind":
        parts = draw(st.lists(sub, min_size=2, max_size=4))
        return Gen(
            "(" + " >>= ".join(p.text for p in parts) + ")",
            frozenset().union(*(p.errors for p in parts)),
            any(p.stateful for p in parts),
        )
    if kind in ("par2", "par3"):
        n = 2 if kind == "par2" else 3
        branches = draw(st.lists(sub, min_size=n, max_size=n))
        errors = frozenset().union(*(b.errors for b in branches))
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
        body = draw(sub)
        if "MergeConflict" in body.errors and draw(st.booleans()):
            return Gen(f"({body.text} catch MergeConflict => recover_conflict)", body.errors - {"MergeConflict"}, body.stateful)
        catchable = sorted(body.errors & {"Odd", "Neg"})
        if not catchable:
            return body
        caught = draw(st.lists(st.sampled_from(catchable), min_size=1, max_size=len(catchable), unique=True))
        text = f"({body.text} catch {' | '.join(caught)} => recover)"
        return Gen(text, body.errors - set(caught), body.stateful)
    if kind == "orelse":
        first, second = draw(sub), draw(sub)
        return Gen(f"({first.text} orelse {second.text})", second.errors, first.stateful or second.stateful)
    body = draw(sub)  # local
    return Gen(f"(local {body.text})", body.errors, False)


@st.composite
def specs(draw: st.DrawFn, max_depth: int = 3) -> str:
    """A whole spec: a few helper pipelines and a ``main : int -> int``."""
    pipelines: list[tuple[str, Gen]] = []
    lines = [HEADER]
    for index in range(draw(st.integers(0, 2))):
        gen = draw(expressions(draw(st.integers(0, max_depth - 1)), tuple(pipelines)))
        name = f"sub_{index}"
        lines.append(f"pipeline {name} : int -> int = {gen.text};")
        pipelines.append((name, gen))
    main = draw(expressions(draw(st.integers(1, max_depth)), tuple(pipelines)))
    lines.append(f"pipeline main : int -> int = {main.text};")
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
