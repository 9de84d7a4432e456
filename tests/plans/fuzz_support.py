"""Helpers of tests/plans/test_plan_fuzz.py: plan vocabularies, a generator of well-typed
plans over ``research`` (tests/plans/planbox/box.mce), and the checks every verdict must pass.

The generator writes plans ``str -> str`` from the toolbox's entries by type
(``split`` gives ``list[str]``, ``each`` maps it, ``join`` ends it; ``search``
gives a ``Finding`` that ``summarize`` reads) and tracks one fact of each, whether it
can fail with ``Bad``, so that it writes ``catch Bad`` and ``retry(on=Bad)``
only where they can fire (no MCE014). ``Timeout`` and ``BudgetExceeded`` are not
the toolbox's errors, so ``timeout`` and ``budget`` always come under ``orelse``.
``slow`` (30 s) appears only under ``timeout(0.01)``, which always fires; a ``loop``
goes round on text and ends on the ``Finding`` of "CATS" (LoopExhausted under ``orelse`` too).
"""

from __future__ import annotations

import functools
import re
import types
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from agentmonad.plans import PlanRejected
from mcec.check.env import CALLABLE_KINDS
from mcec.plans.check import check_plan
from mcec.check.typed import references
from mcec.compiler import compile_source
from mcec.diagnostics import CODES
from mcec.plans.engine import AcceptedPlan, CheckedToolbox
from mcec.run.runner import load_module
from mcec.span import SourceFile

from plan_support import BOX, compiled_box

PLAN_FILE = "<plan research>"

#: The toolbox's entries (box.mce): what a plan may name.
ENTRIES = ("shout", "search", "summarize", "split", "join", "apology", "look_up", "slow")
#: Callables of the spec that ``research`` does not list (checked against the spec below).
OUTSIDE_CALLABLES = ("secret", "count", "write_plan", "measure", "solve", "repaired", "hurried", "unused_secret")
#: Names that are no callable of the spec at all: Python's, the implementation module's, the types'.
FOREIGN_NAMES = (
    "impl", "os", "sys", "__import__", "eval", "exec", "open", "getattr", "globals", "agentmonad",
    "TOOLBOX_research", "research", "planbox", "subprocess", "print", "len", "input", "breakpoint", "compile",
    "__builtins__", "self", "Toolbox", "interpret", "mcec",
)  # fmt: skip
#: Names that must never be in an accepted plan as a word (outside strings and comments).
NEVER_ACCEPTED = frozenset(OUTSIDE_CALLABLES) | frozenset(FOREIGN_NAMES)
#: Types a plan may name in patterns and ``catch``.
TYPE_NAMES = ("Bad", "Finding", "Notes", "PlanRequest", "str", "int", "list", "MergeConflict", "Timeout",
              "PlanRejected", "None")  # fmt: skip
KEYWORDS = (
    "par", "each", "local", "catch", "orelse", "match", "if", "then", "else", "loop", "retry", "timeout",
    "budget", "spawn", "on", "backoff", "limit", "state", "import", "from", "as", "step", "fn", "pipeline",
    "toolbox", "error", "llm", "tool", "server", "model", "uses", "file",
)  # fmt: skip
PUNCTUATION = (">>=", "<", ">", "(", ")", "{", "}", ",", ";", ".", ":", "=", "=>", "->", "|", "!", "[", "]",
               "_", "#", "\n", " ", "\t", "\\", "'", '"')  # fmt: skip
LITERALS = ("0", "1", "2", "3", "33", "-1", "0.01", "0.5", "1e9", "100000000000000000000", '"cats"', '"bad"',
            '""', '"\\n"', "'x'", "True", "None")  # fmt: skip

#: `.mce` words and everything else, as tests/spec_gen.py's ``mutate`` cuts text (strings and comments whole).
TOKEN = re.compile(r"\s+|[A-Za-z_][A-Za-z0-9_]*|\d+|\"(?:[^\"\\\n]|\\.)*\"|>>=|->|=>|#[^\n]*|.", re.S)
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Keys every diagnostic of a PlanRejected carries (docs/language.md §8).
DIAGNOSTIC_KEYS = frozenset({"severity", "code", "message", "file", "line", "column", "end_line", "end_column",
                             "labels", "help"})  # fmt: skip


def checked_research() -> CheckedToolbox:
    """The plan checker of toolbox ``research`` of the compiled fixture."""
    checker = compiled_box().TOOLBOX_research.checked()
    assert isinstance(checker, CheckedToolbox)
    return checker


def outside_callables_of_spec() -> set[str]:
    """The spec's callables the toolbox does not list, read from the checker's full scope."""
    scope = checked_research().scope
    return {
        name
        for name, binding in scope.full.env.bindings.items()
        if binding.kind in CALLABLE_KINDS and name not in ENTRIES
    }


def words(text: str) -> set[str]:
    """The identifiers of ``text`` outside string literals and comments."""
    return {token for token in TOKEN.findall(text) if WORD.fullmatch(token)}


