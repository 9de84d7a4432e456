"""``mcec run --trace``: a run's events as a tree — each step with its ``.mce`` line, duration,
tokens and outcome — printed after the result (text, or JSON for tools).

:class:`Timeline` is an event sink (``agentmonad.events``) that keeps every event; once the
run is over, :meth:`Timeline.tree` rebuilds the run's structure from the events' span and
parent numbers (a ``par``/``each`` group's branches under the group, a model request or a
tool call under the step that made it), :func:`render_text` draws it and :func:`as_json`
gives it as data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

from agentmonad.events import (
    EachProgress,
    EffectEnded,
    EffectStarted,
    Event,
    GroupEnded,
    GroupStarted,
    ModelRequest,
    PartialOutput,
    PlanChecked,
    RunEnded,
    RunStarted,
    TextDelta,
    ToolCalled,
)
from agentmonad.outcome import Site

__all__ = ["Timeline", "Node", "render_text", "as_json"]


@dataclass(slots=True)
class Node:
    """One span of the run: the run itself, an effect (step, fn, tool, model) or a group."""

    kind: str  # "run", "step", "fn", "tool", "model", "group"
    name: str
    site: Site | None
    index: tuple[int, ...]
    start: float
    outcome: str | None = None  # None: still open when the run ended (it was cut short)
    duration: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    #: What happened inside that is not a span of its own: model requests, tool calls, plans checked.
    notes: list[str] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    #: A group's progress: branches done, failed, of total.
    done: int = 0
    failed: int = 0
    total: int = 0


class Timeline:
    """An event sink that keeps a run's events, to show as a tree once it is over."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        """Keep ``event``."""
        self.events.append(event)

    def tree(self) -> list[Node]:
        """The runs (and anything reported outside a run) as trees, in the order they started."""
        nodes: dict[int, Node] = {}
        parents: dict[int, int | None] = {}
        loose: list[str] = []
        for event in self.events:
            match event:
                case RunStarted(pipeline=name, site=site, span=span, parent=parent, at=at):
                    nodes[span] = Node("run", name, site, (), at)
                    parents[span] = parent
                case EffectStarted(effect=effect, span=span, parent=parent, at=at):
                    name = effect.site.step if effect.site is not None else effect.kind
                    nodes[span] = Node(effect.kind, name, effect.site, effect.index, at)
                    parents[span] = parent
                case GroupStarted(site=site, index=index, total=total, span=span, parent=parent, at=at):
                    name = site.step if site is not None else "group"
                    nodes[span] = Node("group", name, site, index, at, total=total)
                    parents[span] = parent
                case RunEnded(span=span, outcome=outcome, duration=duration):
                    _close(nodes.get(span), outcome, duration)
                case EffectEnded(span=span) as ended:
                    node = nodes.get(span)
                    _close(node, ended.outcome, ended.duration)
                    if node is not None:
                        node.prompt_tokens, node.completion_tokens = ended.prompt_tokens, ended.completion_tokens
                        node.error = ended.error
                case GroupEnded(span=span, outcome=outcome, duration=duration):
                    _close(nodes.get(span), outcome, duration)
                case EachProgress(span=span, done=done, failed=failed):
                    node = nodes.get(span)
                    if node is not None:
                        node.done, node.failed = done, failed
                case ModelRequest(span=span) as request:
                    model = request.model
                    if request.model_id not in (None, model):
                        model += f" ({request.model_id})"
                    _note(nodes, loose, span, f"model {model}: {request.prompt_tokens}+{request.completion_tokens} tokens")
                case ToolCalled(span=span, tool=tool, server=server, ok=ok, duration=duration):
                    how = "" if ok else " (failed)"
                    _note(nodes, loose, span, f"tool {server}.{tool}{how}  {_ms(duration)}")
                case PlanChecked(span=span, accepted=accepted, diagnostics=count):
                    _note(nodes, loose, span, "plan accepted" if accepted else f"plan rejected ({count} errors)")
                case TextDelta() | PartialOutput():
                    pass  # the answer as it streamed: the result shows it whole
                case _:
                    assert_never(event)
        roots: list[Node] = []
        if loose:  # told outside any span: a step's own code called a tool with no run around it
            roots.append(Node("run", "(outside any run)", None, (), 0.0, notes=loose))
        for span, node in nodes.items():  # spans are numbered as they start: children in order
            parent = parents[span]
            if parent is not None and parent in nodes:
                nodes[parent].children.append(node)
            else:
                roots.append(node)
        return roots


def _close(node: Node | None, outcome: str, duration: float) -> None:
    if node is not None:
        node.outcome, node.duration = outcome, duration


def _note(nodes: dict[int, Node], loose: list[str], span: int | None, text: str) -> None:
    node = nodes.get(span) if span is not None else None
    (node.notes if node is not None else loose).append(text)


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f}s"
    return f"{seconds * 1000:.1f}ms"


def _tokens(node: Node) -> tuple[int, int]:
    """A node's tokens: its own (an effect's model requests) plus its children's."""
    prompt, completion = node.prompt_tokens, node.completion_tokens
    for child in node.children:
        p, c = _tokens(child)
        prompt, completion = prompt + p, completion + c
    return prompt, completion


def _line(node: Node) -> str:
    where = f" {node.site.file}:{node.site.line}" if node.site is not None else ""
    index = f"[{node.index[-1]}] " if node.index and node.kind != "run" else ""
    kind = node.kind if node.kind != "group" else "group"
    parts = [f"{index}{node.name}", kind + where, node.outcome or "unfinished", _ms(node.duration)]
    prompt, completion = _tokens(node)
    if prompt or completion:
        parts.append(f"tokens {prompt}+{completion}")
    if node.kind == "group":
        parts.append(f"{node.done}/{node.total} done" + (f", {node.failed} failed" if node.failed else ""))
    if node.error is not None and node.outcome != "ok":
        parts.append(node.error)
    return "  ".join(parts)


def render_text(roots: list[Node]) -> str:
    """The trees as text: one line per span (name, kind and ``.mce`` line, outcome, duration,
    tokens), its notes and children indented below it."""
    lines: list[str] = []

    def walk(node: Node, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        lines.append(prefix + branch + _line(node))
        inner = prefix + ("" if top else ("   " if last else "│  "))
        entries: list[Node | str] = [*node.notes, *node.children]
        for i, entry in enumerate(entries):
            end = i == len(entries) - 1
            if isinstance(entry, str):
                lines.append(inner + ("└─ " if end else "├─ ") + entry)
            else:
                walk(entry, inner, end, False)

    for root in roots:
        walk(root, "", True, True)
    return "\n".join(lines)


def as_json(roots: list[Node]) -> list[dict[str, Any]]:
    """The trees as JSON-ready data: per span its kind, name, site, element index, outcome,
    duration (seconds), own tokens, notes and children."""

    def one(node: Node) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": node.kind,
            "name": node.name,
            "site": (
                {"file": node.site.file, "line": node.site.line, "column": node.site.column}
                if node.site is not None
                else None
            ),
            "index": list(node.index),
            "outcome": node.outcome,
            "duration": node.duration,
            "tokens": {"prompt": node.prompt_tokens, "completion": node.completion_tokens},
        }
        if node.error is not None:
            data["error"] = node.error
        if node.kind == "group":
            data["progress"] = {"done": node.done, "failed": node.failed, "total": node.total}
        data["notes"] = list(node.notes)
        data["children"] = [one(child) for child in node.children]
        return data

    return [one(root) for root in roots]
