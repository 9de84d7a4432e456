"""The pictures ``mcec graph`` makes, laid out for the console's page (an SVG its template draws).

:func:`mcec.tools.graph.build_graph` gives each pipeline's nodes, boxes and edges; ``mcec graph
--format svg`` needs Graphviz's ``dot``, which a machine serving the console may not have, so this
lays the graph out itself, simply: each node on the row of its longest path from the input (the
edges that go back, a ``loop``'s, not counted), the nodes of a row side by side in drawing order,
each box (``local``, ``retry``, ``timeout``…) around its nodes. Each node keeps its spec line
(:attr:`mcec.tools.graph.Node.line`), which the page links to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, final

from mcec.tools.graph import Cluster, Graph, PipelineGraph

__all__ = ["Box", "Picture", "Placed", "Wire", "laid_out"]

_ROW: Final = 86
_GAP: Final = 28
_CHAR: Final = 7.0
_LINE: Final = 15
_MARGIN: Final = 20


@final
@dataclass(frozen=True, slots=True)
class Placed:
    """A node where it is drawn: its top-left corner, size, kind, text lines and spec line."""

    id: str
    x: float
    y: float
    width: float
    height: float
    kind: str
    lines: tuple[str, ...]
    line: int | None


@final
@dataclass(frozen=True, slots=True)
class Wire:
    """An edge as drawn: its path (SVG path data), kind and label with the label's place."""

    path: str
    kind: str
    label: str | None
    label_x: float
    label_y: float


@final
@dataclass(frozen=True, slots=True)
class Box:
    """A box drawn around its nodes, with its title."""

    x: float
    y: float
    width: float
    height: float
    title: str


@final
@dataclass(frozen=True, slots=True)
class Picture:
    """One pipeline's picture, ready to draw."""

    name: str
    title: str
    width: float
    height: float
    nodes: tuple[Placed, ...]
    wires: tuple[Wire, ...]
    boxes: tuple[Box, ...]


def laid_out(graph: Graph) -> list[Picture]:
    """Every pipeline of ``graph``, laid out."""
    return [_picture(pipeline) for pipeline in graph.pipelines]


def _nodes_of(box: Cluster) -> list[tuple[str, str, tuple[str, ...], int | None]]:
    found: list[tuple[str, str, tuple[str, ...], int | None]] = [(n.id, n.kind, n.lines, n.line) for n in box.nodes]
    for inner in box.clusters:
        found.extend(_nodes_of(inner))
    return found


def _picture(pipeline: PipelineGraph) -> Picture:
    nodes = sorted(_nodes_of(pipeline.box), key=lambda n: int(n[0].rsplit("_", 1)[1]))
    order = {node[0]: i for i, node in enumerate(nodes)}
    forward = [e for e in pipeline.edges if e.kind != "loop" and e.source in order and e.target in order]
    row = {node[0]: 0 for node in nodes}
    for _ in range(len(nodes)):  # longest path; bounded, should an edge go back after all
        changed = False
        for edge in forward:
            if order[edge.target] > order[edge.source] and row[edge.target] < row[edge.source] + 1:
                row[edge.target] = row[edge.source] + 1
                changed = True
        if not changed:
            break
    rows: dict[int, list[tuple[str, str, tuple[str, ...], int | None]]] = {}
    for node in nodes:
        rows.setdefault(row[node[0]], []).append(node)
    sizes = {n[0]: (max(len(text) for text in n[2]) * _CHAR + 20 if n[2] else 40.0, len(n[2]) * _LINE + 14.0)
             for n in nodes}
    widths = {r: sum(sizes[n[0]][0] for n in members) + _GAP * (len(members) - 1) for r, members in rows.items()}
    total = max(widths.values(), default=100.0) + 2 * _MARGIN
    placed: dict[str, Placed] = {}
    for r, members in rows.items():
        x = (total - widths[r]) / 2
        for node_id, kind, lines, line in members:
            width, height = sizes[node_id]
            placed[node_id] = Placed(node_id, x, _MARGIN + 24 + r * _ROW, width, height, kind, lines, line)
            x += width + _GAP
    wires = tuple(_wire(placed[e.source], placed[e.target], e.kind, e.label)
                  for e in pipeline.edges if e.source in placed and e.target in placed)
    boxes = tuple(_boxes(pipeline.box.clusters, placed))
    height = max((p.y + p.height for p in placed.values()), default=0.0) + _MARGIN
    return Picture(pipeline.name, pipeline.box.title, total, height, tuple(placed.values()), wires, boxes)


def _wire(source: Placed, target: Placed, kind: str, label: str | None) -> Wire:
    x1, y1 = source.x + source.width / 2, source.y + source.height
    x2, y2 = target.x + target.width / 2, target.y
    if kind == "loop" or y2 <= y1:  # back up the left side
        x1, y1 = source.x, source.y + source.height / 2
        x2, y2 = target.x, target.y + target.height / 2
        bend = min(x1, x2) - 40
        return Wire(f"M{x1:.0f},{y1:.0f} C{bend:.0f},{y1:.0f} {bend:.0f},{y2:.0f} {x2:.0f},{y2:.0f}", kind, label,
                    bend, (y1 + y2) / 2)
    middle = (y1 + y2) / 2
    return Wire(f"M{x1:.0f},{y1:.0f} C{x1:.0f},{middle:.0f} {x2:.0f},{middle:.0f} {x2:.0f},{y2:.0f}", kind, label,
                (x1 + x2) / 2 + 4, middle)


def _boxes(clusters: tuple[Cluster, ...], placed: dict[str, Placed]) -> list[Box]:
    boxes: list[Box] = []
    for cluster in clusters:
        inside = [placed[node[0]] for node in _nodes_of(cluster) if node[0] in placed]
        if inside:
            left = min(p.x for p in inside) - 10
            top = min(p.y for p in inside) - 22
            right = max(p.x + p.width for p in inside) + 10
            bottom = max(p.y + p.height for p in inside) + 8
            boxes.append(Box(left, top, right - left, bottom - top, cluster.title))
        boxes.extend(_boxes(cluster.clusters, placed))
    return boxes
