"""Types for the specs of tests/runtime/test_llm_wire.py (imported by the spec, as a project's own module would be)."""

from __future__ import annotations

from pydantic import BaseModel


class Found(BaseModel):
    """An answer found."""

    answer: str


class Hint(BaseModel):
    """A hint where to look."""

    where: str
