"""``mcec graph``: a checked pipeline as a picture (Mermaid, Graphviz DOT, SVG).

The core is pure: :func:`build_graph` turns a checked
:class:`~mcec.check.typed.Program` into a small graph model, and :func:`to_mermaid` /
:func:`to_dot` print it; only :func:`run_graph` (the command) reads files or
runs Graphviz. Output is deterministic: node ids are numbered in the order the
pipeline is written, and pipelines appear in source order.

What the picture shows, per pipeline (one box titled with its signature):

* an ``input`` and an ``output`` node carrying the pipeline's types;
* one node per step, fn, tool or pipeline use, labelled with its name and its
  type ``A -> B ! E`` (steps are boxes, fns rounded, tools hexagons, pipelines
  double-bordered; a pipeline of another spec also names it: ``pipeline research of
  agents/research.mce``);
* binds as plain edges; ``par`` and ``each`` as a fork node and a join node
  around their branches (``each(limit=k)`` shows its limit);
* ``local e`` as an inner box ("local: state restored");
* ``catch`` and ``orelse`` as dashed *recovery* edges from every node whose
  error they handle to the handler or fallback, labelled with the errors;
* every error that escapes as a red edge to one ``failure`` node, labelled with
  the errors that node may fail with (a ``MergeConflict`` leaves from the join
  of the ``par``/``each`` whose merge may raise it);
* (v2) ``match`` as a decision node (a diamond) with one edge per arm, labelled
  with its pattern (``Answer``, ``"search"``, ``3``, ``_``); ``if p then a else b``
  as ``p``'s nodes, then a decision node with edges labelled ``then`` and ``else``;
  ``loop(N) e`` as ``e``'s nodes, then a decision node from which a bold back edge
  labelled ``≤ N×`` goes to ``e``'s start and the exit edge leaves (the node's
  ``LoopExhausted`` edge goes to the failure node);
* (v2) ``retry``, ``timeout`` and ``budget`` as an inner box around their body, titled
  ``retry ×3 on E``, ``timeout 10 s`` or ``budget 1000 tokens``; a ``Timeout`` or
  ``BudgetExceeded`` leaves from the box itself. An ``llm`` step is a parallelogram.

A plan over a toolbox (§12, ``mcec graph --plan TEXT --toolbox SPEC[:t]``) is drawn by
:func:`build_plan_graph` as the pipeline it runs as: one box titled ``plan over toolbox t :
A -> B ! E``.

Labels are escaped for each format (Mermaid entity codes, DOT string escapes),
so no name or type can change the structure of the output.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal, assert_never

from mcec.check import typed as t
from mcec.check.types import MERGE_CONFLICT, ErrorSet, render_errors, runtime_error

__all__ = [
    "COMMANDS",
    "Cluster",
    "Edge",
    "Graph",
    "GraphvizMissing",
    "Node",
    "PipelineGraph",
    "add_graph",
    "build_graph",
    "build_plan_graph",
    "run_graph",
    "to_dot",
    "to_mermaid",
    "to_svg",
]

NodeKind = Literal["input", "output", "failure", "step", "fn", "tool", "llm", "ask", "pipeline", "fork", "join", "pass", "decision"]
EdgeKind = Literal["flow", "loop", "recover", "fail"]


def _ref_shape(kind: t.RefKind) -> NodeKind:
    """The node a reference is drawn as: one shape per kind of declaration."""
    match kind:
        case t.RefKind.STEP:
            return "step"
        case t.RefKind.FN:
            return "fn"
        case t.RefKind.TOOL:
            return "tool"
        case t.RefKind.LLM:
            return "llm"
        case t.RefKind.ASK:
            return "ask"
        case t.RefKind.PIPELINE:
            return "pipeline"
        case _:
            assert_never(kind)


@dataclass(frozen=True, slots=True)
class Node:
    """A node: its id (unique in the graph), kind and label lines."""

    id: str
    kind: NodeKind
    lines: tuple[str, ...]
    #: The line of the spec the node was drawn from (what ``mcec console`` links it to).
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Edge:
    """An edge; ``loop`` edges go back to the start of a loop's body, ``recover`` edges are dashed
    (catch/orelse), ``fail`` edges go to the failure node. The source of a ``recover`` or ``fail``
    edge may be a :class:`Cluster` (a ``timeout``'s box, which fails as a whole); every other end
    is a node."""

    source: str
    target: str
    kind: EdgeKind
    label: str | None = None


@dataclass(frozen=True, slots=True)
class Cluster:
    """A box of nodes: a whole pipeline, or a ``local``, ``retry`` or ``timeout`` inside one."""

    id: str
    title: str
    nodes: tuple[Node, ...]
    clusters: tuple[Cluster, ...]


@dataclass(frozen=True, slots=True)
class PipelineGraph:
    """One pipeline's picture: its box (with every node) and its edges."""

    name: str
    box: Cluster
    edges: tuple[Edge, ...]


@dataclass(frozen=True, slots=True)
class Graph:
    """The pictures of the pipelines asked for, in source order."""

    pipelines: tuple[PipelineGraph, ...]


# ---------------------------------------------------------------- building


@dataclass(slots=True)
class _Frag:
    """A drawn expression: where it is entered, where it leaves on success, and
    which nodes may fail with which errors (not yet handled)."""

    entry: str
    exits: list[str]
    failures: list[tuple[str, ErrorSet]]


@dataclass(slots=True)
class _Box:
    id: str
    title: str
    nodes: list[Node] = field(default_factory=list)
    boxes: list[_Box] = field(default_factory=list)

    def freeze(self) -> Cluster:
        return Cluster(self.id, self.title, tuple(self.nodes), tuple(b.freeze() for b in self.boxes))


class _Builder:
    """Draws one pipeline; ids are ``p<index>_<n>`` in drawing order."""

    def __init__(
        self,
        index: int,
        pipeline: t.TPipeline,
        uses: dict[str, t.TUsed] | None = None,
        title: str | None = None,
        streams: frozenset[str] = frozenset(),
    ) -> None:
        #: Pipelines of other specs, by the name this spec binds (drawn naming their spec).
        self.uses = uses or {}
        #: The llm steps declared ``stream llm`` (docs/language.md §14): drawn saying so.
        self.streams = streams
        self.prefix = f"p{index}"
        self.count = 0
        self.edges: list[Edge] = []
        self.root = _Box(self.prefix, title or f"pipeline {pipeline.name} : {pipeline.sig}")
        self.stack = [self.root]
        #: The line of the expression being drawn: each node's (:attr:`Node.line`).
        self.line: int | None = pipeline.span.line

    def fresh(self) -> str:
        self.count += 1
        return f"{self.prefix}_{self.count}"

    def node(self, kind: NodeKind, *lines: str) -> str:
        node = Node(self.fresh(), kind, lines, self.line)
        self.stack[-1].nodes.append(node)
        return node.id

    def edge(self, source: str, target: str, kind: EdgeKind = "flow", label: str | None = None) -> None:
        self.edges.append(Edge(source, target, kind, label))

    def connect(self, sources: Iterable[str], target: str, label: str | None = None) -> None:
        for source in sources:
            self.edge(source, target, "flow", label)

    def draw(self, e: t.TExpr) -> _Frag:
        """Draw ``e``; dispatch by node type."""
        self.line = e.span.line
        match e:
            case t.TRef() if e.kind is t.RefKind.PIPELINE and e.name in self.uses:
                used = self.uses[e.name]
                ref = self.node(_ref_shape(e.kind), e.name, f"pipeline {used.pipeline} of {used.spec}", str(e.sig))
                return _Frag(ref, [ref], [(ref, e.sig.errors)] if e.sig.errors else [])
            case t.TRef():
                name = f"{e.name} (streams)" if e.kind is t.RefKind.LLM and e.name in self.streams else e.name
                ref = self.node(_ref_shape(e.kind), name, str(e.sig))
                return _Frag(ref, [ref], [(ref, e.sig.errors)] if e.sig.errors else [])
            case t.TBind():
                parts = [self.draw(p) for p in e.parts]
                for before, after in zip(parts, parts[1:]):
                    self.connect(before.exits, after.entry)
                return _Frag(parts[0].entry, parts[-1].exits, [f for p in parts for f in p.failures])
            case t.TPar() | t.TEach():
                return self.draw_group(e)
            case t.TLocal():
                return self.draw_boxed("local: state restored", e.body)[1]
            case t.TSubAgent():
                # a sub-agent (§11): the box names the fn that makes its state
                label = f"local(state={e.adapter.name}): its own state, this one restored"
                return self.draw_boxed(label, e.body)[1]
            case t.TCatch():
                body = self.draw(e.body)
                handler = self.draw(e.handler)
                caught = frozenset(e.errors)
                left: list[tuple[str, ErrorSet]] = []
                for source, errors in body.failures:
                    handled = errors & caught
                    if handled:
                        self.edge(source, handler.entry, "recover", render_errors(handled))
                    if errors - caught:
                        left.append((source, errors - caught))
                return _Frag(body.entry, body.exits + handler.exits, left + handler.failures)
            case t.TOrElse():
                attempt = self.draw(e.body)
                fallback = self.draw(e.fallback)
                for source, errors in attempt.failures:
                    self.edge(source, fallback.entry, "recover", render_errors(errors))
                return _Frag(attempt.entry, attempt.exits + fallback.exits, fallback.failures)
            case t.TIdentity():
                node = self.node("pass", e.written or "(no steps)", str(e.sig))
                return _Frag(node, [node], [])
            case t.TMatch():
                decision = self.node("decision", "match", str(e.sig))
                arms = [self.draw(arm.body) for arm in e.arms]
                for arm, drawn in zip(e.arms, arms):
                    self.edge(decision, drawn.entry, label=_pattern(arm.pattern))
                return _Frag(decision, [x for a in arms for x in a.exits], [f for a in arms for f in a.failures])
            case t.TIf():
                condition = self.draw(e.condition)
                decision = self.node("decision", "if")
                self.connect(condition.exits, decision)
                then = self.draw(e.then)
                otherwise = self.draw(e.otherwise)
                self.edge(decision, then.entry, label="then")
                self.edge(decision, otherwise.entry, label="else")
                failures = condition.failures + then.failures + otherwise.failures
                return _Frag(condition.entry, then.exits + otherwise.exits, failures)
            case t.TLoop():
                body = self.draw(e.body)
                again = self.node("decision", "loop", f"again on {e.continues}")
                self.connect(body.exits, again)
                self.edge(again, body.entry, "loop", f"≤ {e.bound}×")
                return _Frag(body.entry, [again], [*body.failures, (again, frozenset({_LOOP_EXHAUSTED}))])
            case t.TRetry():
                on = "" if e.on is None else f" on {render_errors(frozenset(e.on))}"
                backoff = "" if e.backoff == t.DEFAULT_BACKOFF else f", backoff {_seconds(e.backoff)} s"
                return self.draw_boxed(f"retry ×{e.attempts}{on}{backoff}", e.body)[1]
            case t.TTimeout():
                box, body = self.draw_boxed(f"timeout {_seconds(e.seconds)} s", e.body)
                return _Frag(body.entry, body.exits, [*body.failures, (box, frozenset({_TIMEOUT}))])
            case t.TBudget():
                box, body = self.draw_boxed(f"budget {e.tokens} tokens", e.body)
                return _Frag(body.entry, body.exits, [*body.failures, (box, frozenset({_BUDGET_EXCEEDED}))])
            case t.TSpawn():
                # §12: the planner writes the plan, which is checked against the toolbox, then run
                box, planner = self.draw_boxed(f"spawn({e.toolbox}): planner", e.planner)
                plan = self.node("pass", f"plan over toolbox {e.toolbox}", "checked, then run", str(e.sig))
                self.connect(planner.exits, plan)
                failures = [*planner.failures, (plan, e.sig.errors - e.planner.sig.errors)]
                return _Frag(planner.entry, [plan], [f for f in failures if f[1]])
            case _:
                assert_never(e)

    def draw_boxed(self, title: str, body: t.TExpr) -> tuple[str, _Frag]:
        """Draw ``body`` inside a new inner box titled ``title``: the box's id and the drawing."""
        box = _Box(self.fresh(), title)
        self.stack[-1].boxes.append(box)
        self.stack.append(box)
        try:
            return box.id, self.draw(body)
        finally:
            self.stack.pop()

    def draw_group(self, e: t.TPar | t.TEach) -> _Frag:
        if isinstance(e, t.TPar):
            fork = self.node("fork", "par", str(e.sig))
            branches = [self.draw(b) for b in e.branches]
            join = self.node("join", "join")
            for branch in branches:
                self.edge(fork, branch.entry)
                self.connect(branch.exits, join)
        else:
            head = "each" if e.limit is None else f"each(limit={e.limit})"
            fork = self.node("fork", head, str(e.sig))
            branches = [self.draw(e.body)]
            join = self.node("join", "collect")
            self.edge(fork, branches[0].entry, label="every item")
            self.connect(branches[0].exits, join)
        failures = [f for b in branches for f in b.failures]
        if e.merge == "by_field":
            failures.append((join, frozenset({MERGE_CONFLICT})))
        return _Frag(fork, [join], failures)

    def finish(self, pipeline: t.TPipeline) -> PipelineGraph:
        start = self.node("input", f"input: {pipeline.sig.input}")
        body = self.draw(pipeline.body)
        end = self.node("output", f"output: {pipeline.sig.output}")
        self.edge(start, body.entry)
        self.connect(body.exits, end)
        merged: dict[str, ErrorSet] = {}
        for source, errors in body.failures:
            merged[source] = merged.get(source, frozenset()) | errors
        if merged:
            everything = frozenset().union(*merged.values())
            failure = self.node("failure", f"failure: {render_errors(everything)}")
            for source, errors in merged.items():
                self.edge(source, failure, "fail", render_errors(errors))
        rank = {"flow": 0, "loop": 1, "recover": 2, "fail": 3}
        edges = sorted(self.edges, key=lambda e: (rank[e.kind], _number(e.source), _number(e.target)))
        return PipelineGraph(pipeline.name, self.root.freeze(), tuple(edges))


#: The built-in errors a ``loop`` and a ``timeout`` add (docs/language.md §5). (The checker's own
#: constants, once it has them, are equal: built-in error types compare by their path.)
_LOOP_EXHAUSTED = runtime_error("LoopExhausted")
_TIMEOUT = runtime_error("Timeout")
_BUDGET_EXCEEDED = runtime_error("BudgetExceeded")


def _pattern(pattern: t.TPattern) -> str:
    """An arm's pattern as the spec writes it: a type, a literal (strings JSON-quoted), or ``_``."""
    match pattern:
        case t.PClass():
            return str(pattern.type)
        case t.PLiteral():
            return json.dumps(pattern.value, ensure_ascii=False)
        case t.PWildcard():
            return "_"
        case _:
            assert_never(pattern)


def _seconds(value: float) -> str:
    """Seconds in their shortest form, as ``mcec fmt`` writes them: ``10``, ``0.5``, ``0.00001``."""
    return str(int(value)) if value.is_integer() else format(Decimal(repr(value)), "f")


def _number(node_id: str) -> int:
    """The drawing order of a node id ``p<i>_<n>``."""
    return int(node_id.rsplit("_", 1)[1])


def build_graph(program: t.Program, pipeline: str | None = None) -> Graph:
    """The pictures of every pipeline of ``program`` (in source order), or of one.

    Raises ``KeyError`` when ``pipeline`` is not one of the program's pipelines.
    """
    pipelines = sorted(program.pipelines, key=lambda p: p.span.start)
    if pipeline is not None:
        chosen = [p for p in pipelines if p.name == pipeline]
        if not chosen:
            raise KeyError(pipeline)
        pipelines = chosen
    graphs = []
    streams = frozenset(llm.name for llm in program.llms if llm.stream)
    for index, item in enumerate(pipelines):
        graphs.append(_Builder(index, item, {used.name: used for used in program.uses}, streams=streams).finish(item))
    return Graph(tuple(graphs))


def build_plan_graph(program: t.Program, toolbox: t.TToolbox, body: t.TExpr) -> Graph:
    """The picture of an accepted plan over ``toolbox`` (docs/language.md §12) as it would run.

    A plan runs as the body of ``pipeline plan : A -> B ! E``, ``A -> B ! E``
    being the toolbox's type, so it is drawn as that pipeline, in a box titled
    ``plan over toolbox t : A -> B ! E``; its failure node names the errors the
    plan itself may fail with. ``program`` is the toolbox's spec (it says which
    entries are pipelines of other specs); ``body`` is
    :attr:`~mcec.plans.check.PlanCheck.body`.
    """
    plan = t.TPipeline("plan", toolbox.sig, body, body.span)
    title = f"plan over toolbox {toolbox.name} : {toolbox.sig}"
    builder = _Builder(0, plan, {used.name: used for used in program.uses}, title=title)
    return Graph((builder.finish(plan),))


# ---------------------------------------------------------------- Mermaid

_MERMAID_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,:()[]!=/+*'-")

_MERMAID_SHAPES: dict[NodeKind, tuple[str, str]] = {
    "input": ('(["', '"])'),
    "output": ('(["', '"])'),
    "failure": ('>"', '"]'),
    "step": ('["', '"]'),
    "fn": ('("', '")'),
    "tool": ('{{"', '"}}'),
    "llm": ('[/"', '"/]'),
    "ask": ('[\\"', '"/]'),
    "pipeline": ('[["', '"]]'),
    "fork": ('(("', '"))'),
    "join": ('(("', '"))'),
    "pass": ('["', '"]'),
    "decision": ('{"', '"}'),
}


def _mermaid_text(text: str) -> str:
    """``text`` safe inside a quoted Mermaid label: everything else becomes an entity code."""
    return "".join(ch if ch in _MERMAID_SAFE else f"#{ord(ch)};" for ch in text)


def _mermaid_label(lines: Iterable[str]) -> str:
    return "<br/>".join(_mermaid_text(line) for line in lines)


def to_mermaid(graph: Graph) -> str:
    """The graph as a Mermaid flowchart (renders in GitHub Markdown)."""
    out = ["flowchart TD"]
    edges: list[Edge] = [e for p in graph.pipelines for e in p.edges]
    if not graph.pipelines:
        out.append('    empty["(no pipelines)"]')

    def box(cluster: Cluster, depth: int) -> None:
        pad = "    " * depth
        out.append(f'{pad}subgraph {cluster.id}["{_mermaid_text(cluster.title)}"]')
        out.append(f"{pad}    direction TB")
        for node in cluster.nodes:
            left, right = _MERMAID_SHAPES[node.kind]
            out.append(f"{pad}    {node.id}{left}{_mermaid_label(node.lines)}{right}")
        for inner in cluster.clusters:
            box(inner, depth + 1)
        out.append(f"{pad}end")

    for pipeline in graph.pipelines:
        box(pipeline.box, 1)
    arrows = {"flow": "-->", "loop": "==>", "recover": "-.->", "fail": "-->"}
    for edge in edges:
        label = f'|"{_mermaid_text(edge.label)}"|' if edge.label else ""
        out.append(f"    {edge.source} {arrows[edge.kind]}{label} {edge.target}")
    failures = [n.id for p in graph.pipelines for n in _all_nodes(p.box) if n.kind == "failure"]
    joins = [n.id for p in graph.pipelines for n in _all_nodes(p.box) if n.kind in ("fork", "join")]
    if failures:
        out.append("    classDef failure fill:#fdecea,stroke:#c62828,color:#b71c1c")
        out.append(f"    class {','.join(failures)} failure")
    if joins:
        out.append("    classDef group fill:#263238,stroke:#263238,color:#ffffff")
        out.append(f"    class {','.join(joins)} group")
    red = [str(i) for i, e in enumerate(edges) if e.kind == "fail"]
    if red:
        out.append(f"    linkStyle {','.join(red)} stroke:#c62828,color:#b71c1c")
    return "\n".join(out) + "\n"


def _all_nodes(cluster: Cluster) -> list[Node]:
    nodes = list(cluster.nodes)
    for inner in cluster.clusters:
        nodes.extend(_all_nodes(inner))
    return nodes


def _all_clusters(cluster: Cluster) -> list[Cluster]:
    """The boxes inside ``cluster`` (not itself), at any depth."""
    found = []
    for inner in cluster.clusters:
        found.append(inner)
        found.extend(_all_clusters(inner))
    return found


# ---------------------------------------------------------------- Graphviz

_DOT_SHAPES: dict[NodeKind, str] = {
    "input": 'shape=oval, style=filled, fillcolor="#eceff1"',
    "output": 'shape=oval, style=filled, fillcolor="#eceff1"',
    "failure": 'shape=octagon, color="#c62828", fontcolor="#b71c1c", style=filled, fillcolor="#fdecea"',
    "step": "shape=box",
    "fn": 'shape=box, style="rounded"',
    "tool": "shape=hexagon",
    "llm": "shape=parallelogram",
    "ask": 'shape=house, style=filled, fillcolor="#fff8e1"',
    "pipeline": "shape=box, peripheries=2",
    "fork": 'shape=box, style=filled, fillcolor="#263238", fontcolor=white, height=0.25',
    "join": 'shape=box, style=filled, fillcolor="#263238", fontcolor=white, height=0.25',
    "pass": "shape=box, style=dotted",
    "decision": "shape=diamond",
}


def _dot_string(text: str) -> str:
    """A DOT double-quoted string: backslashes and quotes escaped, no raw line breaks."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = "".join(" " if ord(ch) < 32 or ch in "\u2028\u2029" else ch for ch in escaped)
    return f'"{escaped}"'


def to_dot(graph: Graph) -> str:
    """The graph in Graphviz DOT (``dot -Tsvg`` renders it).

    DOT has no edges from a cluster: an edge that leaves a box (a ``timeout``'s
    ``Timeout``) is drawn from the box's first node, clipped at the box's border
    (``ltail``, with ``compound=true``).
    """
    inside = {c.id: c for p in graph.pipelines for c in _all_clusters(p.box)}
    compound = ", compound=true" if any(e.source in inside for p in graph.pipelines for e in p.edges) else ""
    out = [
        "digraph mce {",
        f'    graph [rankdir=TB, fontname="Helvetica", fontsize=12{compound}];',
        '    node [fontname="Helvetica", fontsize=11];',
        '    edge [fontname="Helvetica", fontsize=10];',
    ]
    if not graph.pipelines:
        out.append('    empty [label="(no pipelines)", shape=plaintext];')

    def box(cluster: Cluster, depth: int, dashed: bool) -> None:
        pad = "    " * depth
        out.append(f"{pad}subgraph cluster_{cluster.id} {{")
        out.append(f"{pad}    label={_dot_string(cluster.title)};")
        if dashed:
            out.append(f"{pad}    style=dashed;")
        for node in cluster.nodes:
            label = "\\n".join(_dot_string(line)[1:-1] for line in node.lines)
            out.append(f'{pad}    {node.id} [label="{label}", {_DOT_SHAPES[node.kind]}];')
        for inner in cluster.clusters:
            box(inner, depth + 1, True)
        out.append(f"{pad}}}")

    for pipeline in graph.pipelines:
        box(pipeline.box, 1, False)
    for pipeline in graph.pipelines:
        for edge in pipeline.edges:
            source = edge.source
            attributes = []
            if edge.label:
                attributes.append(f"label={_dot_string(edge.label)}")
            if source in inside:
                source = min((n.id for n in _all_nodes(inside[source])), key=_number)
                attributes.append(f"ltail=cluster_{edge.source}")
            if edge.kind == "loop":
                attributes.append("style=bold, constraint=false")
            elif edge.kind == "recover":
                attributes.append("style=dashed")
            elif edge.kind == "fail":
                attributes.append('color="#c62828", fontcolor="#b71c1c"')
            suffix = f" [{', '.join(attributes)}]" if attributes else ""
            out.append(f"    {source} -> {edge.target}{suffix};")
    out.append("}")
    return "\n".join(out) + "\n"


class GraphvizMissing(Exception):
    """Graphviz's ``dot`` program is not installed (or not on ``PATH``)."""


def to_svg(graph: Graph, dot_program: str | None = None) -> str:
    """Render the graph to SVG with Graphviz's ``dot``.

    Raises :class:`GraphvizMissing` when ``dot`` cannot be found, and
    ``RuntimeError`` with dot's message when it fails.
    """
    program = dot_program or shutil.which("dot")
    if program is None:
        raise GraphvizMissing("dot")
    try:
        done = subprocess.run(
            [program, "-Tsvg"], input=to_dot(graph), capture_output=True, text=True, timeout=120, check=False
        )
    except OSError as exc:
        raise GraphvizMissing(str(exc)) from exc
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError("dot did not finish within 120 seconds") from exc
    if done.returncode != 0:
        raise RuntimeError((done.stderr or done.stdout).strip() or f"dot exited with status {done.returncode}")
    return done.stdout
