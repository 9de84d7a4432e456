"""The states and errors of the generated specs of tests/cli/test_adapter_props.py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chat:
    """The main spec's state."""

    turns: int = 0
    said: str = ""


@dataclass(frozen=True)
class Notes:
    """The sub spec's state (a sub-agent's own)."""

    lines: int = 0
    last: str = ""


class Blank(Exception):
    """Nothing to note (the sub spec's ``note`` on an empty text)."""


class TooLong(Exception):
    """A text too long to clip (the sub spec's ``clip``)."""


class Busy(Exception):
    """The main spec's ``busy`` on an odd turn."""
