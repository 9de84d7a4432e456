"""Types and step implementations for the specs of tests/test_9_mcp*.py.

Importable as ``mcp_servers.pipelines`` with ``tests/`` on ``sys.path`` (pytest
puts it there; ``mcec serve`` run from ``tests/`` adds its working directory).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from agentmonad import Err, Ok, Outcome


class Hits(BaseModel):
    """The toolbox server's ``search`` result."""

    query: str
    hits: list[str]


class SearchArgs(BaseModel):
    """Arguments of ``search`` and ``bad_hits``."""

    query: str


class EchoArgs(BaseModel):
    """Arguments of ``echo``."""

    text: str


class Counter(BaseModel):
    """State of the served spec: how many steps ran in this run."""

    model_config = ConfigDict(frozen=True)

    calls: int = 0


class Query(BaseModel):
    """Input of the served ``ask`` pipeline."""

    question: str
    times: int = 1


class Answer(BaseModel):
    """Output of the served ``ask`` pipeline."""

    text: str
    calls: int


class Refused(Exception):
    """A declared error of ``respond``."""


def respond(state: Counter, query: Query) -> Outcome[Counter, Refused, Answer]:
    """Answer, or refuse a question that is literally ``refuse``."""
    if query.question == "refuse":
        return Err(Refused(f"will not answer {query.question!r}"), state)
    calls = state.calls + 1
    return Ok(Answer(text=" ".join([query.question] * query.times), calls=calls), Counter(calls=calls))


def refuse(state: Counter, args: EchoArgs) -> Outcome[Counter, Refused, str]:
    """Refuse at once (a ``par`` branch that fails while its siblings are starting up)."""
    return Err(Refused(f"will not echo {args.text!r}"), state)


def crash(state: Counter, query: Query) -> Outcome[Counter, Refused, Answer]:
    """A bug: an undeclared exception, i.e. a Defect."""
    raise ZeroDivisionError(f"cannot answer {query.question!r}")


def shout(text: str) -> str:
    """Upper case with a bang."""
    return text.upper() + "!"


def hit_count(hits: Hits) -> int:
    """How many hits."""
    return len(hits.hits)
