"""LLM steps without a network: templates, output types, scripted models, errors, budgets.

The scripted models of ``agentmonad.testing`` are backends like the real one,
so these tests see the same requests a real endpoint would; the HTTP path
itself is covered by ``test_llm_http.py``.
"""

from __future__ import annotations

import keyword

import asyncio
import doctest
import importlib
import json
import pickle
import subprocess
import sys
import textwrap
import typing
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ForwardRef, Literal, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, computed_field

import agentmonad
from agentmonad import Defect, Err, Ok
from agentmonad.llm import (
    BudgetExceeded,
    LLMConfig,
    LLMFailed,
    LLMFailedKind,
    LLMRequest,
    LLMUnavailable,
    LLMUnavailableKind,
    Model,
    ModelSettings,
    Prompt,
    PromptError,
    Secret,
    budget,
    current_usage,
    llm_config,
    llm_scope,
    llm_step,
    output_problem,
    record_usage,
    template_variables,
    usage,
)
from agentmonad.llm.options import parse_model_option
from agentmonad.testing import (
    FunctionModel,
    ScriptedModel,
    ScriptExhausted,
    TestModel,
    hangup,
    refusal,
    replies_from_json,
    sample,
    status,
    text,
    tool_call,
    use_models,
)

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


class Answer(BaseModel):
    text: str


class SearchArgs(BaseModel):
    query: str
    limit: int = 5


@dataclass
class CalcArgs:
    expression: str


class Ticket(BaseModel):
    subject: str
    body: str = ""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def shout(self) -> str:
        return self.subject.upper()


@dataclass(frozen=True)
class Chat:
    turns: int = 0
    log: list[str] = field(default_factory=list)


class Color(BaseModel):
    name: Literal["red", "green"]
    shade: int


FAST = Model("fast", "gpt-4o-mini")  # no endpoint anywhere: every test here replaces it


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# ---------------------------------------------------------------- templates


def test_template_variables_are_the_input_fields_and_state() -> None:
    p = Prompt("{{ subject }}|{{ body }}|{{ shout }}|{{ state.turns }}", "<t>")
    assert p.render(Ticket(subject="hi", body="b"), Chat(2)) == "hi|b|HI|2"
    assert Prompt("{{ expression }}", "<t>").render(CalcArgs("1+1"), None) == "1+1"
    assert Prompt("{{ value }} and {{ value | length }}", "<t>").render([1, 2], None) == "[1, 2] and 2"
    assert Prompt("{% for n in value %}- {{ n }}\n{% endfor %}", "<t>").render(["a", "b"], None) == "- a\n- b\n"


def test_a_missing_variable_is_an_error_with_its_line() -> None:
    p = Prompt("Subject: {{ subject }}\nFrom: {{ sender }}", "ticket.j2")
    with pytest.raises(PromptError) as info:
        p.render(Ticket(subject="x"), None)
    assert (info.value.template, info.value.line) == ("ticket.j2", 2)
    assert "'sender' is undefined" in str(info.value)
    with pytest.raises(PromptError, match="has no attribute 'missing'"):
        Prompt("{{ state.missing }}", "<t>").render("v", Chat())


def test_state_is_read_only() -> None:
    state = Chat(log=["a"])
    with pytest.raises(PromptError, match="unsafe"):
        Prompt("{{ state.log.append('b') }}", "<t>").render("v", state)
    with pytest.raises(PromptError, match="unsafe"):
        Prompt("{{ state.__class__ }}", "<t>").render("v", state)
    assert state.log == ["a"]


def test_a_syntax_error_is_found_when_the_step_is_built() -> None:
    with pytest.raises(PromptError) as info:
        llm_step(FAST, "line one\n{% for x in y %}\n{{ x }", str, name="bad", template_name="bad.j2")
    assert (info.value.template, info.value.line) == ("bad.j2", 3)


