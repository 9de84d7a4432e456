"""Classes for the LLM cases (docs/language.md §10): a pydantic turn whose fields templates read,
the ReAct choices, and a plain class no model can answer with."""

from __future__ import annotations

from pydantic import BaseModel


class Chat(BaseModel):
    turns: int = 0


class Turn(BaseModel):
    question: str
    notes: list[str] = []


class Answer(BaseModel):
    text: str


class SearchArgs(BaseModel):
    query: str


class CalcArgs(BaseModel):
    expression: str
