"""Every diagnostic the checker emits, written once.

The checking code decides *that* something is wrong and calls one of these
functions with the facts (names, types, spans); the wording lives here. Type
mismatches share one function, :func:`mismatch`, whose :class:`Situation` says
where the mismatch happened, so the same failed ``≤`` reads differently in a
bind, a ``par``, a ``catch`` handler or a pipeline's declared type (Gleam's
``UnifyErrorSituation``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mcec.diagnostics import Code, Diagnostic, Label, error, warning
from mcec.span import Span
from mcec.check.types import Type, Union


@dataclass(frozen=True, slots=True)
class _Wording:
    """Templates for one situation; ``{a}`` is the actual type, ``{e}`` the expected
    type, ``{p}`` the producer's description, ``{c}`` the consumer's."""

    code: Code
    message: str
    producer_label: str
    consumer_label: str
    help: str


class Situation(enum.Enum):
    """Where a value or type failed to fit (the ``value`` is the wording)."""

    BIND = _Wording(
        "MCE010",
        "{c} expects {e}, but {p} produces {a}",
        "produces {a}",
        "expects {e}",
        "the output of each step is the input of the next; adapt it with a `fn` from {a} to {e}",
    )
    PAR_INPUT = _Wording(
        "MCE011",
        "`par` branches take different input types: {p} takes {e}, {c} takes {a}",
        "takes {e}",
        "takes {a}",
        "every branch of a `par` receives the same input value; adapt this branch with a `fn` before it",
    )
    CATCH_INPUT = _Wording(
        "MCE020",
        "the `catch` handler {c} takes {e}, but it is given the caught error {a}",
        "catches {a}",
        "takes {e}",
        "a handler receives the error value, so its input must accept every caught type",
    )
    CATCH_OUTPUT = _Wording(
        "MCE020",
        "the `catch` handler {c} produces {a}, but {p} produces {e}",
        "produces {e}",
        "produces {a}",
        "a handler replaces the failed computation, so it must produce what that computation would",
    )
    ORELSE_INPUT = _Wording(
        "MCE020",
        "the `orelse` fallback {c} takes {e}, but it is given the input of {p}, which is {a}",
        "takes {a}",
        "takes {e}",
        "a fallback runs on the original input, so it must take what {p} takes",
    )
    ORELSE_OUTPUT = _Wording(
        "MCE020",
        "the `orelse` fallback {c} produces {a}, but {p} produces {e}",
        "produces {e}",
        "produces {a}",
        "a fallback replaces the failed computation, so it must produce what that computation would",
    )
    PIPELINE_INPUT = _Wording(
        "MCE012",
        "pipeline `{p}` declares input {a}, but its body takes {e}",
        "declared input {a}",
        "takes {e}",
        "change the declared input type, or begin the body with a step that takes {a}",
    )
    PIPELINE_OUTPUT = _Wording(
        "MCE012",
        "pipeline `{c}` declares output {e}, but its body produces {a}",
        "produces {a}",
        "declared output {e}",
        "change the declared output type, or end the body with a step that produces {e}",
    )
    MATCH_ARM = _Wording(
        "MCE010",
        "the arm {c} expects {e}, but the value it receives is {a}",
        "matches {a}",
        "expects {e}",
        "an arm receives the matched value, narrowed by its pattern; adapt it with a `fn` from {a} to {e}",
    )
    IF_CONDITION = _Wording(
        "MCE010",
        "the condition of an `if` must produce bool, but {p} produces {a}",
        "produces {a}",
        "tests it",
        "write a `fn` that decides, from {a} to bool, and use it as the condition",
    )
    IF_CONDITION_INPUT = _Wording(
        "MCE010",
        "the condition {c} expects {e}, but the `if` gives it its input, {a}",
        "the `if` receives {a}",
        "expects {e}",
        "the condition receives the value the `if` receives; adapt it with a `fn` first",
    )
    IF_BRANCH = _Wording(
        "MCE010",
        "the branch {c} expects {e}, but the `if` gives both branches its input, {a}",
        "the `if` receives {a}",
        "expects {e}",
        "both branches of an `if` receive the value the condition received; adapt it with a `fn` first",
    )
    PLAN_INPUT = _Wording(
        "MCE012",
        "a plan over toolbox `{p}` takes {a}, but this plan begins with {c}, which takes {e}",
        "plans take {a}",
        "takes {e}",
        "begin the plan with a toolbox entry that takes {a}",
    )
    PLAN_OUTPUT = _Wording(
        "MCE012",
        "a plan over toolbox `{c}` must produce {e}, but this plan produces {a}",
        "produces {a}",
        "plans produce {e}",
        "end the plan with a toolbox entry that produces {e}",
    )
    PLANNER_INPUT = _Wording(
        "MCE010",
        "the planner {c} of a `spawn` is given a PlanRequest, but it takes {e}",
        "gives the planner a PlanRequest",
        "takes {e}",
        "a planner takes the runtime's request: declare it `… : PlanRequest -> str` (from agentmonad import PlanRequest)",
    )
    PLANNER_OUTPUT = _Wording(
        "MCE010",
        "the planner {c} of a `spawn` must write the plan as str, but it produces {a}",
        "expects the plan text, str",
        "produces {a}",
        "a planner produces the plan's text: declare it `… : PlanRequest -> str`",
    )
    EMPTY_BODY = _Wording(
        "MCE012",
        "pipeline `{c}` has an empty body, which passes its input through, but {a} does not flow into its output {e}",
        "passes {a} through",
        "declared output {e}",
        "an empty block `{{ }}` is the identity: declare the same input and output type, or add statements",
    )


def mismatch(
    situation: Situation,
    *,
    actual: Type,
    expected: Type,
    producer: tuple[str, Span],
    consumer: tuple[str, Span],
    primary: Span,
) -> Diagnostic:
    """A type that does not fit, in ``situation``.

    ``producer`` and ``consumer`` are ``(description, span)`` of the two sides; in
    a bind the producer makes a value of type ``actual`` and the consumer expects
    ``expected``; the situation's wording says what the sides are elsewhere.
    """
    wording = situation.value
    values = {"a": str(actual), "e": str(expected), "p": producer[0], "c": consumer[0]}
    return error(
        wording.code,
        wording.message.format(**values),
        primary,
        (
            Label(producer[1], wording.producer_label.format(**values)),
            Label(consumer[1], wording.consumer_label.format(**values)),
        ),
        wording.help.format(**values),
    )


def _quoted(names: list[str] | tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names)


# ---------------------------------------------------------------- names


def unknown(message: str, span: Span, help: str | None, *, code: Code = "MCE002") -> Diagnostic:
    """MCE002 (a name) or MCE017 (a type) that did not resolve; prose from resolution."""
    return error(code, message, span, (), help)


def unsupported_future(feature: str, span: Span) -> Diagnostic:
    """MCE002: a ``from __future__`` import other than ``annotations``."""
    return error(
        "MCE002",
        f"`from __future__ import {feature}` is not supported",
        span,
        (),
        "generated modules start with `from __future__ import annotations` and use no other feature; "
        "remove this import",
    )


def bad_error_type(error_type: Type, span: Span) -> Diagnostic:
    """MCE025: ``error T`` where T is not a class ``isinstance`` can test."""
    if isinstance(error_type, Union):
        help = "declare each error type on its own: " + ", ".join(f"`error {m}`" for m in error_type.members)
    else:
        help = "declare a class for it (an `Exception` subclass can also be raised) and write `error ThatClass`"
    return error(
        "MCE025",
        f"`{error_type}` cannot be an error type: errors are told apart with `isinstance`, which needs a class",
        span,
        (),
        help,
    )


def bad_tool_input(given: Type, span: Span) -> Diagnostic:
    """MCE025: a tool's input that is not a model or ``dict[str, Any]`` (it cannot be sent as arguments)."""
    return error(
        "MCE025",
        f"a tool's input must be a pydantic model or `dict[str, Any]`, not `{given}`",
        span,
        (),
        "the input is sent as the tool's arguments, by name: declare a pydantic model with one field per argument",
    )