def test_template_variables_for_the_checker() -> None:
    info = template_variables("{% set greeting = 'hi' %}{{ greeting }} {{ name }}{% for n in notes %}{{ n }}{{ loop.index }}{% endfor %}{{ range(3) | list }}{{ state.turns }}")
    assert info.variables == {"name", "notes", "state"} and info.error is None
    bad = template_variables("ok\n\n{{ name ")
    assert bad.variables == frozenset() and bad.line == 3 and bad.error


NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)  # the test builds a dataclass with these fields
    and n not in {"range", "dict", "lipsum", "cycler", "joiner", "namespace", "loop", "self", "true", "false", "none", "and", "or", "not", "in", "is", "if", "else", "for", "true", "varargs", "kwargs", "caller"}
)


@settings(max_examples=60, deadline=None)
@given(st.lists(NAMES, min_size=0, max_size=6))
def test_template_variables_finds_every_variable(names: list[str]) -> None:
    source = " ".join(f"{{{{ {n} }}}}" for n in names)
    assert template_variables(source).variables == set(names)
    values = {n: f"<{n}>" for n in names}
    if "state" not in values and "value" not in values:
        # a dataclass with those fields renders each one
        cls = dataclasses_of(names)
        assert Prompt(source, "<t>").render(cls(**values), None) == " ".join(f"<{n}>" for n in names)


def dataclasses_of(names: list[str]) -> Any:
    import dataclasses

    return dataclasses.make_dataclass("Input", sorted(set(names)))


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="{}%#", blacklist_categories=("Cs",))))
def test_text_without_jinja_syntax_renders_as_written(source: str) -> None:
    rendered = Prompt(source, "<t>").render("v", None)
    normal = source.replace("\r\n", "\n").replace("\r", "\n")  # Jinja2's newline handling
    assert rendered == (normal[:-1] if normal.endswith("\n") else normal)


# ---------------------------------------------------------------- output types


SUPPORTED: list[Any] = [
    str, Answer, CalcArgs, Answer | SearchArgs, Answer | CalcArgs | str, Literal["a", "b"], Literal[1, 2],
    int, float, bool, list[str], dict[str, int], tuple[int, str], list[Answer], int | None, dict[str, Any],
    typing.Annotated[str, "doc"], ForwardRef("impl.Answer"), typing.Union[ForwardRef("a.X"), ForwardRef("a.Y"), str],
]
UNSUPPORTED: list[tuple[Any, str]] = [
    (bytes, "bytes"),
    (list[bytes], "bytes"),
    (Any, "Any"),
    (None, "None"),
    (type(None), "None"),
    (object, "object"),
    (typing.Never, "Never"),
    (Answer | int, "mixes classes with int"),
    (Answer | None, "mixes classes with None"),
    (dict[int, str], "dict keys must be str"),
    (typing.Union[ForwardRef("a.Answer"), ForwardRef("b.Answer")], "named 'Answer'"),
    (Exception, "not a pydantic model or dataclass"),
    (list[Exception], "not a pydantic model or dataclass"),
]


@pytest.mark.parametrize("tp", SUPPORTED, ids=repr)
def test_supported_output_types(tp: Any) -> None:
    assert output_problem(tp) is None


@pytest.mark.parametrize(("tp", "reason"), UNSUPPORTED, ids=lambda x: repr(x))
def test_unsupported_output_types_say_why(tp: Any, reason: str) -> None:
    problem = output_problem(tp)
    assert problem is not None and reason in problem
    with pytest.raises(TypeError, match="an LLM step cannot answer"):
        llm_step(FAST, "x", tp, name="s")


def test_a_step_needs_real_classes() -> None:
    with pytest.raises(TypeError, match="needs the real classes"):
        llm_step(FAST, "x", ForwardRef("impl.Answer"), name="s")


async def ask(step: Any, value: Any, backend: Any, state: Any = None) -> Any:
    async with llm_scope(LLMConfig(models={"fast": backend})):
        return await step(state, value)


