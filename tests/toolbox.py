"""A fixed toolbox of step implementations for generated-spec tests.

Steps over ``int`` values and a small state with reducer-annotated fields
(``log`` appends, ``count`` sums) and one plain field (``last``), so parallel
groups can merge cleanly or conflict. Some steps fail (returning ``Err`` or
raising a declared error), some are async and yield to the event loop, some
change state. Failures happen before any await, and async steps yield a
value-dependent number of times, so which failure a ``par`` observes first is
decided by scheduling order alone — the same in the compiled code and the
interpreter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Never

from agentmonad import Append, Err, LoopExhausted, MergeConflict, Ok, Outcome, PlanRejected, PlanRequest, Sum, Timeout, merge_states


@dataclass(frozen=True)
class TState:
    """The toolbox's state."""

    log: Annotated[tuple[str, ...], Append] = ()
    count: Annotated[int, Sum] = 0
    last: int = 0


class Odd(Exception):
    """Raised (as Err) for odd values by ``even_only``."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Odd and other.args == self.args

    def __hash__(self) -> int:
        return hash(self.args)


class Neg(Exception):
    """Raised by ``no_negatives``."""

    def __eq__(self, other: object) -> bool:
        return type(other) is Neg and other.args == self.args

    def __hash__(self) -> int:
        return hash(self.args)


def inc(state: TState, value: int) -> Outcome[TState, Never, int]:
    """+1, counting the call."""
    return Ok(value + 1, replace(state, count=state.count + 1))


def note(state: TState, value: int) -> Outcome[TState, Never, int]:
    """Logs the value, passes it on."""
    return Ok(value, replace(state, log=(*state.log, f"note {value}")))


def remember(state: TState, value: int) -> Outcome[TState, Never, int]:
    """Stores the value in ``last`` (parallel rememberers of different values conflict)."""
    return Ok(value, replace(state, last=value))


def even_only(state: TState, value: int) -> Outcome[TState, Odd, int]:
    """Fails with Odd (returned Err) for odd values."""
    if value % 2:
        return Err(Odd(value), replace(state, log=(*state.log, f"odd {value}")))
    return Ok(value // 2, state)


def no_negatives(state: TState, value: int) -> Outcome[TState, Neg, int]:
    """Raises Neg for negative values."""
    if value < 0:
        raise Neg(value)
    return Ok(value - 3, state)


async def slow_inc(state: TState, value: int) -> Outcome[TState, Neg, int]:
    """Async: yields ``value % 3`` times, then +1 and logs."""
    for _ in range(value % 3):
        await asyncio.sleep(0)
    if value < -50:
        raise Neg(value)
    return Ok(value + 1, replace(state, log=(*state.log, f"slow {value}")))


def double(value: int) -> int:
    """A pure fn."""
    return value * 2


def negate(value: int) -> int:
    """A pure fn."""
    return -value


def fragile(value: int) -> int:
    """A pure fn that raises ``ZeroDivisionError`` on 0 (a fn's bug: a Defect at its site)."""
    return value // value * value


def recover(error: Odd | Neg) -> int:
    """Handler: turn an error into a value."""
    return 1000 + int(error.args[0]) if error.args else 1000


def spread(value: int) -> list[int]:
    """int -> list for each: a few values derived from the input."""
    return [value + i for i in range(abs(value) % 4)]


def total(values: list[int]) -> int:
    """list -> int after each."""
    return sum(values)


def add_pair(values: tuple[int, int]) -> int:
    """tuple -> int after a par of two."""
    return values[0] + values[1]


def add_triple(values: tuple[int, int, int]) -> int:
    """tuple -> int after a par of three."""
    return values[0] + values[1] + values[2]


def recover_conflict(error: MergeConflict) -> int:
    """Handler for MergeConflict."""
    return -1


def crash(state: TState, value: int) -> Outcome[TState, Never, int]:
    """A buggy step: raises an undeclared exception (a Defect) on 13."""
    if value == 13:
        raise ValueError("thirteen")
    return Ok(value, state)


# -- for v2 control flow (match, if, loop, retry, timeout) ----------------------


def is_even(value: int) -> bool:
    """A pure predicate, for ``if``."""
    return value % 2 == 0


def is_positive(state: TState, value: int) -> Outcome[TState, Never, bool]:
    """A stateful predicate, for ``if``: logs what it was asked."""
    return Ok(value > 0, replace(state, log=(*state.log, f"pos? {value}")))


def split(state: TState, value: int) -> Outcome[TState, Never, int | str]:
    """``int -> int | str``: multiples of 3 become their text (for ``match`` over a union
    and as a loop body that ends on them); other values pass on, counted."""
    if value % 3 == 0:
        return Ok(str(value), state)
    return Ok(value, replace(state, count=state.count + 1))


def countdown(state: TState, value: int) -> Outcome[TState, Never, int | str]:
    """``int -> int | str``, a loop body's end: halves the value (goes round) until it is
    small, then gives it as text (ends the loop). Logs each turn."""
    logged = replace(state, log=(*state.log, f"cd {value}"))
    if abs(value) < 3:
        return Ok(str(value), logged)
    return Ok(value // 2, logged)


def parse(text: str) -> int:
    """``str -> int``: back from :func:`split`'s and :func:`countdown`'s text."""
    return int(text)


def flaky(state: TState, value: int) -> Outcome[TState, Odd, int]:
    """Fails with Odd unless ``count + value`` is a multiple of 3; counts every call in
    the state, so a ``retry`` that hands the state on succeeds within 3 attempts."""
    counted = replace(state, count=state.count + 1)
    if (state.count + value) % 3:
        return Err(Odd(value), counted)
    return Ok(value + 1, counted)


def probe(state: TState, value: int) -> Outcome[TState, Never, int]:
    """Passes value and state on unchanged; tests put a recorder in its place to see
    each run of what follows it (tests/codegen/test_compiled_control_laws.py)."""
    return Ok(value, state)


def as_text(value: int) -> int | str:
    """``int -> int | str`` that always gives text: a loop body ending in it ends at once."""
    return str(value)


def recover_loop(error: LoopExhausted) -> int:
    """Handler for LoopExhausted: the value that would have gone round again."""
    last = error.last
    return last if isinstance(last, int) else -2


def recover_timeout(error: Timeout) -> int:
    """Handler for Timeout."""
    return -3


# -- for the runtime-fault tests (tests/test_7_*.py) ---------------------------


def merge_raising(base: TState, branches: Sequence[TState]) -> TState:
    """A buggy custom merge: raises an arbitrary exception (a Defect)."""
    raise RuntimeError("merge bug")


def merge_conflicting(base: TState, branches: Sequence[TState]) -> TState:
    """A strict custom merge: any branch that changed ``last`` is a conflict."""
    if any(b.last != base.last for b in branches):
        raise MergeConflict("last", [b.last for b in branches], list(branches))
    return merge_states(base, branches)


def many(value: int) -> list[int]:
    """int -> list for each: ``range(value)`` (long lists for big groups)."""
    return list(range(value))


async def hang(state: TState, value: int) -> Outcome[TState, Never, int]:
    """Async: never finishes on its own (an hour's sleep)."""
    await asyncio.sleep(3600)
    return Ok(value, state)


def write_plan(state: TState, request: PlanRequest) -> Outcome[TState, Never, str]:
    """A planner (docs/language.md §12): doubles, then counts, whatever the request says."""
    return Ok("double >>= inc", state)


#: What :func:`pick_plan` may write, by ``request.input % 6``; ``{a}``/``{b}`` are ``int -> int``
#: entries of the toolbox. ``outside`` is no entry of any toolbox (MCE002: the plan is rejected).
PLANS = (
    "{a}",
    "{a} >>= {b}",
    "par <{a}, {b}> >>= add_pair",
    "spread >>= each(limit=2) {a} >>= total",
    "{a} >>= outside",
    "if is_even then {a} else {b}",
)


def pick_plan(request: PlanRequest) -> str:
    """A pure planner (docs/language.md §12) whose plan depends on the value it will run on:
    ``PLANS[input % 6]`` over the toolbox's ``int -> int`` entries (``a``, ``b`` chosen by the
    input too); a plan needing an entry the toolbox lacks (``add_pair``, ``spread``/``total``,
    ``is_even``) falls back to ``a`` alone. Plan 4 is always rejected."""
    lines = [line.split(" : ", 1) for line in request.toolbox.splitlines()]
    names = {name.strip() for name, *_ in lines}
    ints = [name.strip() for name, *rest in lines if rest and rest[0].startswith("int -> int")]
    value = request.input if isinstance(request.input, int) else 0
    if not ints:
        return "outside"
    a, b = ints[value % len(ints)], ints[(value // 2) % len(ints)]
    index = value % len(PLANS)
    needs = {2: {"add_pair"}, 3: {"spread", "total"}, 5: {"is_even"}}.get(index, set())
    plan = PLANS[index] if needs <= names else PLANS[0]
    return plan.format(a=a, b=b)


def recover_plan(error: PlanRejected) -> int:
    """Handler for PlanRejected: the number of errors the plan was rejected for."""
    return -10 - len(error.errors)


@dataclass(frozen=True)
class Counted:
    """``inc``'s output in a later version of a spec (tests/durable/test_upgrade_property.py): an
    int recorded by the earlier ``inc`` is not one without a migration (:func:`counted`)."""

    value: int


def inc_counted(state: TState, value: int) -> Outcome[TState, Never, Counted]:
    """:func:`inc`, its output a :class:`Counted`."""
    return Ok(Counted(value + 1), replace(state, count=state.count + 1))


def counted_value(counted: Counted) -> int:
    """A pure fn: the int inside."""
    return counted.value


def counted(value: int) -> Counted:
    """The output migration of ``inc`` (``fn migrate_output_inc : int -> Counted``)."""
    return Counted(value)