def implementation(message: str, span: Span, declaration: Span, help: str) -> Diagnostic:
    """MCE026: a step's or fn's Python implementation does not fit its declaration."""
    return error("MCE026", message, span, (Label(declaration, "declared here"),), help)


def python_missing(message: str, span: Span, help: str | None) -> Diagnostic:
    """MCE002: a Python module or name the spec imports or refers to is not there."""
    return error("MCE002", message, span, (), help)


def duplicate(name: str, span: Span, first: Span) -> Diagnostic:
    """MCE003: ``name`` is bound a second time at ``span``."""
    return error(
        "MCE003",
        f"`{name}` is declared twice",
        span,
        (Label(first, "first declared here"),),
        "every top-level name of a `.mce` file must be distinct; rename one of them",
    )


def builtin_redeclared(name: str, span: Span) -> Diagnostic:
    """MCE003: a built-in error type is imported or declared again."""
    return error(
        "MCE003",
        f"`{name}` is a built-in error type and cannot be declared again",
        span,
        (),
        f"`{name}` comes from the runtime and needs neither an import nor an `error` declaration; remove this",
    )


def shadows_builtin(name: str, span: Span) -> Diagnostic:
    """W003: a spec's own name hides a built-in error type of v2 (the spec's own is used)."""
    return warning(
        "W003",
        f"`{name}` shadows the built-in error type `{name}`",
        span,
        (),
        f"in this file `{name}` means this one, and the built-in `{name}` of `loop`/`timeout` cannot be "
        f"named (to catch it, for instance); rename it, e.g. `import … as My{name}`",
    )


