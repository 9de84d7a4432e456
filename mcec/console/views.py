"""What the console's pages show, as plain values its templates draw: a run's timeline as rows,
a question's time left, a spec's lines. No web framework here (:mod:`mcec.console.app` serves them)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from mcec.run.timeline import Node

__all__ = ["Row", "TERMINAL", "pretty", "spec_lines", "time_left", "timeline_rows"]

#: The statuses in which a run changes no more on its own (the page stops polling it).
TERMINAL = frozenset({"finished", "failed", "cancelled", "stopped"})


@final
@dataclass(frozen=True, slots=True)
class Row:
    """One line of a run's timeline: a span under its ``par``/``each`` element (``depth``), as
    ``mcec runs show`` draws it."""

    depth: int
    kind: str
    name: str
    #: The element index inside its group (None: not in one).
    element: int | None
    file: str | None
    line: int | None
    outcome: str
    milliseconds: str
    tokens: str
    key: str | None
    error: str | None
    notes: tuple[str, ...]
    #: Whether the effect records its branch's state (the page fetches it when the effect is clicked).
    has_state: bool
    #: A group's elements: done, failed, seen (each element that recorded something).
    done: int
    failed: int
    seen: int


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.2f} s" if seconds >= 1 else f"{seconds * 1000:.1f} ms"


def _tokens(node: Node) -> tuple[int, int]:
    prompt, completion = node.prompt_tokens, node.completion_tokens
    for child in node.children:
        p, c = _tokens(child)
        prompt, completion = prompt + p, completion + c
    return prompt, completion


def timeline_rows(roots: list[Node]) -> list[Row]:
    """The tree of :func:`mcec.durable.show_tree` as rows in drawing order."""
    rows: list[Row] = []

    def walk(node: Node, depth: int) -> None:
        prompt, completion = _tokens(node)
        seen = len({child.index[-1] if child.index else 0 for child in node.children}) if node.kind == "group" else 0
        notes = tuple(n for n in node.notes if not n.startswith("state after: "))
        rows.append(Row(
            depth, node.kind, node.name, node.index[-1] if node.index and node.kind != "run" else None,
            node.site.file if node.site is not None else None, node.site.line if node.site is not None else None,
            node.outcome or "unfinished", _ms(node.duration),
            f"{prompt}+{completion}" if prompt or completion else "", node.key if node.kind != "group" else None,
            node.error if node.outcome != "ok" else None, notes,
            node.key is not None and node.kind != "group" and node.state_change is not None,
            node.done, node.failed, seen,
        ))
        for child in node.children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return rows


def pretty(value: object) -> str:
    """``value`` as indented JSON (a JSON text is parsed first: a run's input is recorded as text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def time_left(deadline: str | None, now: float | None = None) -> str | None:
    """How long until ``deadline`` (an ISO time), in words: ``4 min 10 s left``; None: no deadline."""
    if not deadline:
        return None
    from agentmonad.durable.journal import epoch

    seconds = epoch(deadline) - (time.time() if now is None else now)
    if seconds <= 0:
        return "expired"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes)
    return " ".join([*parts, f"{secs} s"]) + " left"


def spec_lines(spec: str | None) -> list[str]:
    """The lines of the spec a run recorded (none when it cannot be read any more)."""
    if not spec:
        return []
    try:
        return Path(spec).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []

