"""Classes whose fields come from their bases (issue 29, item 9): a project base with no fields
(``Frozen``, the usual pydantic pattern), a dataclass deriving from a dataclass, a generic
model, a TypedDict (agents.mystery has a class whose base cannot be read)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict, computed_field

T = TypeVar("T")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Ticket(Frozen):
    customer: str
    subject: str


class Desk(Frozen):
    customer: str
    opened: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        return f"{self.customer} ({self.opened})"

    @property
    def shout(self) -> str:
        return self.customer.upper()


@dataclass(frozen=True)
class Party:
    customer: str


@dataclass(frozen=True)
class Case(Party):
    priority: int = 0


class Page(Frozen, Generic[T]):
    items: list[T]
    customer: str


class TicketPage(Page[Ticket]):
    pass


class Row(TypedDict):
    customer: str