def duplicate_error(type_: Type, span: Span, first: Span) -> Diagnostic:
    """MCE003: ``error T`` declared twice."""
    return error(
        "MCE003",
        f"error type `{type_}` is declared twice",
        span,
        (Label(first, "first declared here"),),
        "each error type is declared once; remove this declaration",
    )


#: How many of the other steps MCE004 (no ``state``) points at; the last label counts the rest.
#: One label per step made a 20,000-step file print a 2 MB diagnostic.
MAX_OTHER_STEPS_SHOWN = 3


def missing_state(step: str, span: Span, others: list[Span]) -> Diagnostic:
    """MCE004: the file has steps but no ``state``; ``others`` are the other steps, in file order."""
    shown = others[:MAX_OTHER_STEPS_SHOWN]
    labels = [Label(s, "this step needs it too") for s in shown]
    hidden = len(others) - len(shown)
    if hidden:
        more = "1 more step" if hidden == 1 else f"{hidden} more steps"
        labels[-1] = Label(shown[-1], f"this step needs it too, and so do {more} after it")
    return error(
        "MCE004",
        f"step `{step}` needs a state, but this file declares no `state`",
        span,
        tuple(labels),
        "declare the state type that every step receives and returns: `state T`",
    )


def second_state(span: Span, first: Span) -> Diagnostic:
    """MCE004: a second ``state`` declaration."""
    return error(
        "MCE004",
        "the state is declared twice",
        span,
        (Label(first, "first declared here"),),
        "a file has at most one `state`; remove one of them",
    )


def undeclared_error(type_: Type, span: Span, where: str) -> Diagnostic:
    """MCE018: an error type in ``!`` or ``catch`` without an ``error`` declaration."""
    return error(
        "MCE018",
        f"`{type_}` is used as an error type {where}, but it is not declared with `error`",
        span,
        (),
        f"declare it: `error {type_}`",
    )


def par_too_small(count: int, span: Span) -> Diagnostic:
    """MCE019: a ``par`` with fewer than two branches."""
    return error(
        "MCE019",
        f"a `par` needs at least two branches, but this one has {count}",
        span,
        (),
        "write the single branch on its own, without `par < >`",
    )


def limit_too_small(limit: int, span: Span) -> Diagnostic:
    """MCE019: ``each(limit=k)`` with ``k < 1``."""
    return error(
        "MCE019",
        f"the `each` limit must be at least 1, but it is {limit}",
        span,
        (),
        "write `each(limit=1)` to run one at a time, or omit the limit to run all at once",
    )


def not_callable(name: str, kind: str, span: Span) -> Diagnostic:
    """MCE002: a pipeline body names something that is not a step, fn, tool or pipeline
    (``kind`` with its article: "a module")."""
    return error(
        "MCE002",
        f"`{name}` is {kind}, not a step, fn, tool or pipeline",
        span,
        (),
        "a pipeline body is made of declared steps, fns, tools and pipelines",
    )


