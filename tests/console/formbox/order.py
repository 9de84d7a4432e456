"""The order desk of tests/console/test_console_browser.py: a question whose answer type has a
choice (an enum), a checkbox (a bool with a default), a list of nested models with a bound, a
type a form cannot say (a dict: a JSON editor) and an optional text."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field


class Order(BaseModel):
    """The order asked about."""

    id: str


class Size(str, Enum):
    """A box size."""

    S = "S"
    M = "M"
    L = "L"


class Line(BaseModel):
    """One line of the shipment."""

    sku: str
    quantity: int = Field(ge=1)


class Shipment(BaseModel):
    """What to ship."""

    size: Size
    gift: bool = False
    lines: list[Line]
    extra: dict[str, int] = {}
    note: str | None = None