@settings(max_examples=50, deadline=None)
@given(st.builds(SearchArgs, query=st.text(max_size=30), limit=st.integers(-10**12, 10**12)))
def test_any_valid_object_round_trips(value: SearchArgs) -> None:
    step = llm_step(FAST, "{{ value }}", SearchArgs, name="s")
    assert run(ask(step, "x", ScriptedModel([value.model_dump_json()]))) == Ok(value, None)


@settings(max_examples=50, deadline=None)
@given(st.one_of(st.builds(Answer, text=st.text(max_size=20)), st.builds(SearchArgs, query=st.text(max_size=20)), st.builds(CalcArgs, expression=st.text(max_size=20))))
def test_any_union_member_is_chosen_by_its_function(value: Any) -> None:
    step = llm_step(FAST, "{{ value }}", Answer | SearchArgs | CalcArgs, name="s")
    out = run(ask(step, "x", ScriptedModel([tool_call(type(value).__name__, value)])))
    assert out == Ok(value, None) and type(out.value) is type(value)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["billing", "hardware", 7]), st.sampled_from(["json", "wrapped", "bare"]))
def test_any_literal_value_in_any_form(value: Any, form: str) -> None:
    step = llm_step(FAST, "{{ value }}", Literal["billing", "hardware", 7], name="s")
    reply = {"json": json.dumps(value), "wrapped": json.dumps({"value": value}), "bare": str(value)}[form]
    assert run(ask(step, "x", ScriptedModel([reply]))) == Ok(value, None)


def test_a_value_not_in_the_literal_is_repaired_then_failed() -> None:
    step = llm_step(FAST, "{{ value }}", Literal["yes", "no"], name="s")
    model = ScriptedModel(["maybe", "perhaps", "dunno"])
    out = run(ask(step, "x", model))
    assert isinstance(out.error, LLMFailed) and out.error.raw == "dunno"
    assert "Input should be 'yes' or 'no'" in out.error.errors[0]
    assert [r.attempt for r in model.requests] == [1, 2, 3]


def test_text_output_rejects_a_function_call() -> None:
    step = llm_step(FAST, "{{ value }}", str, name="s")
    out = run(ask(step, "x", ScriptedModel([tool_call("X", {}), tool_call("X", {}), tool_call("X", {})])))
    assert isinstance(out.error, LLMFailed) and "not a function call" in out.error.reason


def test_a_reply_cut_off_says_so() -> None:
    step = llm_step(FAST, "{{ value }}", SearchArgs, name="s")
    cut = text('{"query": "unfinish', finish_reason="length")
    out = run(ask(step, "x", ScriptedModel([cut, cut, cut])))
    assert isinstance(out.error, LLMFailed) and "cut off at the token limit" in out.error.reason


def test_a_content_filter_stop_is_a_refusal() -> None:
    step = llm_step(FAST, "{{ value }}", str, name="s")
    out = run(ask(step, "x", ScriptedModel([text("", finish_reason="content_filter")])))
    assert isinstance(out.error, LLMFailed) and out.error.kind is LLMFailedKind.REFUSED


# ---------------------------------------------------------------- scripted models


def test_scripted_replies_in_order_and_recorded_requests() -> None:
    step = llm_step(FAST, "Q: {{ value }}", Answer | SearchArgs, name="decide")
    model = ScriptedModel([tool_call("SearchArgs", {"query": "a"}), lambda request: tool_call("Answer", {"text": request.prompt})])

    async def two() -> list[Any]:
        async with llm_scope(LLMConfig(models={"fast": model})):
            return [await step(None, "one"), await step(None, "two")]

    assert run(two()) == [Ok(SearchArgs(query="a"), None), Ok(Answer(text="Q: two"), None)]
    request = model.requests[0]
    assert (request.model, request.model_id, request.step, request.attempt) == ("fast", "gpt-4o-mini", "decide", 1)
    assert request.tool_names == ("Answer", "SearchArgs") and request.tool_choice == "required"
    assert request.body()["tools"][0]["function"]["name"] == "Answer"
    assert model.remaining == 0