def unknown_server(name: str, span: Span, help: str | None) -> Diagnostic:
    """MCE002: a tool names a server that is not declared."""
    return error(
        "MCE002",
        f"unknown server `{name}`",
        span,
        (),
        help or f'declare it: `server {name} = stdio "COMMAND"`',
    )


def unused(kind: str, name: str, span: Span) -> Diagnostic:
    """W001: a declaration nothing uses."""
    verb = "imported" if kind in ("import", "module") else "declared"
    return warning(
        "W001",
        f"{kind} `{name}` is {verb} but never used",
        span,
        (),
        "remove it, or use it",
    )


# ---------------------------------------------------------------- errors and pipelines


class Origin(enum.Enum):
    """What introduces an error into an error set (for MCE013's label)."""

    REFERENCE = "{what} may fail with `{error}`"
    PAR = "merging the states of these stateful branches may fail with `{error}`"
    EACH = "merging the states of these stateful runs may fail with `{error}`"
    LOOP = "this `loop` fails with `{error}` when its last run still goes round"
    TIMEOUT = "this `timeout` fails with `{error}` when its body takes too long"
    BUDGET = "this `budget` fails with `{error}` when its body uses more tokens than it allows"
    SPAWN = "this `spawn` may fail with `{error}`: a rejected plan, or one of its toolbox's errors"


def escaping_error(
    error_type: Type,
    pipeline: str,
    origin: tuple[Origin, str, Span],
    declared: Span,
    declared_text: str,
    fixed: str,
) -> Diagnostic:
    """MCE013: ``error_type`` escapes ``pipeline``; ``origin`` is ``(kind, description, span)``
    of what introduces it, where the diagnostic points."""
    kind, what, span = origin
    help = f"handle it with `catch {error_type} => …`, or add it to the pipeline's errors: `! {fixed}`"
    if kind in (Origin.PAR, Origin.EACH):
        help += "; or make the branches stateless with `local`, or declare a custom `state T merge m.f`"
    return error(
        "MCE013",
        f"error `{error_type}` escapes pipeline `{pipeline}`, which does not declare it",
        span,
        (Label(span, kind.value.format(what=what, error=error_type)), Label(declared, f"declares {declared_text}")),
        help,
    )


def impossible_catch(caught: Type, span: Span, body: Span, body_errors: str | None) -> Diagnostic:
    """MCE014: a ``catch`` of an error its body cannot raise."""
    if body_errors is None:
        message = f"`{caught}` cannot be caught here: the expression before `catch` cannot fail"
        label = "cannot fail"
    else:
        message = f"`{caught}` cannot be caught here: the expression before `catch` fails only with {body_errors}"
        label = f"may fail with {body_errors}"
    return error("MCE014", message, span, (Label(body, label),), f"remove `{caught}` from this `catch`")


#: The longest cycle MCE015 spells out whole; a longer one shows its first uses and counts
#: the rest (a 4,000-pipeline cycle printed a 570 KB diagnostic).
MAX_CYCLE_SHOWN = 6


def cycle(names: list[str], references: list[Span]) -> Diagnostic:
    """MCE015: pipelines ``names[0] -> names[1] -> … -> names[0]`` refer to each other."""
    count = len(names)
    if count == 1:
        message = f"pipeline `{names[0]}` refers to itself: {names[0]} -> {names[0]}"
    elif count <= MAX_CYCLE_SHOWN:
        message = f"pipelines {_quoted(names)} refer to each other in a cycle: {' -> '.join([*names, names[0]])}"
    else:
        head = " -> ".join(names[: MAX_CYCLE_SHOWN - 1])
        message = (
            f"{count} pipelines refer to each other in a cycle: "
            f"{head} -> … ({count - MAX_CYCLE_SHOWN} more) -> {names[-1]} -> {names[0]}"
        )
    shown = min(count, MAX_CYCLE_SHOWN)
    labels = [Label(references[i], f"`{names[i]}` uses `{names[(i + 1) % count]}` here") for i in range(shown)]
    if count > shown:
        last = shown - 1
        labels[last] = Label(
            references[last],
            f"`{names[last]}` uses `{names[last + 1]}` here, and so on through {count - shown} more uses",
        )
    return error(
        "MCE015",
        message,
        references[0],
        tuple(labels),
        "a pipeline cannot run itself, directly or through others; break the cycle",
    )


# ---------------------------------------------------------------- v2 control flow


