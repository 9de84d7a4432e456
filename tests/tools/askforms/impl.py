"""Steps for ``forms.mce``: ``mcec serve`` asking for answers no flat form holds (a list, a model
with a nested list), and a spec handling a client that answers badly (tests/tools/test_serve_forms.py)."""

from __future__ import annotations

from pydantic import BaseModel

from agentmonad.human import BadAnswer, NoAnswer


class Line(BaseModel):
    """One line of an order."""

    sku: str
    qty: int


class Order(BaseModel):
    """An order a person types in: flat fields, and a list of nested models."""

    customer: str
    rush: bool = False
    lines: list[Line]


def total(counts: list[int]) -> int:
    """The sum of the counts."""
    return sum(counts)


def describe(order: Order) -> str:
    """The order in one line."""
    items = ", ".join(f"{line.qty} x {line.sku}" for line in order.lines)
    return f"{order.customer}{' (rush)' if order.rush else ''}: {items}"


def shown(count: int) -> str:
    """A count as text."""
    return str(count)


def why(error: BadAnswer | NoAnswer) -> str:
    """The error a ``catch`` caught, named."""
    return f"caught {type(error).__name__}: {error}"


def nobody(_question: str) -> str:
    """The ``orelse`` fallback."""
    return "no order"
