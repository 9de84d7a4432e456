"""``stream llm`` end to end (docs/language.md §14): the syntax, the partial types the compiler
generates (tests/codegen/cases/stream.mce, whose golden module shows them), compiled and
interpreted runs streaming alike over real HTTP (tests/llm_server.py), the graph, and
``mcec run --stream``."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentmonad import Ok
from agentmonad.events import Event, PartialOutput, TextDelta
from agentmonad.llm import llm_config
from agentmonad.observe import observe
from flowbox import Chat, Cite, Report, Turn
from llm_server import LLMServer, Streamed, llm_server  # noqa: F401  (the fixture)
from mcec import syntax as s
from mcec.check.pyindex import PythonIndex
from mcec.check.types import NONE, STR, ClassRef, Generic, Lit, union
from mcec.compiler import compile_source
from mcec.run.changes import apply
from mcec.run.interpret import interpret
from mcec.run.runner import load_module
from mcec.span import SourceFile
from mcec.syntax import parse
from mcec.tools.fmt import format_text
from mcec.tools.graph import build_graph, to_mermaid

TESTS = Path(__file__).resolve().parent
SPEC = TESTS / "codegen" / "cases" / "stream.mce"
REPORT = Report(title="Paris", verdict="yes", cites=[Cite(url="https://a.example", note="a note")], scores={"a": 0.5})


# ---------------------------------------------------------------- syntax


def decls(text: str) -> list[s.Decl]:
    parsed = parse(SourceFile("t.mce", text))
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics
    return list(parsed.module.decls)


def test_stream_before_llm_declares_a_streaming_step_and_stays_a_soft_word() -> None:
    streamed, plain, named, step = decls(
        'stream llm a : T -> str = fast "x"\n'
        'llm b : T -> str = fast "x"\n'
        'llm stream : T -> str = fast "x"\n'
        "step streamed : T -> T = impl.stream\n"
    )
    assert isinstance(streamed, s.LlmDecl) and streamed.stream and streamed.span.start == 0
    assert isinstance(plain, s.LlmDecl) and not plain.stream
    assert isinstance(named, s.LlmDecl) and named.name.text == "stream" and not named.stream
    assert isinstance(step, s.StepDecl)


def test_stream_without_llm_is_a_syntax_error_that_says_what_follows() -> None:
    parsed = parse(SourceFile("t.mce", 'stream step a : T -> T = impl.a\n'))
    assert parsed.module is None
    assert parsed.diagnostics[0].message == "expected `llm` after `stream`, found `step`"


def test_fmt_keeps_stream_and_lays_it_out() -> None:
    assert format_text('stream    llm a : T -> str = fast "x"\n') == 'stream llm a : T -> str = fast "x"\n'


def test_graph_draws_a_streaming_step_saying_so() -> None:
    program = _compiled()[0]
    drawn = to_mermaid(build_graph(program, "study"))
    assert "report (streams)" in drawn and "streams" not in to_mermaid(build_graph(program, "unstreamed"))


# ---------------------------------------------------------------- what the partial types are made of


def test_record_fields_are_read_through_the_bases_with_their_types() -> None:
    index = PythonIndex([TESTS])
    report = ClassRef("flowbox.Report", "Report")
    assert index.record_fields("flowbox.Report") == tuple(
        _field(name, tp, default)
        for name, tp, default in [
            ("title", STR, False),
            ("verdict", union([Lit("yes"), Lit("no")]), False),
            ("cites", Generic("list", (ClassRef("flowbox.Cite", "Cite"),)), False),
            ("scores", Generic("dict", (STR, union([_float()]))), True),
        ]
    )
    brief = index.record_fields("flowbox.Brief")
    assert brief is not None and [(f.name, f.type) for f in brief] == [("text", STR), ("lead", union([report, NONE]))]
    assert index.record_fields("flowbox.Flaky") is None  # an exception is no record


def _field(name: str, tp: Any, default: bool) -> Any:
    from mcec.check.pyindex import PyField

    return PyField(name, tp, default)


def _float() -> Any:
    from mcec.check.types import Builtin

    return Builtin("float")


# ---------------------------------------------------------------- compiled and interpreted runs


def _compiled() -> tuple[Any, Any]:
    result = compile_source(SourceFile(SPEC.name, SPEC.read_text(encoding="utf-8")))
    assert result.program is not None and result.generated is not None, result.diagnostics
    return result.program, load_module(result.program, result.generated)


def _observed(server: LLMServer, run: Any) -> tuple[list[Event], Any]:
    async def main() -> tuple[list[Event], Any]:
        with llm_config(server.config()):
            run_events = observe(run)
            seen = [event async for event in run_events]
        return seen, run_events.outcome

    return asyncio.run(main())


def test_the_generated_partial_types_have_every_field_optional() -> None:
    _, module = _compiled()
    assert module.ReportPartial() == module.ReportPartial(title=None, verdict=None, cites=None, scores=None)
    assert list(module.BriefPartial.model_fields) == ["text", "lead"]  # the base's field first
    held = module.BriefPartial.model_validate({"lead": {"cites": [{"url": "u"}]}})
    assert isinstance(held.lead, module.ReportPartial) and isinstance(held.lead.cites[0], module.CitePartial)


def test_a_structured_answer_streams_the_generated_partials_compiled_and_interpreted_alike(llm_server: LLMServer) -> None:
    program, module = _compiled()
    runs = {
        "compiled": lambda: module.study(Chat(), Turn("Paris")),
        "interpreted": lambda: interpret(program, "study", Chat(), Turn("Paris")),
    }
    seen: dict[str, list[Any]] = {}
    for how, run in runs.items():
        llm_server.script(REPORT.model_dump_json())
        events, outcome = _observed(llm_server, run)
        assert outcome == Ok(REPORT, Chat()), how
        seen[how] = [e for e in events if isinstance(e, PartialOutput)]
    compiled, interpreted = seen["compiled"], seen["interpreted"]
    assert len(compiled) > 5 and all(type(e.value) is module.ReportPartial for e in compiled)
    assert isinstance(compiled[-1].value.cites[0], module.CitePartial)
    assert compiled[-1].value.model_dump() == REPORT.model_dump()
    # the interpreter makes the same partial types at run time: same names, same values
    assert [type(e.value).__name__ for e in interpreted] == [type(e.value).__name__ for e in compiled]
    assert [e.value.model_dump() for e in interpreted] == [e.value.model_dump() for e in compiled]
    # a partial is attributed to the model call at its .mce site: compiled and interpreted runs
    # both reach the model through the effect seam
    for events in (compiled, interpreted):
        effect = events[0].effect
        assert effect is not None and effect.kind == "model" and effect.site is not None
        assert (effect.site.step, effect.site.line) == ("report", 16)
        assert {e.effect for e in events} == {effect}


def test_a_text_answer_streams_compiled_and_interpreted_alike(llm_server: LLMServer) -> None:
    program, module = _compiled()
    for run in (lambda: module.write(Chat(), Turn("Paris")), lambda: interpret(program, "write", Chat(), Turn("Paris"))):
        llm_server.script(Streamed("Paris is lovely.", pieces=("Paris", " is", " lovely.")))
        events, outcome = _observed(llm_server, run)
        assert outcome == Ok("Paris is lovely.", Chat())
        deltas = [e for e in events if isinstance(e, TextDelta)]
        assert [e.text for e in deltas] == ["Paris", " is", " lovely."]
        sites = {e.effect.site for e in deltas if e.effect is not None}
        assert [(site.step, site.line) for site in sites] == [("draft", 15)]


def test_a_step_not_declared_streaming_does_not_stream(llm_server: LLMServer) -> None:
    _, module = _compiled()
    llm_server.script(REPORT.model_dump_json())
    events, outcome = _observed(llm_server, lambda: module.unstreamed(Chat(), Turn("Paris")))
    assert outcome == Ok(REPORT, Chat())
    assert not [e for e in events if isinstance(e, PartialOutput | TextDelta)]
    assert "stream" not in llm_server.requests[0].body


# ---------------------------------------------------------------- mcec run --stream


def mcec_run(server: LLMServer, pipeline: str, *options: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(TESTS), "OPENAI_API_KEY": "sk-test"}
    return subprocess.run(
        [sys.executable, "-m", "mcec", "run", str(SPEC), pipeline, "--input", '{"text": "Paris"}',
         "--model", f"fast=test-model@{server.url}", *options],
        capture_output=True, text=True, timeout=120, env=environment, check=False,
    )


def test_mcec_run_stream_prints_the_text_then_the_outcome(llm_server: LLMServer) -> None:
    llm_server.script("Paris is the capital of France.")
    done = mcec_run(llm_server, "write", "--stream")
    assert done.returncode == 0, done.stderr
    streamed, _, report = done.stdout.partition("\n")
    assert streamed == "Paris is the capital of France."
    assert json.loads(report)["value"] == "Paris is the capital of France."


def test_mcec_run_trace_of_a_long_streamed_answer_takes_memory_linear_in_it(llm_server: LLMServer, tmp_path: Path) -> None:
    """Issue 47: each partial holds the whole answer so far, and the timeline of ``--trace`` kept
    every one (a 100 KB answer in pieces of 8 characters: 0.7 GB resident, 2.5 GB for 200 KB).
    It keeps the last; the peak resident memory of the real ``mcec run`` process is measured."""
    llm_server.chunk_size = 8
    answer = Report(title="x" * 100_000, verdict="yes", cites=[Cite(url="https://a.example")])
    llm_server.script(answer.model_dump_json())
    environment = {**os.environ, "PYTHONPATH": str(TESTS), "OPENAI_API_KEY": "sk-test"}
    # A child forked from this test process (an xdist worker that may have grown past 1 GB after
    # hundreds of tests) starts with the worker's pages resident, and its peak counts them: the
    # `mcec run` is started by a small launcher of its own, which reports the peak of just it.
    launcher = ("import json, os, subprocess, sys\n"
                "child = subprocess.Popen(sys.argv[1:], stdout=open(os.environ['OUT'], 'w'), stderr=open(os.environ['ERR'], 'w'))\n"
                "_, status, usage = os.wait4(child.pid, 0)\n"
                "print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss]))\n")
    measured = subprocess.run(
        [sys.executable, "-c", launcher, sys.executable, "-m", "mcec", "run", str(SPEC), "study", "--input",
         '{"text": "Paris"}', "--model", f"fast=test-model@{llm_server.url}", "--trace"],
        capture_output=True, text=True, timeout=300,
        env={**environment, "OUT": str(tmp_path / "out"), "ERR": str(tmp_path / "err")},
    )
    returncode, peak_kb = json.loads(measured.stdout)
    assert returncode == 0, (tmp_path / "err").read_text()
    assert json.loads((tmp_path / "out").read_text())["value"] == answer.model_dump()
    assert "report  model stream.mce" in (tmp_path / "err").read_text()
    assert len(llm_server.requests) == 1 and llm_server.requests[0].body["stream"] is True
    resident_mb = peak_kb / 1024  # kilobytes on Linux
    assert resident_mb < 300, f"mcec run --trace peaked at {resident_mb:.0f} MB"


def mcec_run_here(capsys: pytest.CaptureFixture[str], spec: Path, server: LLMServer, pipeline: str, *options: str) -> tuple[int, str, str]:
    """``mcec run`` in this process (the subprocess test above covers the real process)."""
    from mcec.cli import main

    capsys.readouterr()
    status = main(["run", str(spec), pipeline, "--input", '{"text": "Paris"}',
                   "--model", f"fast=test-model@{server.url}", *options])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_mcec_run_stream_prints_partials_as_json_lines(
    llm_server: LLMServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    llm_server.script(REPORT.model_dump_json())
    status, out, err = mcec_run_here(capsys, SPEC, llm_server, "study", "--stream")
    assert status == 0, err
    partials, outcome = streamed_partials(out)
    assert len(partials) > 5 and partials[0] == {"title": None, "verdict": None, "cites": None, "scores": None}
    assert partials[-1] == REPORT.model_dump()
    assert {partial["title"] for partial in partials} >= {None, "Pa", "Paris"}  # a string shown as it arrives
    assert outcome["value"] == REPORT.model_dump()


def streamed_partials(out: str) -> tuple[list[Any], Any]:
    """The partials ``mcec run --stream`` printed (one JSON line a change: applied in order),
    and the Outcome JSON after them."""
    lines = out.splitlines()
    start = lines.index("{")  # the Outcome JSON, pretty-printed, after the partials
    partials: list[Any] = []
    for line in lines[:start]:
        change = json.loads(line)
        assert set(change) in ({"path", "set"}, {"path", "append"}), change
        partials.append(apply(copy.deepcopy(partials[-1]) if partials else None, change))
    return partials, json.loads("\n".join(lines[start:]))


def test_mcec_run_stream_prints_output_linear_in_the_answer(
    llm_server: LLMServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 47: each partial holds the whole answer so far; printing each whole printed the
    answer once per piece (a 10 KB answer in pieces of 8: about 6 MB)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    llm_server.chunk_size = 8
    answer = Report(title="Paris " * 2_000, verdict="no", cites=[Cite(url=f"https://{n}.example") for n in range(20)])
    llm_server.script(answer.model_dump_json())
    status, out, err = mcec_run_here(capsys, SPEC, llm_server, "study", "--stream")
    assert status == 0, err
    printed = out[: out.index("\n{\n") + 1]
    # a line a piece of 8 characters, its path and the piece: about 4 times the answer (before: 500)
    assert len(printed) < 10 * len(answer.model_dump_json()), f"{len(printed):,} characters printed"
    partials, outcome = streamed_partials(out)
    assert partials[-1] == outcome["value"] == answer.model_dump()
    assert len(partials) > 1_000  # a change a piece, near enough


def test_mcec_run_interpret_stream_prints_what_the_compiled_run_prints(
    llm_server: LLMServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    printed = []
    for how in ((), ("--interpret",)):
        llm_server.script(REPORT.model_dump_json())
        status, out, err = mcec_run_here(capsys, SPEC, llm_server, "study", "--stream", *how)
        assert status == 0, err
        printed.append(out)
    assert printed[0] == printed[1] and printed[0].count("\n{") >= 1


def test_mcec_run_stream_says_when_nothing_streams(
    llm_server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    spec = tmp_path / "plain.mce"
    spec.write_text(
        'from flowbox import Turn\nmodel fast = openai "m"\nllm say : Turn -> str = fast "Say {{ text }}"\n'
        "pipeline p : Turn -> str ! LLMFailed | LLMUnavailable = say;\n",
        encoding="utf-8",
    )
    llm_server.script("hi")
    status, out, err = mcec_run_here(capsys, spec, llm_server, "p", "--stream")
    assert status == 0, err
    assert "no llm step of the spec is declared `stream llm`" in err
    assert json.loads(out)["value"] == "hi"


# ---------------------------------------------------------------- mcec run --durable --stream

#: A streamed draft a person approves: the run streams the draft, then waits for the answer.
PUBLISH = """\
from flowbox import Chat, Turn