def bound_too_small(construct: str, value: float, minimum: str, span: Span, help: str) -> Diagnostic:
    """MCE019: ``loop(0)``, ``retry(0)``, ``timeout(0)``: a number below what the construct needs."""
    shown = int(value) if float(value).is_integer() else value
    return error("MCE019", f"the number in `{construct}(…)` must be {minimum}, but it is {shown}", span, (), help)


def not_covered(uncovered: Type, span: Span, input_type: Type) -> Diagnostic:
    """MCE021: a ``match`` whose arms leave part of its input type unmatched."""
    return error(
        "MCE021",
        f"this `match` does not cover {uncovered}",
        span,
        (),
        f"it receives {input_type}; add an arm for {uncovered}, or end with `_ => …` for everything else",
    )


def unreachable_arm(span: Span, covered_by: Span | None, what: Type) -> Diagnostic:
    """W002: an arm no value can reach (earlier arms took everything it matches, or it matches nothing)."""
    if covered_by is None:
        message = f"this arm can never be reached: no value of {what} matches its pattern"
        labels: tuple[Label, ...] = ()
    else:
        message = "this arm can never be reached: the arms before it take every value it would match"
        labels = (Label(covered_by, "this arm already takes them"),)
    return warning("W002", message, span, labels, "remove the arm, or move it before the arm that takes its values")


def untestable(what: str, type_: Type, span: Span, help: str) -> Diagnostic:
    """MCE022: a pattern or a loop input that no run-time test can decide."""
    return error("MCE022", f"{what} {type_} cannot be tested at run time", span, (), help)


def loop_never(ends: bool, output: Type, input_type: Type, span: Span, body: Span) -> Diagnostic:
    """MCE022: a loop body whose results all continue (never ends) or none does (never continues)."""
    if ends:
        message = f"this `loop` never ends: its body always produces {output}, which is its input type {input_type}"
        help = "the loop ends on a result that is not its input type; make the body produce one (an answer, say)"
    else:
        message = f"this `loop` never goes round: its body produces {output}, which is not its input type {input_type}"
        help = f"a result of type {input_type} runs the body again; without one, drop the `loop`"
    return error("MCE022", message, span, (Label(body, f"produces {output}"),), help)


def impossible_retry(error_type: Type, span: Span, body: Span, body_errors: str | None) -> Diagnostic:
    """MCE014: ``retry(on=E)`` where the body cannot fail with E."""
    if body_errors is None:
        message = f"`{error_type}` cannot be retried here: the body of `retry` cannot fail"
        label = "cannot fail"
    else:
        message = f"`{error_type}` cannot be retried here: the body of `retry` fails only with {body_errors}"
        label = f"may fail with {body_errors}"
    return error("MCE014", message, span, (Label(body, label),), f"remove `{error_type}` from `on=`")


# ---------------------------------------------------------------- LLM steps (docs/language.md §10)


def unknown_model(name: str, span: Span, help: str | None) -> Diagnostic:
    """MCE002: an ``llm`` names a model that is not declared."""
    return error("MCE002", f"unknown model `{name}`", span, (), help or f'declare it: `model {name} = openai "MODEL_ID"`')


def template_needs_jinja(step: str, span: Span) -> Diagnostic:
    """MCE023: the template of ``step`` cannot be checked because jinja2 is not installed."""
    return error(
        "MCE023",
        f"the template of `{step}` cannot be checked: jinja2 is not installed",
        span,
        (),
        "LLM steps need the `llm` extra: pip install 'mcec[llm]'",
    )


def template_file_unreadable(
    step: str, written: str, path: str, reason: str, span: Span, help: str | None = None
) -> Diagnostic:
    """MCE023: a ``file`` template that is missing, unreadable, not a regular file or too big
    (``help`` says what a template file must be; by default, where it was looked for)."""
    return error(
        "MCE023",
        f"the template file `{written}` of `{step}` {reason}",
        span,
        (),
        help or f"the path is relative to the spec's folder (looked for {path})",
    )


def template_syntax(step: str, message: str, line: int | None, file: str | None, span: Span) -> Diagnostic:
    """MCE023: a template Jinja2 cannot parse."""
    where = "" if line is None else f" (line {line} of {'the template' if file is None else file})"
    return error(
        "MCE023",
        f"the template of `{step}` does not parse: {message}{where}",
        span,
        (),
        "templates are Jinja2: `{{ field }}`, `{% for x in xs %}…{% endfor %}`",
    )


