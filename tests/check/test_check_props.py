"""Property tests of the checker: random well-typed pipelines, and single mutations that break them.

:class:`Spec` builds a `.mce` file together with the signature it should have:
each generated expression comes with the type the generator computed by the
rules of docs/language.md §5 (independently of the checker), and the declarations it
needs are added as it goes. The checker must accept the file and infer exactly
that signature for ``main``. Mutations (swapping two steps of a chain, dropping a
``catch``, removing an error from ``!``) must be rejected with the right code.

Value types are builtins and one imported class; the mutations use builtin
types and the runtime's built-in errors, where ``≤`` gives definite answers
(two imported classes are "unknown", never reported; docs/language.md §4).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcec.check import CheckResult, check
from mcec.syntax import parse
from mcec.span import SourceFile
from mcec.check.typed import Sig
from mcec.check.types import (
    MERGE_CONFLICT,
    TOOL_FAILED,
    TOOL_UNAVAILABLE,
    Builtin,
    ClassRef,
    ErrorSet,
    Generic,
    Type,
    render_errors,
    union,
)

STR, INT, BYTES, NONE = Builtin("str"), Builtin("int"), Builtin("bytes"), Builtin("None")
A = ClassRef("app.impl.A", "A")
USER_ERRORS = [ClassRef(f"app.impl.E{i}", f"E{i}") for i in (1, 2, 3)]
ATOMS: list[Type] = [STR, INT, BYTES, NONE, A]
RUNTIME = {MERGE_CONFLICT, TOOL_FAILED, TOOL_UNAVAILABLE}


def check_text(text: str) -> CheckResult:
    source = SourceFile("prop.mce", text)
    parsed = parse(source)
    assert parsed.module is not None and not parsed.diagnostics, (text, parsed.diagnostics)
    return check(parsed.module, source)


def error_codes(result: CheckResult) -> set[str]:
    return {d.code for d in result.diagnostics if d.is_error}


@dataclass
class Spec:
    """A spec under construction: declarations so far, and a hypothesis ``data`` to draw from."""

    data: st.DataObject
    custom_merge: bool
    decls: list[str] = field(default_factory=list)
    counter: int = 0

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def draw_type(self, depth: int = 0) -> Type:
        if depth >= 2 or self.data.draw(st.booleans()):
            return self.data.draw(st.sampled_from(ATOMS))
        if self.data.draw(st.booleans()):
            return Generic("list", (self.draw_type(depth + 1),))
        return Generic("tuple", (self.draw_type(depth + 1), self.draw_type(depth + 1)))

    def draw_errors(self, pool: list[ClassRef]) -> ErrorSet:
        return frozenset(self.data.draw(st.lists(st.sampled_from(pool), max_size=2)))

    def text(self, main: str) -> str:
        merge = " merge impl.merge_states" if self.custom_merge else ""
        header = [
            "from app.impl import S, A, E1, E2, E3",
            "import app.impl as impl",
            f"state S{merge}",
            "server srv = stdio \"srv\"",
            "error E1",
            "error E2",
            "error E3",
        ]
        return "\n".join([*header, *self.decls, main]) + "\n"

    # ------------------------------------------------------------ declarations

    def ref(self, input_type: Type, output: Type | None = None, kind: str | None = None) -> tuple[str, Sig]:
        """Declare a fresh step, fn or tool from ``input_type`` and refer to it."""
        # a tool's input is a model or a dict (its arguments), so tools take only the class A
        tool_ok = input_type == ClassRef("app.impl.A", "A")
        kind = kind or self.data.draw(st.sampled_from(["step", "fn", "tool"] if tool_ok else ["step", "fn"]))
        output = output if output is not None else self.draw_type()
        name = self.fresh(kind[0])
        if kind == "fn":
            self.decls.append(f"fn {name} : {input_type} -> {output} = impl.{name}")
            return name, Sig(input_type, output, frozenset(), False)
        errors = self.draw_errors([*USER_ERRORS, MERGE_CONFLICT])
        bang = f" ! {render_errors(errors)}" if errors else ""
        if kind == "step":
            sync = self.data.draw(st.sampled_from(["", "async "]))
            self.decls.append(f"{sync}step {name} : {input_type} -> {output}{bang} = impl.{name}")
            return name, Sig(input_type, output, errors, True)
        self.decls.append(f"tool {name} : {input_type} -> {output}{bang} = srv.{name}")
        return name, Sig(input_type, output, errors | {TOOL_FAILED, TOOL_UNAVAILABLE}, False)

    def merged(self, errors: ErrorSet, conflict: bool) -> ErrorSet:
        return errors | {MERGE_CONFLICT} if conflict and not self.custom_merge else errors

    # ------------------------------------------------------------ expressions

    def expr(self, input_type: Type, depth: int) -> tuple[str, Sig]:
        """A well-typed expression taking ``input_type``, with its signature."""
        forms = ["ref"] if depth <= 0 else ["ref", "bind", "par", "local", "catch", "orelse", "pipeline"]
        if depth > 0 and isinstance(input_type, Generic) and input_type.head == "list":
            forms.append("each")
        form = self.data.draw(st.sampled_from(forms))
        if form == "ref":
            return self.ref(input_type)
        if form == "bind":
            text, sig = self.expr(input_type, depth - 1)
            parts, errors, stateful = [text], set(sig.errors), sig.stateful
            for _ in range(self.data.draw(st.integers(1, 3))):
                text, next_sig = self.expr(sig.output, depth - 1)
                parts.append(text)
                errors |= next_sig.errors
                stateful = stateful or next_sig.stateful
                sig = next_sig
            return " >>= ".join(f"({p})" for p in parts), Sig(input_type, sig.output, frozenset(errors), stateful)
        if form == "par":
            branches = [self.expr(input_type, depth - 1) for _ in range(self.data.draw(st.integers(2, 3)))]
            errors = frozenset().union(*(s.errors for _, s in branches))
            stateful_count = sum(1 for _, s in branches if s.stateful)
            output = Generic("tuple", tuple(s.output for _, s in branches))
            text = "par <" + ", ".join(t for t, _ in branches) + ">"
            return text, Sig(input_type, output, self.merged(errors, stateful_count >= 2), stateful_count > 0)
        if form == "each":
            assert isinstance(input_type, Generic)
            text, sig = self.expr(input_type.args[0], depth - 1)
            limit = self.data.draw(st.sampled_from(["", "(limit=1)", "(limit=4)"]))
            output = Generic("list", (sig.output,))
            return f"each{limit} ({text})", Sig(input_type, output, self.merged(sig.errors, sig.stateful), sig.stateful)
        if form == "local":
            text, sig = self.expr(input_type, depth - 1)
            return f"local ({text})", Sig(sig.input, sig.output, sig.errors, False)
        if form == "catch":
            text, sig = self.expr(input_type, depth - 1)
            assume(sig.errors)
            ordered = sorted(sig.errors, key=str)
            caught = self.data.draw(st.lists(st.sampled_from(ordered), min_size=1, max_size=2, unique=True))
            handler, handler_sig = self.ref(union(caught), sig.output)
            # Only equal types are certainly caught: E − C is a plain set difference here.
            errors = (sig.errors - set(caught)) | handler_sig.errors
            caught_text = " | ".join(str(c) for c in caught)
            stateful = sig.stateful or handler_sig.stateful
            return f"({text}) catch {caught_text} => {handler}", Sig(input_type, sig.output, errors, stateful)
        if form == "orelse":
            text, sig = self.expr(input_type, depth - 1)
            fallback, fallback_sig = self.ref(input_type, sig.output)
            stateful = sig.stateful or fallback_sig.stateful
            return f"({text}) orelse {fallback}", Sig(input_type, sig.output, fallback_sig.errors, stateful)
        # A nested pipeline, declared (or inferred) and used by name.
        text, sig = self.expr(input_type, depth - 1)
        name = self.fresh("p")
        bang = self.data.draw(st.sampled_from(["none", "exact"]))
        clause = "" if bang == "none" else f" ! {render_errors(sig.errors)}"
        self.decls.append(f"pipeline {name} : {input_type} -> {sig.output}{clause} = {text};")
        return name, sig


def main_text(spec: Spec, text: str, sig: Sig, errors: ErrorSet | None) -> str:
    clause = "" if errors is None else f" ! {render_errors(errors)}"
    return spec.text(f"pipeline main : {sig.input} -> {sig.output}{clause} = {text};")


def main_sig(result: CheckResult) -> Sig:
    assert result.program is not None, [d.message for d in result.diagnostics]
    return next(p.sig for p in result.program.pipelines if p.name == "main")


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@SETTINGS
@given(st.data(), st.booleans(), st.integers(0, 4), st.booleans())
def test_well_typed_pipelines_check_with_the_generated_sig(
    data: st.DataObject, custom_merge: bool, depth: int, declare: bool
) -> None:
    spec = Spec(data, custom_merge)
    text, sig = spec.expr(spec.draw_type(), depth)
    result = check_text(main_text(spec, text, sig, sig.errors if declare else None))
    assert main_sig(result) == sig


@SETTINGS
@given(st.data(), st.integers(0, 4))
def test_removing_an_error_from_bang_is_mce013(data: st.DataObject, depth: int) -> None:
    spec = Spec(data, False)
    text, sig = spec.expr(spec.draw_type(), depth)
    # Removing e is a definite escape when e is a built-in error (unrelated to
    # every other error) or the only error (e ≤ Never is no).
    removable = sorted((e for e in sig.errors if e in RUNTIME or len(sig.errors) == 1), key=str)
    assume(removable)
    removed = data.draw(st.sampled_from(removable))
    result = check_text(main_text(spec, text, sig, sig.errors - {removed}))
    assert error_codes(result) == {"MCE013"}
    assert any(removed.spelling in d.message for d in result.diagnostics if d.code == "MCE013")


@SETTINGS
@given(st.data(), st.integers(0, 3))
def test_dropping_a_catch_is_mce013(data: st.DataObject, depth: int) -> None:
    spec = Spec(data, False)
    body, body_sig = spec.expr(spec.draw_type(), depth)
    runtime = sorted((e for e in body_sig.errors if e in RUNTIME), key=str)
    assume(runtime)
    caught = data.draw(st.sampled_from(runtime))
    handler, handler_sig = spec.ref(caught, body_sig.output, kind="fn")
    declared = (body_sig.errors - {caught}) | handler_sig.errors
    with_catch = f"({body}) catch {caught} => {handler}"
    good = check_text(main_text(spec, with_catch, body_sig, declared))
    assert main_sig(good).errors == declared
    bad = check_text(main_text(spec, body, body_sig, declared))
    assert error_codes(bad) == {"MCE013"}


PLAIN = [STR, BYTES, NONE, Generic("list", (STR,)), Generic("tuple", (STR, BYTES))]


@SETTINGS
@given(st.data(), st.integers(3, 8))
def test_swapping_two_steps_is_a_mismatch(data: st.DataObject, length: int) -> None:
    # Consecutive types differ and none widens into another (no bool/int/float).
    types = [data.draw(st.sampled_from(PLAIN))]
    for _ in range(length):
        types.append(data.draw(st.sampled_from([t for t in PLAIN if t != types[-1]])))
    spec = Spec(data, False)
    names = [spec.ref(types[i], types[i + 1], kind="fn")[0] for i in range(length)]
    sig = Sig(types[0], types[-1], frozenset(), False)
    assert main_sig(check_text(main_text(spec, " >>= ".join(names), sig, None))) == sig
    i = data.draw(st.integers(0, length - 2))
    names[i], names[i + 1] = names[i + 1], names[i]
    codes = error_codes(check_text(main_text(spec, " >>= ".join(names), sig, None)))
    assert codes and codes <= {"MCE010", "MCE012"}
    if i > 0:
        assert "MCE010" in codes


RESEARCH = """
from examples.research.impl import AgentState, ToolCall, ToolResult, LLMError, ToolError
import examples.research.impl as impl

