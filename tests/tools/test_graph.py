"""``mcec graph``: golden Mermaid/DOT pictures, escaping, the command's exits."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcec.compiler import check_source
from mcec.tools.graph import Cluster, Edge, Graph, Node, PipelineGraph, build_graph, to_dot, to_mermaid
from mcec.span import SourceFile

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "tools" / "cases" / "graph"
SPECS = {
    "briefing": ROOT / "examples" / "briefing" / "briefing.mce",
    "meta": ROOT / "examples" / "meta" / "meta.mce",
    "shapes": CASES / "shapes.mce",
}


def _mcec(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcec", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )


def _graph(spec: Path, pipeline: str | None = None) -> Graph:
    result = check_source(SourceFile(str(spec.relative_to(ROOT)), spec.read_text(encoding="utf-8")))
    assert result.program is not None, result.diagnostics
    return build_graph(result.program, pipeline)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_golden_mermaid_and_dot(name: str, golden) -> None:  # type: ignore[no-untyped-def]
    graph = _graph(SPECS[name])
    golden(CASES / f"{name}.mmd", to_mermaid(graph))
    golden(CASES / f"{name}.dot", to_dot(graph))
    assert to_mermaid(_graph(SPECS[name])) == to_mermaid(graph)  # deterministic


def test_structure_of_the_briefing_picture() -> None:
    graph = _graph(SPECS["briefing"], "briefing")
    (pipeline,) = graph.pipelines
    nodes = {n.id: n for n in pipeline.box.nodes}
    kinds = [n.kind for n in pipeline.box.nodes]
    assert kinds.count("fork") == 1 and kinds.count("join") == 1 and kinds.count("failure") == 1
    recover = [e for e in pipeline.edges if e.kind == "recover"]
    assert sorted((nodes[e.source].lines[0], nodes[e.target].lines[0], e.label) for e in recover) == [
        ("news", "no_news", "SourceDown"),
        ("stocks", "no_stocks", "SourceDown"),
        ("weather", "no_weather", "SourceDown"),
    ]
    (fail,) = [e for e in pipeline.edges if e.kind == "fail"]
    assert nodes[fail.source].kind == "join" and fail.label == "MergeConflict"
    assert nodes["p0_3"].lines == ("news", "Request -> News ! SourceDown")


def test_labels_cannot_inject_structure() -> None:
    evil = 'x"]\nclick p0_1 "javascript:alert(1)" %% <b>|;{}\\'
    graph = Graph(
        (
            PipelineGraph(
                "p",
                Cluster("p0", evil, (Node("p0_1", "step", (evil, evil)), Node("p0_2", "fn", ("ok",))), ()),
                (Edge("p0_1", "p0_2", "recover", evil),),
            ),
        )
    )
    mermaid = to_mermaid(graph)
    for line in mermaid.splitlines():
        assert line.count('"') % 2 == 0
        assert not line.strip().startswith("click")
    body = mermaid.split("\n", 1)[1]
    assert "<b>" not in body and "%%" not in body and "\n click" not in mermaid and "\\" not in body
    # header, subgraph, direction, two nodes, end, one edge: nothing injected
    assert len(mermaid.splitlines()) == 7
    dot = to_dot(graph)
    assert '"x\\"]' in dot and "\nclick" not in dot
    for line in dot.splitlines():
        unescaped = line.replace('\\\\', "").replace('\\"', "")
        assert unescaped.count('"') % 2 == 0, line


def test_cli_default_is_mermaid_and_selects_a_pipeline() -> None:
    run = _mcec("graph", "examples/meta/meta.mce", "--pipeline", "specialist")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("flowchart TD\n")
    assert "pipeline specialist" in run.stdout and "pipeline solve" not in run.stdout


def test_cli_unknown_pipeline_and_broken_spec(tmp_path: Path) -> None:
    run = _mcec("graph", "examples/meta/meta.mce", "--pipeline", "nope")
    assert run.returncode == 2
    assert "no pipeline named `nope`" in run.stderr and "specialist, solve" in run.stderr
    bad = tmp_path / "bad.mce"
    bad.write_text("pipeline p : int -> int = missing;\n", encoding="utf-8")
    run = _mcec("graph", str(bad))
    assert run.returncode == 1 and run.stdout == ""
    assert "error[MCE002]" in run.stderr and "Traceback" not in run.stderr


def test_cli_svg_without_graphviz(tmp_path: Path) -> None:
    env = dict(os.environ, PATH=str(tmp_path))  # a PATH with no `dot` on it
    run = _mcec("graph", "--format", "svg", "examples/briefing/briefing.mce", env=env)
    assert run.returncode == 2 and run.stdout == ""
    assert "`dot` program, which is not installed" in run.stderr and "apt-get install graphviz" in run.stderr


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_cli_svg_with_graphviz() -> None:
    run = _mcec("graph", "--format", "svg", "tests/tools/cases/graph/shapes.mce")
    assert run.returncode == 0, run.stderr
    assert "<svg" in run.stdout and "failure: E" in run.stdout