def test_an_exhausted_script_is_a_bug_not_an_error() -> None:
    step = llm_step(FAST, "{{ value }}", str, name="s")
    with pytest.raises(ScriptExhausted, match="no reply left for request 1"):
        run(ask(step, "x", ScriptedModel([])))


def test_a_function_model_sees_the_request_and_may_be_async() -> None:
    seen: list[LLMRequest] = []

    async def answer(request: LLMRequest) -> Any:
        seen.append(request)
        await asyncio.sleep(0)
        return '{"name": "red", "shade": 3}' if request.attempt == 2 else "{}"

    step = llm_step(FAST, "{{ value }}", Color, name="s")
    assert run(ask(step, "x", FunctionModel(answer))) == Ok(Color(name="red", shade=3), None)
    assert seen[0].response_format is not None and seen[0].response_format["json_schema"]["name"] == "Color"
    assert seen[1].messages[-1]["role"] == "user" and "name: Field required" in seen[1].prompt
    assert seen[0].rendered == seen[1].rendered == "x"  # the template as rendered, not the repair request


@pytest.mark.parametrize("tp", [str, Answer, CalcArgs, Color, Answer | SearchArgs, SearchArgs | str, Literal["a", "b"], list[int], dict[str, float], int | None, tuple[int, str]], ids=repr)
def test_the_test_model_answers_every_supported_type_validly(tp: Any) -> None:
    step = llm_step(FAST, "{{ value }}", tp, name="s")
    out = run(ask(step, "x", TestModel()))
    assert isinstance(out, Ok), out
    from pydantic import TypeAdapter

    TypeAdapter(tp).validate_python(out.value)


def test_the_test_model_can_pick_a_member() -> None:
    step = llm_step(FAST, "{{ value }}", Answer | SearchArgs, name="s")
    assert run(ask(step, "x", TestModel(call="SearchArgs"))) == Ok(SearchArgs(query="a", limit=5), None)


def test_scripted_statuses_and_hangups_are_unavailable() -> None:
    step = llm_step(FAST, "{{ value }}", str, name="s")
    outs = [run(ask(step, "x", ScriptedModel([reply]))) for reply in (status(429), status(502, "bad gateway"), status(401), hangup())]
    kinds = [o.error.kind for o in outs]
    assert kinds == [LLMUnavailableKind.RATE_LIMITED, LLMUnavailableKind.SERVER_ERROR, LLMUnavailableKind.REJECTED, LLMUnavailableKind.CONNECTION_FAILED]
    assert outs[1].error == LLMUnavailable("fast", "s", "HTTP 502: bad gateway", LLMUnavailableKind.SERVER_ERROR, 502)


def test_use_models_replaces_a_model_by_name_and_needs_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    slow = Model("slow", "gpt-big")
    a = llm_step(FAST, "{{ value }}", str, name="a")
    b = llm_step(slow, "{{ value }}", str, name="b")
    with use_models(fast=["from fast"], slow=lambda request: f"from {request.model_id}"):
        assert run(a(None, "x")) == Ok("from fast", None)
        assert run(b(None, "x")) == Ok("from gpt-big", None)
    with use_models({"*": TestModel(text="anything")}):
        assert run(b(None, "x")) == Ok("anything", None)
    out = run(a(None, "x"))  # no replacement any more, and no key
    assert isinstance(out.error, LLMUnavailable) and out.error.kind is LLMUnavailableKind.MISCONFIGURED


