"""The "did you mean" help lines are bounded: asked once per question, and within a budget per file.

A file of 100,000 lines with 60,000 names and 8,000 unknown ones took over
seven minutes to check, nearly all of it in difflib, because every unknown
name compared itself with every declared one. These tests pin the bounds by
counting the comparisons, not by timing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mcec.check import check
from mcec.check import env as env_module
from mcec.check.env import Binding, Env, Kind
from mcec.syntax import parse
from mcec.span import SourceFile

HEADER = "from app.impl import S\nimport app.impl as impl\nstate S\n"


def diagnostics_of(text: str) -> list[tuple[str, str | None]]:
    """(message, help) of each diagnostic of ``text``, in report order."""
    source = SourceFile("suggest.mce", text)
    parsed = parse(source)
    assert parsed.module is not None, parsed.diagnostics
    return [(d.message, d.help) for d in check(parsed.module, source).diagnostics]


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many candidates each call of ``env.suggest`` was given, in call order."""
    sizes: list[int] = []
    real = env_module.suggest

    def counting(name: str, candidates: list[str] | set[str] | tuple[str, ...]) -> str | None:
        sizes.append(len(candidates))
        return real(name, candidates)

    monkeypatch.setattr(env_module, "suggest", counting)
    return sizes


def test_an_unknown_name_used_many_times_is_looked_up_once(compared: list[int]) -> None:
    uses = " >>= ".join(["lookp"] * 20)
    text = HEADER + "step lookup : int -> int = impl.lookup\n" + f"pipeline p : int -> int = {uses};\n" + (
        "fn f : inte -> inte = impl.f\nfn g : list[inte] -> inte = impl.g\n"
    )
    found = diagnostics_of(text)
    assert [help for message, help in found if message == "unknown name `lookp`"] == ["did you mean `lookup`?"] * 20
    assert [help for message, help in found if message == "unknown type `inte`"] == ["did you mean `int`?"] * 4
    assert len(compared) == 2  # one question each: `lookp` among callables, `inte` among types


def test_suggestions_stop_at_the_budget_of_the_file(compared: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(env_module, "SUGGESTION_BUDGET", 25)
    steps = "".join(f"step step{i} : int -> int = impl.step{i}\n" for i in range(10))
    typos = "".join(f"pipeline p{i} : int -> int = stepp{i};\n" for i in range(5))
    found = diagnostics_of(HEADER + steps + typos)
    helps = [help for message, help in found if message.startswith("unknown name `stepp")]
    assert len(helps) == 5
    # 15 callables each time (10 steps, 5 pipelines): the first question fits in 25, the second does not.
    assert helps[0] is not None and helps[0].startswith("did you mean one of `step0`")
    assert helps[1:] == [None, None, None, None]
    assert compared == [15]
    assert sum(compared) <= 25


def test_a_suggestion_sees_names_bound_after_it_was_asked() -> None:
    env = Env.with_builtins()
    env.bind(Binding("alpha", Kind.STEP, None))
    assert env.suggestion("alpah", (Kind.STEP,)) == "did you mean `alpha`?"
    assert env.names_of((Kind.STEP,)) == ("alpha",)
    env.bind(Binding("alpaha", Kind.STEP, None))
    assert env.names_of((Kind.STEP,)) == ("alpaha", "alpha")
    assert env.suggestion("alpah", (Kind.STEP,)) == "did you mean one of `alpaha`, `alpha`?"