state AgentState
error LLMError
error ToolError

step plan_action         : str -> ToolCall ! LLMError          = impl.plan_action
async step execute_tool  : ToolCall -> ToolResult ! ToolError  = impl.execute_tool
step synthesize          : ToolResult -> str ! LLMError        = impl.synthesize_answer
fn   format_output       : str -> str                          = impl.format_output

pipeline answer : str -> str ! LLMError | ToolError {
    step plan_action >>= execute_tool;
    step synthesize >>= format_output;
}

pipeline answer_all : list[str] -> list[str] ! LLMError | ToolError = each(limit=8) (local answer);
"""


def test_language_reference_example_checks_cleanly() -> None:
    result = check_text(RESEARCH)
    assert result.diagnostics == ()
    assert result.program is not None
    answer, answer_all = result.program.pipelines
    assert (answer.name, str(answer.sig), answer.sig.stateful) == ("answer", "str -> str ! LLMError | ToolError", True)
    assert (answer_all.name, str(answer_all.sig), answer_all.sig.stateful) == (
        "answer_all",
        "list[str] -> list[str] ! LLMError | ToolError",
        False,
    )
    assert result.program.state == ClassRef("examples.research.impl.AgentState", "AgentState")
    step = result.program.steps[0]
    assert (step.impl.module, step.impl.attr, step.impl.spelling) == ("examples.research.impl", "plan_action", "impl.plan_action")


def test_nesting_at_the_limit_and_long_chains_check_without_crashing() -> None:
    """Groups nested as deep as the parser allows and a 20,000-step chain, checked with Python's
    default recursion limit (and 200 frames already used, as an embedding caller might)."""
    from mcec.syntax import MAX_DEPTH

    nested = "f"
    for _ in range((MAX_DEPTH - 1) // 2):
        nested = f"local (par <{nested}, f>)"
    chain = " >>= ".join(["f"] * 20_000)
    text = (
        "import app.impl as impl\nfn f : int -> int = impl.f\n"
        f"pipeline deep : int -> int = {nested};\n"
        f"pipeline long : int -> int ! Never = {chain};\n"
    )
    def nested_call(frames: int) -> CheckResult:
        return check_text(text) if frames == 0 else nested_call(frames - 1)

    result = nested_call(200)
    # The nested tuple output does not fit `int`: one MCE012, nothing else, no crash.
    assert [d.code for d in result.diagnostics] == ["MCE012"]