def template_variable(step: str, variable: str, input_type: Type, known: list[str], span: Span) -> Diagnostic:
    """MCE023: a template reads a variable its input type does not give (nor ``state``)."""
    import difflib

    matches = difflib.get_close_matches(variable, known, n=3, cutoff=0.6)
    if matches:
        help = "did you mean " + (
            f"`{matches[0]}`?" if len(matches) == 1 else "one of " + ", ".join(f"`{m}`" for m in matches) + "?"
        )
    else:
        help = "this template may read " + ", ".join(f"`{k}`" for k in known)
    return error(
        "MCE023",
        f"the template of `{step}` reads `{variable}`, which its input {input_type} does not have",
        span,
        (),
        help,
    )


def template_state_attribute(step: str, name: str, state: object, known: list[str], span: Span) -> Diagnostic:
    """MCE023: a template reads ``state.NAME`` that the state type does not have."""
    import difflib

    matches = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if matches:
        help = "did you mean " + (
            f"`state.{matches[0]}`?" if len(matches) == 1 else "one of " + ", ".join(f"`state.{m}`" for m in matches) + "?"
        )
    elif known:
        help = "the state has " + ", ".join(f"`{k}`" for k in known[:12]) + (", …" if len(known) > 12 else "")
    else:
        help = "declare a `state` whose fields the template reads"
    return error(
        "MCE023",
        f"the template of `{step}` reads `state.{name}`, which the state {state} does not have",
        span,
        (),
        help,
    )


def template_unchecked(step: str, what: str, type_: object, reason: str, span: Span) -> Diagnostic:
    """W004: the fields of a template's input (or state) type cannot be read, so what the template
    reads of it is not checked (a misspelt name fails only at run time)."""
    return warning(
        "W004",
        f"the template of `{step}` is not checked against its {what} {type_}: {reason}",
        span,
        (),
        f"a name the template reads that the {what} does not have fails only at run time (PromptError): "
        f"give the {what} a type whose fields mcec can read from source (it never runs your modules)",
    )


def nothing_streams(step: str, output: Type, span: Span) -> Diagnostic:
    """W005: a ``stream llm`` whose output is neither text nor a class: it streams nothing before
    its value (docs/language.md §14)."""
    return warning(
        "W005",
        f"`{step}` is declared `stream llm`, but its answer {output} has nothing to stream before its value",
        span,
        (),
        "text (`str`) streams as text deltas and a pydantic model or dataclass (or a union of them) as typed "
        "partials; any other answer arrives whole: drop `stream`, or answer with a class that holds it",
    )


def bad_llm_output(step: str, output: Type, problem: str, span: Span) -> Diagnostic:
    """MCE024: an ``llm`` output type the runtime cannot parse a model's answer into."""
    return error(
        "MCE024",
        f"`{step}` cannot produce {output}: {problem}",
        span,
        (),
        "an llm step produces str, a pydantic model or dataclass, a union of those (a choice), "
        "or a type pydantic validates such as Literal[...]",
    )


def bad_ask_answer(step: str, answer: Type, problem: str, span: Span) -> Diagnostic:
    """MCE034: an ``ask`` answer type a person's answer cannot be validated as (§15)."""
    return error(
        "MCE034",
        f"`{step}` cannot take an answer of type {answer}: {problem}",
        span,
        (),
        "a person answers with str, bool, a number, a Literal[...] choice, a pydantic model or dataclass",
    )


def model_option(message: str, span: Span, help: str, labels: tuple[Label, ...] = ()) -> Diagnostic:
    """MCE027: a ``model`` option that is unknown, given twice, of the wrong kind or out of range."""
    return error("MCE027", message, span, labels, help)


# ---------------------------------------------------------------- specs that use each other (§11)