state Chat

model fast = openai "gpt-4o-mini"
stream llm draft : Turn -> str = fast "Write about {{ text }}"
stream llm title : str -> str = fast "Title for {{ value }}"
ask approve : str -> str

pipeline publish : Turn -> str ! LLMFailed | LLMUnavailable | NoOneToAsk | NoAnswer | BadAnswer = draft >>= approve >>= title;
"""


def mcec_in(folder: Path, server: LLMServer, *args: str) -> subprocess.CompletedProcess[str]:
    """``mcec ARGS`` as a process of its own in ``folder``, its model the test server."""
    environment = {**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{TESTS.parent}", "OPENAI_API_KEY": "sk-test"}
    environment.pop("MCEC_DB", None)
    return subprocess.run([sys.executable, "-m", "mcec", *args], capture_output=True, text=True, timeout=120,
                          env=environment, cwd=folder, check=False)


def test_a_durable_run_streams_its_answers_and_a_resume_streams_what_it_asks_the_model_anew(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    spec = tmp_path / "publish.mce"
    spec.write_text(PUBLISH, encoding="utf-8")
    run = ("run", str(spec), "publish", "--input", '{"text": "Paris"}', "--model", f"fast=test-model@{llm_server.url}",
           "--durable", "--run-id", "p1", "--db", "runs.sqlite", "--stream")
    llm_server.script("Paris is the capital of France.")
    first = mcec_in(tmp_path, llm_server, *run)
    assert first.returncode == 0, first.stderr
    streamed, _, report = first.stdout.partition("\n")
    assert streamed == "Paris is the capital of France."  # streamed as it arrived, then the Outcome
    waiting = json.loads(report)
    assert (waiting["status"], waiting["run_id"]) == ("waiting", "p1")
    assert [q["question"] for q in waiting["questions"]] == ["Paris is the capital of France."]
    # run again, it resumes: the draft's answer is the recorded one, told whole (its partials were never recorded)
    again = mcec_in(tmp_path, llm_server, *run)
    assert again.returncode == 0, again.stderr
    streamed, _, report = again.stdout.partition("\n")
    assert streamed == "Paris is the capital of France." and json.loads(report)["status"] == "waiting"
    assert len(llm_server.requests) == 1  # the model was asked once
    llm_server.script("A Capital")
    answered = mcec_in(tmp_path, llm_server, "runs", "answer", "p1", "approve", "--value", '"Paris, published"',
                       "--db", "runs.sqlite")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["value"] == "A Capital" and len(llm_server.requests) == 2
    # a finished run gives its recorded outcome: nothing runs, nothing streams
    ended = mcec_in(tmp_path, llm_server, *run)
    assert ended.returncode == 0 and json.loads(ended.stdout)["value"] == "A Capital", ended.stderr


@pytest.mark.parametrize("how", [(), ("--interpret",)], ids=["compiled", "interpreted"])
def test_a_durable_run_streams_a_structured_answer_as_partials_and_replays_it_whole(
    llm_server: LLMServer, tmp_path: Path, how: tuple[str, ...]
) -> None:
    spec = tmp_path / "study.mce"
    spec.write_text(SPEC.read_text(encoding="utf-8").replace(
        "pipeline study : Turn -> Report ! LLMFailed | LLMUnavailable = report;",
        "ask check : Report -> bool\n"
        "pipeline study : Turn -> bool ! LLMFailed | LLMUnavailable | NoOneToAsk | NoAnswer | BadAnswer = report >>= check;"),
        encoding="utf-8")
    run = ("run", str(spec), "study", "--input", '{"text": "Paris"}', "--model", f"fast=test-model@{llm_server.url}",
           "--durable", "--run-id", "s1", "--db", "runs.sqlite", "--stream", *how)
    llm_server.script(REPORT.model_dump_json())
    first = mcec_in(tmp_path, llm_server, *run)
    assert first.returncode == 0, first.stderr
    partials, outcome = streamed_partials(first.stdout)
    assert len(partials) > 5 and partials[0] == {"title": None, "verdict": None, "cites": None, "scores": None}
    assert partials[-1] == REPORT.model_dump()
    assert outcome["status"] == "waiting"
    again = mcec_in(tmp_path, llm_server, *run)  # resumed: the recorded answer, as one partial
    assert streamed_partials(again.stdout)[0] == [REPORT.model_dump()], again.stderr
    assert len(llm_server.requests) == 1


def test_a_queued_durable_run_is_not_streamed_here(llm_server: LLMServer, tmp_path: Path) -> None:
    done = mcec_in(tmp_path, llm_server, "run", str(SPEC), "write", "--input", '{"text": "Paris"}', "--durable",
                   "--queue", "default", "--stream", "--db", "runs.sqlite")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("mcec run: --stream does not go with --queue: a worker runs the run, and its answers stream "
                           "there (run it here, without --queue, to stream it)\n")
