"""``mcec run --trace``: a run's events as a tree — each step with its ``.mce`` line, duration,
tokens and outcome — printed after the result (text, or JSON for tools).

:class:`Timeline` is an event sink (``agentmonad.events``) that keeps the run's events (of
a streamed call's partial outputs only the last: each holds the whole answer so far, so keeping
them all took memory quadratic in the answer, issue 47); once the run is over, :meth:`Timeline.tree` rebuilds the run's structure from the events' span and
parent numbers (a ``par``/``each`` group's branches under the group, a model request or a
tool call under the step that made it), :func:`render_text` draws it and :func:`as_json`
gives it as data.

:func:`from_records` builds the same tree from a durable run's records (``mcec runs show``,
docs/language.md §13): the records carry no events, but each one's identity is its branch path,
which says which ``par``/``each`` element or which effect's own call it belongs to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from agentmonad.events import (
    EachProgress,
    Effect,
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

__all__ = ["Timeline", "Node", "from_records", "render_text", "as_json"]


@dataclass(slots=True)
class Node:
    """One span of the run: the run itself, an effect (step, tool, model) or a group."""

    kind: str  # "run", "step", "tool", "model", "group"
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
    #: A group's progress: branches done, failed, of total (None: not known, as in a durable
    #: run's records, which name only the elements that recorded something).
    done: int = 0
    failed: int = 0
    total: int | None = 0
    #: A durable run's effect: its recorded identity (docs/language.md §13) and how it changed the
    #: state, as recorded (None: the record has no state, or this node is not a record).
    key: str | None = None
    state_change: Any = None


class Timeline:
    """An event sink that keeps a run's events, to show as a tree once it is over."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        #: where in ``events`` the partial output of each streamed call (its span and effect) is
        self._partial_at: dict[tuple[int | None, Effect | None], int] = {}

    def emit(self, event: Event) -> None:
        """Keep ``event``; a :class:`PartialOutput` takes the place of its call's previous one."""
        if isinstance(event, PartialOutput):
            call = (event.span, event.effect)
            at = self._partial_at.get(call)
            if at is not None:
                self.events[at] = event
                return
            self._partial_at[call] = len(self.events)
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


#: A record's result key -> the outcome kind it shows as (``none``: a pause, which returns nothing).
_RECORDED_OUTCOMES = {"ok": "ok", "value": "ok", "none": "ok", "err": "err", "raised": "err", "timeout": "timeout"}
#: The kinds of the records a durable run keeps when it stops (not effects: they have no branch path).
_STOPS = ("waiting", "cancelled")
_SITE_TEXT = re.compile(r"^(?P<file>.*):(?P<line>\d+):(?P<column>\d+) \((?P<step>.*)\)$")


def record_outcome(record: Mapping[str, Any]) -> str:
    """The outcome kind of a durable run's record: ``ok``, ``err`` (a declared error, returned or
    raised), ``timeout`` (a deadline that fired there), ``waiting`` (where the run stopped to wait
    for people), ``cancelled`` (where a waiting run was cancelled), else ``?``."""
    if record.get("kind") in _STOPS:
        return str(record["kind"])
    result = record.get("result") or {}
    return next((kind for key, kind in _RECORDED_OUTCOMES.items() if key in result), "?")


def _record_site(text: object) -> Site | None:
    """A record's site, kept as ``str(Site)``: ``file:line:column (step)``."""
    match = _SITE_TEXT.match(text) if isinstance(text, str) else None
    if match is None:
        return None
    return Site(match["step"], match["file"], int(match["line"]), int(match["column"]))


def _record_error(record: Mapping[str, Any]) -> str | None:
    result = record.get("result") or {}
    error = result.get("err") or result.get("raised")
    return str(error.get("type", "?")).rsplit(".", 1)[-1] if isinstance(error, dict) else None


def _segments(key: str) -> tuple[tuple[int, ...], ...]:
    """A record's identity as numbers, to order records as their branches ran: ``2.3/0`` is
    ``((2, 3), (0,))`` (the effect 0 of element 3 of the group numbered 2)."""
    return tuple(tuple(int(n) for n in part.split(".")) for part in key.split("/"))


def short_json(value: object, limit: int = 60) -> str:
    """``value`` as compact JSON, cut to ``limit`` characters (``...`` at the end when cut): in time
    bounded by ``limit``, not by the value (a durable run's state after each of its effects)."""
    text = ""
    for piece in json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).iterencode(value):
        text += piece
        if len(text) > limit:
            return text[: limit - 3] + "..."
    return text


