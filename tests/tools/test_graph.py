"""``mcec graph``: golden Mermaid/DOT pictures, escaping, the command's exits."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcec.check import typed as t
from mcec.check.types import Builtin
from mcec.compiler import check_source
from mcec.tools.fmt import format_text
from mcec.tools.graph import Cluster, Edge, Graph, Node, PipelineGraph, build_graph, to_dot, to_mermaid, to_svg
from mcec.span import SourceFile, Span

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "tools" / "cases" / "graph"
SPECS = {
    "briefing": ROOT / "examples" / "briefing" / "briefing.mce",
    "meta": ROOT / "examples" / "meta" / "meta.mce",
    "research": ROOT / "examples" / "research" / "research.mce",
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
def test_golden_mermaid_and_dot(name: str, golden, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(ROOT)  # research's `file "decide.j2"` is found relative to the spec's path
    graph = _graph(SPECS[name])
    golden(CASES / f"{name}.mmd", to_mermaid(graph))
    golden(CASES / f"{name}.dot", to_dot(graph))
    assert to_mermaid(_graph(SPECS[name])) == to_mermaid(graph)  # deterministic


def test_llm_steps_are_parallelograms_in_their_retry_box(monkeypatch: pytest.MonkeyPatch) -> None:
    """research's react: ``decide`` (an llm step) is an ``llm`` node inside the retry box,
    inside the budget box; its errors go to the failure node; ``mcec graph`` prints it so."""
    monkeypatch.chdir(ROOT)
    (react,) = _graph(SPECS["research"], "react").pipelines
    nodes, boxes, edges = _labelled(react)
    (decide,) = [n for n in nodes.values() if n.lines[0] == "decide"]
    assert decide.kind == "llm"
    assert decide.lines[1] == "Turn -> AddArgs | Answer | SearchArgs ! LLMFailed | LLMUnavailable"
    assert {b.title for b in boxes.values()} >= {"budget 20000 tokens", "retry ×3 on LLMUnavailable, backoff 0.1 s"}
    touching = [(kind, source, target.split(":")[0], label) for kind, source, target, label in edges if "decide" in (source, target)]
    assert touching == [
        ("flow", "ask", "decide", None),
        ("flow", "decide", "match", None),
        ("loop", "loop", "decide", "≤ 6×"),
        ("fail", "decide", "failure", "LLMFailed | LLMUnavailable"),
    ]
    printed = _mcec("graph", "examples/research/research.mce", "--pipeline", "react")
    assert printed.returncode == 0, printed.stderr
    assert '[/"decide<br/>Turn -#62; AddArgs #124; Answer #124; SearchArgs ! LLMFailed #124; LLMUnavailable"/]' in printed.stdout


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
    run = _mcec("graph", "examples/meta/meta.mce", "--pipeline", "research")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("flowchart TD\n")
    assert "pipeline research" in run.stdout and "pipeline solve" not in run.stdout


def test_cli_unknown_pipeline_and_broken_spec(tmp_path: Path) -> None:
    run = _mcec("graph", "examples/meta/meta.mce", "--pipeline", "nope")
    assert run.returncode == 2
    assert "no pipeline named `nope`" in run.stderr and "research, statistics, solve" in run.stderr
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


# ---------------------------------------------------------------- v2 control flow (issue 21)
#
# cases/graph/control.mce as the checker types it (its Python side is m.py).

CONTROL = CASES / "control.mce"


def _control_program() -> t.Program:
    result = check_source(SourceFile(str(CONTROL.relative_to(ROOT)), CONTROL.read_text(encoding="utf-8")))
    assert result.program is not None and not result.diagnostics, result.diagnostics
    return result.program


def _control_graph(pipeline: str | None = None) -> Graph:
    return build_graph(_control_program(), pipeline)


def test_the_control_spec_is_v2_syntax_in_canonical_layout() -> None:
    """The control-flow spec is kept in canonical layout."""
    text = CONTROL.read_text(encoding="utf-8")
    assert format_text(text) == text


def test_golden_control_flow(golden) -> None:  # type: ignore[no-untyped-def]
    graph = _control_graph()
    golden(CASES / "control.mmd", to_mermaid(graph))
    golden(CASES / "control.dot", to_dot(graph))
    assert to_dot(_control_graph()) == to_dot(graph)  # deterministic


def _labelled(pipeline: PipelineGraph) -> tuple[dict[str, Node], dict[str, Cluster], list[tuple[str, str, str, str | None]]]:
    """The pipeline's nodes and inner boxes by id, and its edges as (kind, source, target, label),
    each end named by its node's first line or its box's title."""
    nodes: dict[str, Node] = {}
    boxes: dict[str, Cluster] = {}
    stack = [pipeline.box]
    while stack:
        box = stack.pop()
        nodes.update((n.id, n) for n in box.nodes)
        boxes.update((b.id, b) for b in box.clusters)
        stack.extend(box.clusters)

    def name(end: str) -> str:
        return nodes[end].lines[0] if end in nodes else boxes[end].title

    edges = [(e.kind, name(e.source), name(e.target), e.label) for e in pipeline.edges]
    return nodes, boxes, edges


def test_a_loop_goes_back_to_its_start_and_a_match_has_one_edge_per_arm() -> None:
    (react,) = _control_graph("react").pipelines
    nodes, boxes, edges = _labelled(react)
    decisions = [n.lines for n in nodes.values() if n.kind == "decision"]
    assert decisions == [
        ("match", "Answer | CalcArgs | SearchArgs -> Answer | Turn ! Timeout | E"),
        ("loop", "again on Turn"),
    ]
    assert ("flow", "match", "done", "Answer") in edges
    assert ("flow", "match", "search", "SearchArgs") in edges
    assert ("flow", "match", "calc", "CalcArgs") in edges
    # every arm's end leads to the loop's decision, which goes back (≤ 8×) or leaves
    assert {(s, tgt) for k, s, tgt, _ in edges if tgt == "loop"} == {("done", "loop"), ("observe", "loop")}
    assert [(k, s, tgt, label) for k, s, tgt, label in edges if k == "loop"] == [("loop", "loop", "decide", "≤ 8×")]
    assert ("flow", "loop", "output: Answer", None) in edges
    assert sorted(b.title for b in boxes.values()) == ["retry ×3 on E", "timeout 10 s"]
    fails = sorted((s, label) for k, s, _, label in edges if k == "fail")
    assert fails == [("decide", "E"), ("loop", "LoopExhausted"), ("search", "E"), ("timeout 10 s", "Timeout")]


def test_an_if_runs_its_condition_then_decides() -> None:
    (branch,) = _control_graph("branch").pipelines
    _, boxes, edges = _labelled(branch)
    assert [e for e in edges if e[0] == "flow"] == [
        ("flow", "input: Turn", "is_final", None),
        ("flow", "is_final", "if", None),
        ("flow", "if", "conclude", "then"),
        ("flow", "if", "think", "else"),
        ("flow", "conclude", "output: str", None),
        ("flow", "think", "summarise", None),
        ("flow", "summarise", "output: str", None),
    ]
    assert [b.title for b in boxes.values()] == ["retry ×2, backoff 0 s"]


def test_literal_and_wildcard_patterns_label_their_arms_as_written() -> None:
    (by_kind,) = _control_graph("by_kind").pipelines
    _, _, edges = _labelled(by_kind)
    assert [(tgt, label) for _, s, tgt, label in edges if s == "match"] == [("say", '"search"'), ("count", "0"), ("other", "_")]
    mermaid = to_mermaid(_control_graph("by_kind"))
    assert '|"#34;search#34;"|' in mermaid and '|"_"|' in mermaid


def test_a_timeout_fails_as_a_box_and_its_timeout_can_be_caught() -> None:
    graph = _control_graph("patient")
    (patient,) = graph.pipelines
    _, boxes, edges = _labelled(patient)
    (box_id,) = boxes
    assert ("recover", "timeout 2.5 s", "give_up", "Timeout") in edges
    assert sorted((s, label) for k, s, _, label in edges if k == "fail") == [("think", "E")]
    # Mermaid links the subgraph itself; DOT, which cannot, clips an edge from its first node at its border
    assert f'    {box_id} -.->|"Timeout"| ' in to_mermaid(graph)
    dot = to_dot(graph)
    assert "compound=true" in dot and f"ltail=cluster_{box_id}" in dot
    assert "compound=true" not in to_dot(_graph(SPECS["shapes"]))  # only where a box has an edge of its own


def test_a_literal_pattern_cannot_inject_structure() -> None:
    evil = 'x"]\nclick p0_1 "javascript:alert(1)" %% <b>|;{}\\'
    program = _control_program()
    source = program.pipelines[0].span.source
    nowhere = Span(source, 0, 0)
    text = Builtin("str")
    say = t.TRef("say", t.RefKind.FN, t.Sig(text, text, frozenset(), False), nowhere)

    def graph(literal: str) -> Graph:
        arms = (t.TArm(t.PLiteral(literal), say, text, nowhere), t.TArm(t.PWildcard(), say, text, nowhere))
        pipeline = t.TPipeline("p", say.sig, t.TMatch(arms, say.sig, nowhere), nowhere)
        others = tuple(decl for decl in program.decls if not isinstance(decl, t.TPipeline))
        return build_graph(dataclasses.replace(program, decls=(*others, pipeline)))

    mermaid = to_mermaid(graph(evil))
    assert len(mermaid.splitlines()) == len(to_mermaid(graph("x")).splitlines())  # nothing injected
    assert not any(line.strip().startswith("click") for line in mermaid.splitlines())
    assert all(line.count('"') % 2 == 0 for line in mermaid.splitlines())
    assert "<b>" not in mermaid and "%%" not in mermaid
    for line in to_dot(graph(evil)).splitlines():
        assert line.replace("\\\\", "").replace('\\"', "").count('"') % 2 == 0, line


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_renders_the_control_flow_picture() -> None:
    svg = to_svg(_control_graph())
    assert "<svg" in svg and "timeout 10 s" in svg and "≤ 8×" in svg and "retry ×3 on E" in svg


# ---------------------------------------------------------------- plans (issue 23, §12)
#
# A plan over tests/plans/planbox/box.mce's toolbox `research`, checked as `spawn` checks it.

BOX = ROOT / "tests" / "plans" / "planbox" / "box.mce"
PLAN = "split >>= each(limit=2) (look_up orelse slow) >>= join >>= shout"


def _plan_graph(text: str) -> Graph:
    from mcec import syntax
    from mcec.plans.check import check_plan, plan_scopes
    from mcec.check.pyindex import PythonIndex
    from mcec.plans.engine import plan_file
    from mcec.tools.graph import build_plan_graph

    source = SourceFile(str(BOX.relative_to(ROOT)), BOX.read_text(encoding="utf-8"))
    parsed = syntax.parse(source)
    assert parsed.module is not None
    scopes, _ = plan_scopes(parsed.module, source, PythonIndex.for_directory(spec=BOX))  # from any cwd
    scope = scopes["research"]
    checked = check_plan(scope, SourceFile(plan_file("research"), text))
    assert checked.body is not None and not checked.diagnostics, checked.diagnostics
    return build_plan_graph(scope.program, scope.toolbox, checked.body)


def test_golden_plan(golden) -> None:  # type: ignore[no-untyped-def]
    graph = _plan_graph(PLAN)
    golden(CASES / "plan.mmd", to_mermaid(graph))
    golden(CASES / "plan.dot", to_dot(graph))
    assert to_mermaid(_plan_graph(PLAN)) == to_mermaid(graph)  # deterministic


def test_a_plan_is_drawn_as_the_pipeline_it_runs_as() -> None:
    """One box titled with the toolbox's type; its input and output are the toolbox's, its
    failure node the errors the plan itself may fail with (here Bad only, from `shout`)."""
    (plan,) = _plan_graph("look_up orelse shout").pipelines
    assert plan.name == "plan"
    assert plan.box.title == "plan over toolbox research : str -> str ! MergeConflict | Bad"
    nodes, boxes, edges = _labelled(plan)
    assert not boxes
    assert [n.lines[0] for n in nodes.values() if n.kind in ("input", "output", "failure")] == [
        "input: str",
        "output: str",
        "failure: Bad",
    ]
    assert ("recover", "look_up", "shout", "Bad") in edges and ("fail", "shout", "failure: Bad", "Bad") in edges