def verdict(text: str) -> AcceptedPlan | PlanRejected:
    """``check(text)`` with every property a verdict must have asserted: never raises; a
    rejection carries ≥ 1 error, each diagnostic a §8 object with a registered code in the
    plan (or the spec); an accepted plan references only the toolbox's entries."""
    checker = checked_research()
    result = checker.check(text)
    if isinstance(result, PlanRejected):
        assert result.plan == text
        assert result.toolbox == "research"
        assert result.errors, result.diagnostics
        assert isinstance(result.text, str) and result.text
        for diagnostic in result.diagnostics:
            assert DIAGNOSTIC_KEYS <= diagnostic.keys(), diagnostic
            assert diagnostic["code"] in CODES, diagnostic
            assert diagnostic["severity"] in ("error", "warning"), diagnostic
            assert diagnostic["file"] in (PLAN_FILE, str(BOX)), diagnostic
            assert isinstance(diagnostic["message"], str) and diagnostic["message"], diagnostic
            assert isinstance(diagnostic["line"], int) and diagnostic["line"] >= 1, diagnostic
            assert isinstance(diagnostic["column"], int) and diagnostic["column"] >= 1, diagnostic
        str(result)  # renders
        return result
    assert isinstance(result, AcceptedPlan), result
    assert not any(d.is_error for d in result.diagnostics), result.diagnostics
    checked = check_plan(checker.scope, SourceFile(PLAN_FILE, text))
    assert checked.body is not None, checked.diagnostics
    named = {ref.name for ref in references(checked.body)}
    assert named <= set(ENTRIES), (text, named)
    assert not words(text) & NEVER_ACCEPTED, text
    return result


def codes(result: AcceptedPlan | PlanRejected) -> set[str]:
    return {d["code"] for d in result.errors} if isinstance(result, PlanRejected) else set()


# ---------------------------------------------------------------- well-typed plans


@dataclass(frozen=True)
class Plan:
    """A plan ``str -> str`` and whether it can fail with ``Bad``."""

    text: str
    bad: bool


ATOMS = (
    Plan("shout", True),
    Plan("look_up", True),
    Plan("search >>= summarize", True),
    Plan("split >>= join", False),
)


@st.composite
def plans(draw: st.DrawFn, depth: int = 3) -> Plan:
    """A well-typed plan over ``research`` (``str -> str ! Bad | MergeConflict``)."""
    if depth <= 0:
        return draw(st.sampled_from(ATOMS))
    form = draw(
        st.sampled_from(
            ("atom", "chain", "each", "catch", "orelse", "retry", "local", "match", "timeout", "budget", "slow", "loop")
        )
    )
    a = draw(plans(depth - 1))
    if form == "atom":
        return draw(st.sampled_from(ATOMS))
    if form == "chain":
        b = draw(plans(depth - 1))
        return Plan(f"({a.text}) >>= ({b.text})", a.bad or b.bad)
    if form == "each":
        limit = draw(st.sampled_from(("", "(limit=1)", "(limit=2)")))
        return Plan(f"split >>= each{limit} ({a.text}) >>= join", a.bad)
    if form == "catch":
        if not a.bad:
            return a
        return Plan(f"(({a.text}) catch Bad => apology)", False)
    if form == "orelse":
        b = draw(plans(depth - 1))
        return Plan(f"(({a.text}) orelse ({b.text}))", b.bad)
    if form == "retry":
        attempts = draw(st.integers(1, 3))
        on = ", on=Bad" if a.bad and draw(st.booleans()) else ""
        return Plan(f"retry({attempts}{on}, backoff=0) ({a.text})", a.bad)
    if form == "local":
        return Plan(f"local ({a.text})", a.bad)
    if form == "match":
        b = draw(plans(depth - 1))
        literal = draw(st.sampled_from(('"cats"', '"bad"', '"cats, dogs"')))
        # the literal's arm is given that literal, not a str: `split >>= join` makes it a str again
        # (a `match` or `loop` inside would otherwise see a narrowed type and be rightly rejected)
        return Plan(f"match {{ {literal} => (split >>= join >>= ({a.text})), _ => ({b.text}) }}", a.bad or b.bad)
    if form == "timeout":
        b = draw(plans(depth - 1))
        return Plan(f"((timeout(30) ({a.text})) orelse ({b.text}))", b.bad)
    if form == "budget":
        b = draw(plans(depth - 1))
        return Plan(f"((budget(1000) ({a.text})) orelse ({b.text}))", b.bad)
    if form == "loop":  # a text goes round until it is "CATS" (a shouted "cats"), then found
        b = draw(plans(depth - 1))
        rounds = draw(st.integers(1, 3))
        body = f'match {{ "CATS" => search, _ => ({a.text}) }}'
        return Plan(f"((loop({rounds}) ({body}) >>= summarize) orelse ({b.text}))", b.bad)
    b = draw(plans(depth - 1))
    slow = draw(st.sampled_from(("slow", "split >>= each (slow) >>= join", f"split >>= each(limit=2) (({a.text}) >>= slow) >>= join")))
    return Plan(f"((timeout(0.01) ({slow})) orelse ({b.text}))", b.bad)


#: Inputs: topics to split, and ones with "bad" in them (shout and search refuse those).
INPUTS = ("cats, dogs", "bad", "cats, bad, dogs", "", "cats", "bad, bad")


# ---------------------------------------------------------------- the same plans, compiled


DIFF_SPEC = BOX.with_name("fuzz_diff.mce")


@functools.lru_cache(maxsize=64)
def compiled_plans(texts: tuple[str, ...]) -> types.ModuleType:
    """box.mce with one pipeline ``fz_i : str -> str ! Bad | MergeConflict = texts[i]`` per plan,
    compiled and loaded (as its own module, ``fuzz_diff_mce``)."""
    extra = "".join(
        f"\npipeline fz_{i} : str -> str ! Bad | MergeConflict = {text};\n" for i, text in enumerate(texts)
    )
    result = compile_source(SourceFile(str(DIFF_SPEC), BOX.read_text(encoding="utf-8") + extra))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return load_module(result.program, result.generated)


def same_outcome(left: Any, right: Any) -> bool:
    """Two outcomes agree: both Ok with equal value and state, or both Err with an error of
    the same type and text and the same state (sites differ: one names the plan)."""
    if type(left) is not type(right) or left.state != right.state:
        return False
    if hasattr(left, "value"):
        return bool(left.value == right.value)
    return type(left.error) is type(right.error) and str(left.error) == str(right.error)