def test_configurations_layer_inner_over_outer() -> None:
    step = llm_step(FAST, "{{ value }}", SearchArgs, name="s")
    outer = LLMConfig(defaults=ModelSettings(max_repairs=0), models={"fast": ScriptedModel(["{}", '{"query": "q"}'])})
    with llm_config(outer):
        out = run(step(None, "x"))
        assert isinstance(out.error, LLMFailed)  # no repairs
        with llm_config(LLMConfig(models={"fast": ModelSettings(max_repairs=1)})):
            model = ScriptedModel(["{}", '{"query": "q"}'])
            with use_models(fast=model):
                assert run(step(None, "x")) == Ok(SearchArgs(query="q"), None)


def test_a_scripted_run_never_imports_openai() -> None:
    program = textwrap.dedent(
        """
        import asyncio, sys
        import agentmonad
        assert not any(m.split(".")[0] in ("openai", "jinja2") for m in sys.modules), "import agentmonad"
        from agentmonad.llm import Model, llm_step
        from agentmonad.testing import use_models
        step = llm_step(Model("fast", "gpt-4o-mini"), "{{ value }}", str, name="s")
        with use_models(fast=["hi"]):
            out = asyncio.run(step(None, "x"))
        assert out.value == "hi", out
        assert "openai" not in sys.modules
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_model_options_for_the_command_line(tmp_path: Path) -> None:
    assert parse_model_option("fast=gpt-4o") == ("fast", ModelSettings(model_id="gpt-4o"))
    name, entry = parse_model_option("*=test")
    assert name == "*" and isinstance(entry, TestModel)
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(["hello", {"tool": "SearchArgs", "arguments": {"query": "x"}, "usage": [3, 4]},
                                  {"refusal": "no"}, {"status": 503}, {"hangup": True}, {"text": "late", "delay": 0.01}]))
    name, entry = parse_model_option(f"fast=script:{script}")
    assert isinstance(entry, ScriptedModel) and entry.remaining == 6
    replies = replies_from_json(script)
    assert replies[1] == tool_call("SearchArgs", {"query": "x"}, usage=(3, 4)) and replies[2].refusal == "no"
    name, entry = parse_model_option("fast=py:agentmonad.testing:TestModel")
    assert isinstance(entry, TestModel)  # a backend class, made with no arguments
    name, entry = parse_model_option("fast=py:agentmonad.testing:estimate_tokens")
    assert isinstance(entry, FunctionModel)
    for bad in ("fast", "=x", "fast=", "fast=gpt@", "fast=py:nomodule"):
        with pytest.raises(ValueError):
            parse_model_option(bad)


def test_sample_follows_refs_and_constraints() -> None:
    class Inner(BaseModel):
        tag: Literal["x", "y"]

    class Outer(BaseModel):
        inner: Inner
        items: list[Inner]
        maybe: int | None = None

    value = sample(Outer.model_json_schema())
    assert Outer.model_validate(value) == Outer(inner=Inner(tag="x"), items=[])


# ---------------------------------------------------------------- errors


ERRORS = [
    LLMFailed("fast", "s", "bad", "raw", ("a: b",), LLMFailedKind.INVALID_OUTPUT),
    LLMUnavailable("fast", "s", "HTTP 429: x", LLMUnavailableKind.RATE_LIMITED, 429),
    BudgetExceeded(10, 12),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_errors_are_values(error: Exception) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert copy == error and hash(copy) == hash(error) and copy is not error
    assert repr(copy) == repr(error)
    assert error != Exception("bad")
    assert isinstance(error, Exception)
    assert getattr(agentmonad, type(error).__name__) is type(error)


def test_user_made_errors_have_an_unspecified_kind() -> None:
    assert LLMFailed("m", "s", "r").kind is LLMFailedKind.UNSPECIFIED
    assert LLMUnavailable("m", "s", "r").kind is LLMUnavailableKind.UNSPECIFIED
    assert LLMFailed("m", "s", "r") != LLMFailed("m", "s", "r", kind=LLMFailedKind.REFUSED)


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=20000), st.lists(st.text(max_size=2000), max_size=50))
def test_messages_are_bounded_whatever_the_reply(raw: str, errors: list[str]) -> None:
    error = LLMFailed("fast", "s", raw, raw, errors, LLMFailedKind.INVALID_OUTPUT)
    assert len(str(error)) < 1000 and len(repr(error)) < 5000
    other = LLMUnavailable("fast", "s", raw)
    assert len(str(other)) < 1000 and len(repr(other)) < 2000


def test_an_unprintable_field_does_not_break_a_message() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no")

        __str__ = __repr__

    error = LLMFailed(Bad(), "s", Bad())  # type: ignore[arg-type]
    assert "<unprintable Bad object>" in str(error) and "<unprintable Bad object>" in repr(error)


def test_a_prompt_error_escaping_a_step_is_a_defect_in_compiled_code() -> None:
    from agentmonad.compiled import raised
    from agentmonad import Site

    step = llm_step(FAST, "{{ missing }}", str, name="s")
    try:
        run(step(None, "x"))
    except Exception as exc:
        with pytest.raises(Defect) as info:
            raised(exc, Site("s", "t.mce", 1, 1), None, (LLMFailed, LLMUnavailable))
    assert isinstance(info.value.cause, PromptError)
    assert "prompt <s>, line 1: 'missing' is undefined" in str(info.value)


def test_secret_reprs() -> None:
    key = Secret("sk-abcdef")
    assert "sk-abcdef" not in repr(key) + str(key) + repr(ModelSettings(api_key="sk-abcdef")) + repr(LLMConfig(defaults=ModelSettings(api_key=key)))
    assert key == Secret("sk-abcdef") and key != Secret("other")


# ---------------------------------------------------------------- usage and budgets


def test_usage_meters_nest_and_reach_through_asyncio_run() -> None:
    step = llm_step(FAST, "{{ value }}", str, name="s")
    with use_models(fast=TestModel(usage=(7, 3))):
        with usage() as outer:
            run(step(None, "x"))
            with usage() as inner:
                run(step(None, "y"))
                assert current_usage() is inner
            record_usage("own", 1, 1)
    assert (outer.requests, outer.total_tokens, inner.total_tokens) == (3, 22, 10)
    assert set(outer.by_model()) == {"fast", "own"}
    assert current_usage() is None


def test_budget_exceeded_in_the_entering_task_without_another_await() -> None:
    async def go() -> Any:
        async with budget(5):
            record_usage("m", 4, 4)  # the body ends before the scheduled cancellation
        return "finished"

    with pytest.raises(BudgetExceeded) as info:
        run(go())
    assert info.value == BudgetExceeded(5, 8)


def test_budget_exceeded_by_a_step_cancels_the_rest_of_the_body() -> None:
    step = llm_step(FAST, "{{ value }}", str, name="s")
    reached: list[str] = []

    async def go() -> Any:
        async with llm_scope(LLMConfig(models={"fast": TestModel(usage=(60, 0))})):
            try:
                async with budget(100):
                    await step(None, "a")
                    reached.append("a")
                    await step(None, "b")  # 120 > 100: cancelled as its reply is counted
                    reached.append("b")
                    await asyncio.sleep(10)
                    reached.append("slept")
            except BudgetExceeded as exc:
                return exc
        return None

    assert run(go()) == BudgetExceeded(100, 120)
    assert reached == ["a"]  # the step that passed the budget never returned


def test_nested_budgets_count_their_own_usage() -> None:
    async def go() -> Any:
        async with budget(100) as outer:
            record_usage("m", 30, 0)
            async with budget(50) as inner:
                record_usage("m", 20, 0)
            record_usage("m", 10, 0)
        return outer.used, inner.used

    assert run(go()) == (60, 20)


def test_an_outer_cancellation_is_not_a_budget_failure() -> None:
    async def body() -> None:
        async with budget(10):
            await asyncio.sleep(10)

    async def go() -> bool:
        task = asyncio.create_task(body())
        await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    assert run(go())


def test_a_timeout_around_a_budget_still_times_out() -> None:
    async def go() -> str:
        try:
            async with asyncio.timeout(0.05):
                async with budget(10):
                    await asyncio.sleep(10)
        except TimeoutError:
            return "timeout"
        return "no"

    assert run(go()) == "timeout"


def test_budget_limits() -> None:
    with pytest.raises(ValueError):
        budget(-1)
    with pytest.raises(ValueError):
        budget(1.5)  # type: ignore[arg-type]


# ---------------------------------------------------------------- models and doctests


def test_model_options_are_checked() -> None:
    for bad in ({"max_repairs": -1}, {"timeout": 0}, {"temperature": float("nan")}, {"max_tokens": 0}, {"max_retries": 1.5}):
        with pytest.raises(ValueError):
            Model("m", "x", **bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ModelSettings(api_key=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        LLMConfig(models={"m": "gpt-4o"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    "module",
    ["agentmonad.llm.errors", "agentmonad.llm.config", "agentmonad.llm.prompt", "agentmonad.llm.output",
     "agentmonad.usage", "agentmonad.llm.wire", "agentmonad.llm.openai_backend", "agentmonad.llm.options",
     "agentmonad.testing"],
)
def test_doctests(module: str) -> None:
    failures, _ = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert failures == 0


def test_a_detached_task_waits_for_a_spent_budget_to_close_then_goes_on() -> None:
    from agentmonad.llm import budget_checkpoint

    order: list[str] = []

    async def detached() -> None:
        await budget_checkpoint()  # the budget is spent: wait until it has closed
        order.append("detached went on")

    async def go() -> Any:
        try:
            async with budget(1):
                record_usage("m", 5, 0)
                task = asyncio.get_running_loop().create_task(detached())
                await asyncio.sleep(0)
                order.append("never")
        except BudgetExceeded:
            order.append("budget closed")
        await task
        return order

    assert run(go()) == ["budget closed", "detached went on"]


def test_agent_monad_budget_keeps_the_state_reached() -> None:
    """``AgentMonad.budget`` (the interpreter's ``budget(N) e``): the failure keeps the state after the
    last completed step; a ``local`` in progress gives back its start state; a budget not spent
    changes nothing; a body that ends before the cancellation fails with its own end state."""
    from agentmonad import AgentMonad, BudgetExceeded, lift_step

    async def spend(state: int, value: str) -> Ok[int, str]:
        record_usage("m", 10, 0)
        await asyncio.sleep(0)  # the budget's cancellation lands here
        return Ok(value, state + 100)

    def spend_sync(state: int, value: str) -> Ok[int, str]:
        record_usage("m", 10, 0)
        return Ok(value, state + 100)

    step = lift_step(spend, name="spend", errors=(), is_async=True)
    sync_step = lift_step(spend_sync, name="spend_sync", errors=())
    bump = AgentMonad.modify(lambda s: s + 1)
    site = agentmonad.Site("budget", "t.mce", 1, 1)

    body = bump.then(lambda _: step("x")).then(lambda v: step(v))
    assert body.budget(5, site).run_sync(0) == Err(BudgetExceeded(5, 10), 1, site)
    assert body.budget(15, site).run_sync(0) == Err(BudgetExceeded(15, 20), 101, site)
    assert body.budget(20, site).run_sync(0) == Ok("x", 201)
    in_local = bump.then(lambda _: bump.then(lambda _: step("x")).local())
    assert in_local.budget(5, site).run_sync(0) == Err(BudgetExceeded(5, 10), 1, site)
    ends_first = bump.then(lambda _: sync_step("x"))
    assert ends_first.budget(5, site).run_sync(0) == Err(BudgetExceeded(5, 10), 101, site)
    with pytest.raises(ValueError):
        AgentMonad.pure(1).budget(-1)