def spec_cycle(specs: list[str], imports: list[tuple[Span, str]]) -> Diagnostic:
    """MCE015: spec ``specs[0]`` uses ``specs[1]`` … which uses ``specs[0]``; ``imports`` are the
    imports on the way (in their files), each with the names it imports."""
    path = " -> ".join([*specs, specs[0]])
    if len(specs) == 1:
        return error(
            "MCE015",
            f"spec `{specs[0]}` uses itself: {path}",
            imports[0][0],
            (Label(imports[0][0], f"imports {imports[0][1]} from this spec's own generated module"),),
            "a spec uses its own pipelines by their names, without an import",
        )
    labels = tuple(
        Label(span, f"`{specs[i]}` uses `{specs[(i + 1) % len(specs)]}` here ({names})")
        for i, (span, names) in enumerate(imports)
    )
    return error(
        "MCE015",
        f"specs use each other in a cycle: {path}",
        imports[0][0],
        labels,
        "a spec cannot use a spec that uses it; move what both need into a third spec that both use",
    )


def used_spec_broken(spec: str, span: Span) -> Diagnostic:
    """MCE029: the spec behind an import has errors (reported in its own file)."""
    return error(
        "MCE029",
        f"`{spec}`, which this spec uses, does not check: its errors are reported in it",
        span,
        (),
        f"fix `{spec}` first (`mcec check {spec}`)",
    )


def not_a_used_pipeline(name: str, spec: str, kind: str | None, span: Span, help: str | None) -> Diagnostic:
    """MCE002: ``from X_mce import name`` where spec ``spec`` declares no pipeline ``name``."""
    message = (
        f"`{name}` is {kind} of `{spec}`, not a pipeline: a spec uses only another spec's pipelines"
        if kind is not None
        else f"`{spec}` declares no pipeline `{name}`"
    )
    return error("MCE002", message, span, (), help)


def used_state_differs(name: str, spec: str, theirs: str, ours: str, span: Span) -> Diagnostic:
    """MCE028: a use, outside an adapter, of a pipeline that runs on another state type than this spec's."""
    return error(
        "MCE028",
        f"pipeline `{name}` of `{spec}` runs on state `{theirs}`, but this spec's state is `{ours}`",
        span,
        (),
        f"run it as a sub-agent: declare a `fn f : {ours} -> {theirs}` that makes its state from this one's, "
        f"and write `local(state=f) {name}` (docs/language.md §11)",
    )


def migration_misfit(message: str, span: Span, help: str | None = None) -> Diagnostic:
    """MCE035: a migration for runs in flight that does not fit what it migrates to (§13)."""
    return error("MCE035", message, span, (), help)


def adapter_misfit(message: str, span: Span, labels: tuple[Label, ...] = (), help: str | None = None) -> Diagnostic:
    """MCE030: a sub-agent adapter ``local(state=f) p`` that does not fit (§11)."""
    return error("MCE030", message, span, labels, help)


def outside_toolbox(message: str, span: Span, labels: tuple[Label, ...] = (), help: str | None = None) -> Diagnostic:
    """MCE031: a toolbox entry that cannot be one, a ``spawn`` of no toolbox, or a plan that
    names something outside its toolbox (§12)."""
    return error("MCE031", message, span, labels, help)


def plan_too_big(message: str, span: Span, help: str) -> Diagnostic:
    """MCE032: a plan beyond the bounds of §12 (text, names, nesting)."""
    return error("MCE032", message, span, (), help)


def error_outside_toolbox(error_type: Type, toolbox: str, span: Span, labels: tuple[Label, ...]) -> Diagnostic:
    """MCE013 in a plan: an error the plan may fail with that its toolbox does not declare."""
    return error(
        "MCE013",
        f"this plan may fail with `{error_type}`, which toolbox `{toolbox}` does not declare",
        span,
        labels,
        f"handle it in the plan with `catch {error_type} => …`, or use entries that cannot fail with it",
    )


# ---------------------------------------------------------------- durable runs (§13)


def not_recordable(role: str, type_: Type, why: str, span: Span) -> Diagnostic:
    """MCE033: a value a durable run records (``role``: ``the state``, ``the output of step `x```)
    whose type cannot be recorded as JSON, and ``why``."""
    return error(
        "MCE033",
        f"a durable run cannot record {role}, of type {type_}, as JSON: {why}",
        span,
        (),
        "a durable run records every effect's value and error, and the state, as JSON through pydantic "
        "(docs/language.md §13): use builtins, dataclasses, pydantic models, TypedDicts and enums, and keep "
        "functions, handles and other live objects out of recorded values (look them up in the step instead)",
    )