def from_records(
    records: Sequence[Mapping[str, Any]],
    states: Sequence[str | None],
    *,
    pipeline: str,
    outcome: str | None,
    started: float | None = None,
    ended: float | None = None,
) -> list[Node]:
    """A durable run's tree, from its records (``states[i]``: the state after ``records[i]`` as
    :func:`short_json` gives it, from :func:`agentmonad.durable.journal.states_seen`): the run at
    the root, each record an effect with its duration, outcome kind, tokens, state change and
    state after it, under the ``par``/``each``
    element or the effect (a ``spawn``'s planner and plan steps) its branch path names.

    A group has no record of its own: it shows as ``par/each`` with the elements that have
    records (``done``: those whose effects all succeeded; the total is not known), ``unfinished``
    unless the run ended or its branch recorded something after it; an effect whose call was
    still running when the run stopped shows as ``unfinished`` above the records made inside it.
    ``outcome`` is the run's (None: it has not ended). A record of the run stopping (to wait for
    people, or cancelled while it waited) is a node at the end of the run, its questions noted."""
    stops = [record for record in records if record.get("kind") in _STOPS]
    states = [state for record, state in zip(records, states) if record.get("kind") not in _STOPS]
    records = [record for record in records if record.get("kind") not in _STOPS]
    run = Node("run", pipeline, None, (), started if started is not None else 0.0, outcome=outcome)
    if outcome is not None and started is not None and ended is not None:
        run.duration = max(ended - started, 0.0)
    containers: dict[str, Node] = {"": run}

    def container(path: list[str]) -> Node:
        """The node that the effects of branch ``path`` hang under (made when first needed)."""
        name = "/".join(path)
        node = containers.get(name)
        if node is not None:
            return node
        *outer, last = path
        number, dot, _ = last.partition(".")
        if not dot:  # the branch inside effect `name`: its node, or a stand-in when it never ended
            node = Node("effect", "(running when the run stopped)", None, _index(path), 0.0, key=name)
            container(outer).children.append(node)
        else:  # an element of the group `number` of the branch `outer`
            group_key = "/".join([*outer, number])
            node = containers.get(group_key)
            if node is None:
                node = Node("group", "par/each", None, _index(outer), 0.0, key=group_key)
                containers[group_key] = node
                container(outer).children.append(node)
        containers[name] = node
        return node

    ordered = sorted(zip(records, states), key=lambda pair: _segments(str(pair[0]["key"])))
    for record, state in ordered:
        key = str(record["key"])
        path = key.split("/")
        parent = container(path[:-1])
        node = containers.get(key)  # a stand-in made for the effects inside this one
        if node is None:
            node = Node("effect", "", None, _index(path[:-1]), 0.0, key=key)
            containers[key] = node
            parent.children.append(node)
        _fill(node, record, state)
    numbered = [_segments(str(record["key"])) for record in records]

    def finished(group: Node) -> bool:
        """The run ended, or the group's branch went on after it (a branch runs one thing at a time)."""
        *outer, last = _segments(str(group.key))
        return outcome is not None or any(
            len(key) > len(outer) and list(key[: len(outer)]) == outer and key[len(outer)][0] > last[0] for key in numbered
        )

    _close_groups(run, finished)
    for stop in stops:
        node = Node(str(stop["kind"]), str(stop["kind"]), None, (), 0.0, outcome=record_outcome(stop), duration=0.0)
        node.notes = [f"question {q.get('name')}" + (f" at {q['index']}" if q.get("index") else "")
                      for q in stop.get("questions", ())]
        run.children.append(node)
    if started is None and records:
        run.start = min(float(r.get("started", 0.0)) for r in records)
    return [run]


def _index(path: list[str]) -> tuple[int, ...]:
    """The element indices of the ``par``/``each`` branches on ``path``, outermost first."""
    return tuple(int(part.split(".")[1]) for part in path if "." in part)


def _fill(node: Node, record: Mapping[str, Any], state: str | None) -> None:
    """``node`` as ``record`` says: the effect's kind, step, site, time, outcome, tokens and state."""
    node.kind = str(record.get("kind", "effect"))
    node.name = str(record.get("step", node.kind))
    node.site = _record_site(record.get("site"))
    node.start = float(record.get("started", 0.0))
    node.duration = float(record.get("seconds", 0.0))
    node.outcome = record_outcome(record)
    node.error = _record_error(record)
    for model, prompt, completion in record.get("usage") or ():
        node.prompt_tokens += int(prompt)
        node.completion_tokens += int(completion)
        node.notes.append(f"model {model}: {prompt}+{completion} tokens")
    node.state_change = state_change(record)
    if state is not None:
        node.notes.append(f"state after: {state}")


def state_change(record: Mapping[str, Any]) -> object:
    """How a durable run's ``record`` changed its branch's state, as recorded: ``{"same": true}``,
    ``{"extend": [...]}``, ``{"fields": {...}}``, ``{"set": value}`` (a branch's first record: its
    whole state); None when it records no state (:func:`agentmonad.durable.journal.state_delta`)."""
    result = record.get("result")
    if not isinstance(result, Mapping):
        return None
    if "delta" in result:
        return result["delta"]
    return {"set": result["state"]} if "state" in result else None


def _close_groups(node: Node, ended: Callable[[Node], bool]) -> None:
    """Every group below ``node`` (innermost first) gets its progress, outcome and span from its
    elements' effects: an element is done when all of them succeeded, failed when one did not."""
    for child in node.children:
        _close_groups(child, ended)
    if node.kind != "group":
        return
    succeeded: dict[int, bool] = {}
    for child in node.children:
        element = child.index[-1] if child.index else 0
        succeeded[element] = succeeded.get(element, True) and child.outcome == "ok"
    node.total, node.done = None, sum(succeeded.values())
    node.failed = len({child.index[-1] if child.index else 0 for child in node.children if child.outcome not in ("ok", None)})
    node.outcome = ("err" if node.failed else "ok") if ended(node) else None
    if node.children:
        node.start = min(child.start for child in node.children)
        node.duration = max(child.start + (child.duration or 0.0) for child in node.children) - node.start


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
        total = f"/{node.total}" if node.total is not None else ""
        parts.append(f"{node.done}{total} done" + (f", {node.failed} failed" if node.failed else ""))
    if node.error is not None and node.outcome != "ok":
        parts.append(node.error)
    if node.key is not None:  # a durable run's record: its identity (`mcec runs show`)
        parts.append(f"id {node.key}")
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
        if node.key is not None:  # a durable run's record (`mcec runs show`)
            data["key"] = node.key
            data["state_change"] = node.state_change
        data["notes"] = list(node.notes)
        data["children"] = [one(child) for child in node.children]
        return data

    return [one(root) for root in roots]
