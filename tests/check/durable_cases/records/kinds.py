"""Types and steps for the durable-check cases (tests/check/test_check_durable.py): each kind
of value a durable run can record, and each kind it cannot."""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Never

from typing_extensions import TypedDict  # pydantic reads typing.TypedDict only from Python 3.12

from pydantic import BaseModel

from agentmonad import Ok, Outcome


# ---------------------------------------------------------------- recordable


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Page:
    number: int
    text: str


@dataclass(frozen=True)
class Doc:
    title: str
    pages: tuple[Page, ...] = ()
    colour: Colour = Colour.RED


class Facts(BaseModel):
    title: str
    words: dict[str, int] = {}
    raw: bytes = b""


class Tally(TypedDict):
    done: list[str]
    failed: set[str]


@dataclass(frozen=True)
class Seen:
    done: tuple[str, ...] = ()
    extra: Any = None


class ExtractError(Exception):
    """A plain exception: recorded as its args."""


@dataclass
class Refused(Exception):
    """A dataclass exception: recorded by its fields."""

    reason: str
    code: int = 0


# ---------------------------------------------------------------- not recordable


class Handle:
    """An arbitrary class: pydantic has no schema for it."""

    def __init__(self, name: str) -> None:
        self.name = name


@dataclass(frozen=True)
class Hooked:
    title: str
    on_done: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Locked:
    page: Page
    guard: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Bundle:
    """Fails two levels down: Bundle.items -> Locked.guard."""

    items: list[Locked]


@dataclass(frozen=True)
class HookedState:
    done: tuple[str, ...] = ()
    notify: Callable[[str], None] | None = None


class Rejected(Exception):
    """An exception with an __init__ of its own: its args are not its arguments."""

    def __init__(self, doc: Doc, reason: str) -> None:
        super().__init__(f"{doc.title}: {reason}")
        self.doc = doc


def extract(state: Seen, doc: Doc) -> Outcome[Seen, ExtractError | Refused, Facts]:
    return Ok(Facts(title=doc.title), state)


def tally(state: Seen, facts: Facts) -> Outcome[Seen, Never, Tally]:
    return Ok(Tally(done=[facts.title], failed=set()), state)


def colour(state: Seen, doc: Doc) -> Outcome[Seen, Never, Colour]:
    return Ok(doc.colour, state)


def open_handle(state: Seen, doc: Doc) -> Outcome[Seen, Never, Handle]:
    return Ok(Handle(doc.title), state)


def hook(state: Seen, doc: Doc) -> Outcome[Seen, Never, Hooked]:
    return Ok(Hooked(doc.title), state)


def bundle(state: Seen, doc: Doc) -> Outcome[Seen, Never, Bundle]:
    return Ok(Bundle([Locked(p) for p in doc.pages]), state)


def reject(state: Seen, doc: Doc) -> Outcome[Seen, Rejected, str]:
    return Ok(doc.title, state)


def handle_name(handle: Handle) -> str:
    return handle.name


def hooked_title(hooked: Hooked) -> str:
    return hooked.title


def title(doc: Doc) -> str:
    return doc.title


def mark(state: HookedState, doc: Doc) -> Outcome[HookedState, Never, str]:
    return Ok(doc.title, state)


def no_hooks(state: Seen) -> HookedState:
    return HookedState(done=state.done)
