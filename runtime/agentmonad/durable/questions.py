"""Choosing an open question by what it is about (docs/language.md §13, §15): ``--about FIELD=VALUE``.

An element index (``--index 6,1``: element 6 of the ``each``, branch 1 of the ``par``) names a
question by where the pipeline asks it, which changes when the pipeline is restructured; the
person answering thinks of what the question is about ("claim E07"). So ``mcec runs answer``,
``mcec runs waiting`` and :func:`mcec.durable.answer`/:func:`agentmonad.durable.runs.waiting` also choose
questions by their *payload* (the question value the ``ask`` was given, as JSON):

- ``FIELD`` names a field of the payload; ``a.b`` a field of a field (a payload that is not an
  object, or lacks the field, does not match).
- ``VALUE`` matches a field whose value is the string VALUE, or whose value equals VALUE read
  as JSON (``amount=120`` matches ``120`` and ``120.0``, ``ok=true`` matches ``true``).
- Several conditions must all hold.

From Python the conditions are a mapping ``{FIELD: VALUE}``: a ``str`` VALUE is matched as the
command's text is, any other value by equality with the field's JSON value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import DurableError

__all__ = ["about_conditions", "describe", "matches", "narrowed"]

#: A field path (``("order", "id")`` for ``order.id``) and the value it must have.
Condition = tuple[tuple[str, ...], object]


def about_conditions(about: Mapping[str, object] | Sequence[str] | None) -> list[Condition]:
    """``about`` as conditions: a mapping ``{FIELD: VALUE}`` (the Python API) or the command's
    ``FIELD=VALUE`` texts. :class:`~agentmonad.durable.errors.DurableError` with a message for a text without
    ``=`` or with an empty field name."""
    if about is None:
        return []
    pairs: list[tuple[str, object]]
    if isinstance(about, Mapping):
        pairs = list(about.items())
    else:
        pairs = []
        for text in about:
            field, equals, value = text.partition("=")
            if not equals:
                raise DurableError(f"--about {text}: say FIELD=VALUE, a field of the question's payload and its value "
                                 "(e.g. --about order=A-1)")
            pairs.append((field.strip(), value))
    conditions: list[Condition] = []
    for name, wanted in pairs:
        path = tuple(name.split("."))
        if not all(path):
            raise DurableError(f"--about {name}={wanted}: the field name is empty (say FIELD=VALUE, e.g. order=A-1)")
        conditions.append((path, wanted))
    return conditions


def _field(payload: object, path: tuple[str, ...]) -> tuple[bool, object]:
    """The value at ``path`` in ``payload`` (and whether it is there)."""
    for name in path:
        if not isinstance(payload, dict) or name not in payload:
            return False, None
        payload = payload[name]
    return True, payload


def _equal(found: object, wanted: object) -> bool:
    if not isinstance(wanted, str):
        return _same(found, wanted)
    if isinstance(found, str):
        return found == wanted
    try:
        return _same(found, json.loads(wanted))
    except ValueError:
        return False


def _same(found: object, wanted: object) -> bool:
    # JSON's true is not 1: a boolean matches a boolean only
    return isinstance(found, bool) == isinstance(wanted, bool) and found == wanted


def matches(question: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    """Whether the payload of ``question`` (an open question as :func:`agentmonad.durable.runs.waiting`
    gives it) meets every condition."""
    for path, wanted in conditions:
        present, found = _field(question.get("question"), path)
        if not present or not _equal(found, wanted):
            return False
    return True


def describe(conditions: Sequence[Condition]) -> str:
    """The conditions as the command takes them: ``order=A-1 amount=120``."""
    return " ".join(f"{'.'.join(path)}={wanted if isinstance(wanted, str) else json.dumps(wanted)}"
                    for path, wanted in conditions)


def _candidate(question: Mapping[str, Any]) -> str:
    """One open question as an error message lists it: its name, index and payload."""
    index = f" --index {','.join(map(str, question['index']))}" if question.get("index") else ""
    payload = json.dumps(question.get("question"), separators=(",", ":"), ensure_ascii=False)
    return f"{question['name']}{index} about {payload}"


def narrowed(run_id: str, questions: list[dict[str, Any]], name: str, about: Mapping[str, object] | Sequence[str] | None,
             index: Sequence[int] | None) -> list[dict[str, Any]]:
    """The open questions ``name`` of ``questions`` whose payload is ``about`` what is asked (all
    of ``questions`` when nothing is). :class:`~agentmonad.durable.errors.DurableError` listing the candidates
    when none is, or when several are and no ``index`` says which."""
    conditions = about_conditions(about)
    if not conditions:
        return questions
    named = [q for q in questions if q["name"] == name]
    chosen = [q for q in named if matches(q, conditions)]
    if index is not None:
        chosen = [q for q in chosen if list(q["index"]) == list(index)]
    listed = "; ".join(_candidate(q) for q in (named or questions))
    if not chosen:
        what = f"{name!r} about {describe(conditions)}" + (f" at index {list(index)}" if index is not None else "")
        raise DurableError(f"run {run_id} has no open question {what}; it waits on: {listed}")
    if len(chosen) > 1:
        raise DurableError(f"{len(chosen)} open questions {name!r} of run {run_id} are about {describe(conditions)}: "
                         f"say which with another --about FIELD=VALUE or --index ({'; '.join(_candidate(q) for q in chosen)})")
    return chosen
