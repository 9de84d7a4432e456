"""Build-time checks of ``llm`` and ``model`` declarations (docs/language.md §10): MCE023, MCE024, MCE027.

The runtime owns the rules: :func:`agentmonad.llm.template_variables` parses a
template with Jinja2's own parser (the same sandboxed environment the step
renders with) and :func:`agentmonad.llm.output_problem` says whether a type
can be parsed from a model's answer. This module only translates between the
checker's types and spans and those functions. Jinja2 comes with the ``llm``
extra; without it the checker says so (MCE023) instead of failing.
"""

from __future__ import annotations

import os
import re
import stat
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ForwardRef, Literal, assert_never

from mcec import syntax
from mcec.check import report
from mcec.check.pyindex import Missing, PythonIndex
from mcec.check.typed import OptionValue
from mcec.check.types import Builtin, ClassRef, Generic, Lit, Type, Union
from mcec.diagnostics import Diagnostic, Label
from mcec.span import Span

__all__ = [
    "MAX_TEMPLATE_BYTES",
    "MODEL_OPTIONS",
    "TemplateSource",
    "check_model_options",
    "check_output",
    "check_streams",
    "check_template",
    "read_template",
    "templated",
]

@dataclass(frozen=True, slots=True)
class TemplateSource:
    """A template's text and how messages name it (its path, for a ``file`` template)."""

    text: str
    name: str | None


#: The largest template file read (1 MiB): a prompt is text a model reads, and a bigger file
#: (or a device such as /dev/zero) would be read whole into memory by every check and build.
MAX_TEMPLATE_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Templated:
    """A declaration's name, template and input type (as written), for a declaration other than
    ``llm`` that has a template (an ``ask``'s question, docs/language.md §15): the template is
    read and checked as an ``llm``'s is, over the input's fields and ``state``."""

    name: syntax.Name
    template: syntax.Template
    input: syntax.TypeExpr


def templated(decl: syntax.Decl) -> syntax.LlmDecl | Templated | None:
    """``decl`` as a declaration whose template is read as an ``llm``'s: an ``llm`` itself, an
    ``ask`` with a template (its question); None for the others, and for an ask without a
    template (its question is shown as its JSON). The checker and the language server's
    completion in templates both find templates through this."""
    match decl:
        case syntax.LlmDecl():
            return decl
        case syntax.AskDecl():
            return None if decl.template is None else Templated(decl.name, decl.template, decl.input)
        case (
            syntax.FromImport()
            | syntax.ModuleImport()
            | syntax.StateDecl()
            | syntax.ErrorDecl()
            | syntax.StepDecl()
            | syntax.FnDecl()
            | syntax.ServerDecl()
            | syntax.ToolDecl()
            | syntax.ModelDecl()
            | syntax.ToolboxDecl()
            | syntax.RenameDecl()
            | syntax.PipelineDecl()
        ):
            return None
        case _:
            assert_never(decl)


def read_template(decl: syntax.LlmDecl | Templated, spec_path: str) -> TemplateSource | Diagnostic:
    """The template of ``decl``: inline as written, or a ``file`` read relative to the spec
    (MCE023 if it is missing, not a regular file, over :data:`MAX_TEMPLATE_BYTES` or not UTF-8)."""
    template = decl.template
    if not template.is_file:
        return TemplateSource(template.text, None)
    path = Path(spec_path).parent / template.text
    read = _read_bounded(path)
    if isinstance(read, str):
        return TemplateSource(read, template.text)
    reason, help = read
    return report.template_file_unreadable(decl.name.text, template.text, str(path), reason, template.span, help)


def _read_bounded(path: Path) -> str | tuple[str, str | None]:
    """The text of the regular file at ``path``, or why not (and a help, when the path is not the problem).

    The file is opened without blocking (a FIFO would wait for a writer) and what it is is asked
    of the open file, not of the path (which could be swapped in between); at most one byte over
    the limit is ever read, so a file that grows, or a device, cannot exhaust memory."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return "does not exist", None
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})", None
    try:
        mode = os.fstat(fd)
        if not stat.S_ISREG(mode.st_mode):
            return f"is not a regular file (it is {_file_kind(mode.st_mode)})", _TEMPLATE_FILE_HELP
        if mode.st_size > MAX_TEMPLATE_BYTES:
            return f"is too big ({mode.st_size:,} bytes)", _TEMPLATE_FILE_HELP
        data = _read_at_most(fd, MAX_TEMPLATE_BYTES + 1)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})", None
    finally:
        os.close(fd)
    if len(data) > MAX_TEMPLATE_BYTES:
        return f"is too big (over {MAX_TEMPLATE_BYTES:,} bytes)", _TEMPLATE_FILE_HELP
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})", "save the template as UTF-8"


def _read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes of the open file ``fd`` (less at its end)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


_TEMPLATE_FILE_HELP = f"a template file is a regular text file of at most {MAX_TEMPLATE_BYTES:,} bytes (1 MiB)"


def _file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((word for test, word in kinds if test(mode)), "not a regular file")


def check_template(
    decl: syntax.LlmDecl | Templated, source: TemplateSource, input_type: Type, index: PythonIndex | None, state: Type | None = None
) -> list[Diagnostic]:
    """MCE023 for a template that does not parse, reads a variable its input does not give, or
    reads ``state.NAME`` that the state does not have; W004 where the input's or the state's
    fields cannot be read (the template is then not checked against them, and says so).

    ``state`` is the spec's state type (None: a spec without one runs on ``None``). With no
    index (``index=False``: no Python is read at all) classes are not asked about."""
    try:
        from agentmonad.llm import template_variables

        info = template_variables(source.text)
    except ImportError:
        return [report.template_needs_jinja(decl.name.text, decl.template.span)]
    if info.error is not None:
        span = _line_span(decl.template, source, info.line)
        return [report.template_syntax(decl.name.text, info.error, info.line, source.name, span)]
    found: list[Diagnostic] = []
    read = sorted(info.variables - {"state"})
    known = _variables(input_type, index)
    if isinstance(known, str):
        if read:
            span = _variable_span(decl.template, source, read[0])
            found.append(report.template_unchecked(decl.name.text, "input", input_type, known, span))
    elif known is not None:  # None: no Python is read, or the input's module is missing (MCE002)
        for variable in read:
            if variable not in known:
                span = _variable_span(decl.template, source, variable)
                found.append(report.template_variable(decl.name.text, variable, input_type, sorted(known | {"state"}), span))
    if "state" in info.variables and index is not None:
        found.extend(_check_state_reads(decl, source, state, index))
    return found


def _check_state_reads(decl: syntax.LlmDecl | Templated, source: TemplateSource, state: Type | None, index: PythonIndex) -> list[Diagnostic]:
    """MCE023 for each ``state.NAME`` (or ``state["NAME"]``) the state type does not have; W004
    when its attributes cannot be read."""
    reads = _state_reads(source.text)
    if not reads:
        return []
    attributes = _attributes(state, index)
    if attributes is None:
        return []  # a dict or a union: what it holds is not a fixed set of names
    shown = "None" if state is None else state
    if isinstance(attributes, str):
        span = _variable_span(decl.template, source, f"state.{reads[0]}")
        return [report.template_unchecked(decl.name.text, "state", shown, attributes, span)]
    found: list[Diagnostic] = []
    for name in dict.fromkeys(reads):  # each name once, in the order read
        if name not in attributes:
            span = _variable_span(decl.template, source, f"state.{name}")
            public = sorted(a for a in attributes if not a.startswith("_") and not a.startswith("model_"))
            found.append(report.template_state_attribute(decl.name.text, name, shown, public, span))
    return found


def _state_reads(text: str) -> list[str]:
    """The names a template reads of ``state`` directly (``state.NAME``, ``state["NAME"]``), in
    order; none when the template binds ``state`` itself (a loop variable, a ``set``)."""
    from jinja2 import Environment, nodes

    tree = Environment().parse(text)
    if any(n.name == "state" and n.ctx != "load" for n in tree.find_all(nodes.Name)):
        return []
    reads: list[tuple[int, int, str]] = []
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        match node:
            case nodes.Getattr(node=nodes.Name(name="state"), attr=str(attr)):
                reads.append((node.lineno, 0, attr))
            case nodes.Getitem(node=nodes.Name(name="state"), arg=nodes.Const(value=str(key))):
                reads.append((node.lineno, 1, key))
            case _:
                pass  # a read of something else, or of state by a computed key
    return [name for _, _, name in sorted(reads, key=lambda r: r[0])]


def _variables(input_type: Type, index: PythonIndex | None) -> set[str] | str | None:
    """The variables an input of ``input_type`` gives a template, or why they cannot be known
    (None: not asked, with no index, or its module is missing, which is reported already)."""
    match input_type:
        case ClassRef():
            if index is None:
                return None
            members = index.members(input_type.path)
            if isinstance(members, str):
                return None if _reported(input_type, index) else members
            return set(members.fields) if members.record else {"value"}
        case Builtin(name="Any"):
            return "it may be any value (a pydantic model or a dataclass gives its fields, anything else `value`)"
        case Builtin() | Generic() | Lit() | Union():
            return {"value"}
        case _:
            assert_never(input_type)


def _reported(ref: ClassRef, index: PythonIndex) -> bool:
    """Is the module of ``ref`` missing? Its import is MCE002 already: a template over it is not
    checked, and saying so again (W004) would only repeat that."""
    module = ref.path.rpartition(".")[0]
    return isinstance(index.module(module), Missing) if module else False


def _attributes(state: Type | None, index: PythonIndex) -> frozenset[str] | str | None:
    """The names ``state.NAME`` can read of a state of type ``state``: a set, why it cannot be
    known, or None when the names are not fixed by the type (a dict's keys, a union's members)."""
    match state:
        case None:
            return frozenset()  # no `state` declared: the state is None, which has nothing to read
        case ClassRef():
            members = index.members(state.path)
            if isinstance(members, str):
                return None if _reported(state, index) else members
            return members.attributes
        case Builtin(name="Any"):
            return "it may be any value"
        case Builtin(name=name):
            return frozenset(dir(python_type(state))) if name not in ("Never",) else frozenset()
        case Generic(head="dict") | Union() | Lit():
            return None
        case Generic(head=head):
            return frozenset(dir({"list": list, "set": set, "tuple": tuple}.get(head, object)))
        case _:
            assert_never(state)


def _line_span(template: syntax.Template, source: TemplateSource, line: int | None) -> Span:
    """The span of ``line`` (1-based) of a triple-quoted template, else the whole template."""
    if not template.triple or line is None:
        return template.span
    start = template.span.start + 3
    lines = source.text.split("\n")
    if not 1 <= line <= len(lines):
        return template.span
    offset = start + sum(len(text) + 1 for text in lines[: line - 1])
    return template.span.at(offset, offset + max(len(lines[line - 1]), 1))


def _variable_span(template: syntax.Template, source: TemplateSource, variable: str) -> Span:
    """Where ``variable`` is first read in a triple-quoted template, else the whole template."""
    if not template.triple:
        return template.span
    found = re.search(rf"(?<![A-Za-z0-9_.]){re.escape(variable)}(?![A-Za-z0-9_])", source.text)
    if found is None:
        return template.span
    start = template.span.start + 3 + found.start()
    return template.span.at(start, start + len(variable))


def check_output(decl: syntax.LlmDecl, output: Type) -> Diagnostic | None:
    """MCE024 when the runtime cannot parse a model's answer into ``output``."""
    from agentmonad.llm import output_problem

    problem = output_problem(python_type(output))
    if problem is None:
        return None
    return report.bad_llm_output(decl.name.text, output, problem, decl.output.span)


def check_answer(decl: syntax.AskDecl, answer: Type) -> Diagnostic | None:
    """MCE034 when the runtime cannot validate a person's answer as ``answer`` (docs/language.md §15)."""
    from agentmonad.llm import output_problem

    problem = output_problem(python_type(answer))
    if problem is None:
        return None
    # the runtime's words are about a model's answer; here a person answers
    problem = problem.replace("the model", "a person").replace("a model's", "a person's").replace("a model", "a person")
    return report.bad_ask_answer(decl.name.text, answer, problem, decl.output.span)


def check_streams(decl: syntax.LlmDecl, output: Type) -> Diagnostic | None:
    """W005 when a ``stream llm``'s output is neither text nor made of classes (docs/language.md §14):
    the runtime streams ``str`` (or a union's ``str``) as text and record classes as partials."""
    if not decl.stream:
        return None
    members = output.members if isinstance(output, Union) else (output,)
    if any(m == Builtin("str") or isinstance(m, ClassRef) for m in members):
        return None
    return report.nothing_streams(decl.name.text, output, decl.output.span)


def python_type(tp: Type) -> Any:
    """``tp`` as a typing object, classes as ``ForwardRef``s of their dotted paths (no user code is imported)."""
    match tp:
        case Builtin(name=name):
            builtins: dict[str, Any] = {
                "str": str,
                "int": int,
                "float": float,
                "bool": bool,
                "bytes": bytes,
                "None": type(None),
                "Any": typing.Any,
                "Never": typing.Never,
            }
            return builtins[name]
        case ClassRef():
            return ForwardRef(tp.path)
        case Lit(value=value):
            return Literal[value]
        case Generic(head=head, args=args):
            heads: dict[str, Any] = {"list": list, "set": set, "dict": dict, "tuple": tuple}
            return heads[head][tuple(python_type(a) for a in args)]
        case Union(members=members):
            return typing.Union[tuple(python_type(m) for m in members)]
        case _:
            assert_never(tp)


# ---------------------------------------------------------------- model options (MCE027)

OptionKind = Literal["number", "count", "positive count", "seconds", "url", "env var", "text"]

#: The options ``model n = openai "ID" (…)`` takes: each one's kind of value (the keyword
#: arguments of ``agentmonad.llm.Model`` of the same names).
MODEL_OPTIONS: dict[str, OptionKind] = {
    "temperature": "number",
    "max_tokens": "positive count",
    "max_repairs": "count",
    "timeout": "seconds",
    "max_retries": "count",
    "base_url": "url",
    "api_key_env": "env var",
    "system": "text",
}

#: What an option of each kind takes, for messages.
_WANTS: dict[OptionKind, str] = {
    "number": "a number from 0 to 2",
    "count": "a whole number ≥ 0",
    "positive count": "a whole number ≥ 1",
    "seconds": "a number of seconds above 0",
    "url": 'a URL in quotes, starting with http:// or https:// (like "http://127.0.0.1:8000/v1")',
    "env var": 'the name of an environment variable, in quotes (like "OPENAI_API_KEY")',
    "text": "a string",
}

#: Names under which a key might be written into a spec: a spec never holds one.
_KEY_NAMES = frozenset({"api_key", "key", "openai_api_key", "token", "secret"})
_ENV_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _option_value(kind: OptionKind, value: OptionValue) -> OptionValue | None:
    """``value`` as the option of ``kind`` takes it (ints become floats where a number is meant), or None."""
    match kind:
        case "number":
            if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 2:
                return float(value)
            return None
        case "count" | "positive count":
            least = 1 if kind == "positive count" else 0
            return value if isinstance(value, int) and value >= least else None
        case "seconds":
            return float(value) if isinstance(value, int | float) and value > 0 else None
        case "url":
            return value if isinstance(value, str) and value.startswith(("http://", "https://")) and len(value) > 8 else None
        case "env var":
            return value if isinstance(value, str) and _ENV_VAR.fullmatch(value) else None
        case "text":
            return value if isinstance(value, str) else None
        case _:
            assert_never(kind)


def check_model_options(decl: syntax.ModelDecl) -> tuple[tuple[tuple[str, OptionValue], ...], list[Diagnostic]]:
    """The valid options of ``decl`` (as ``Model``'s keyword arguments), and MCE027 for the others:
    an unknown name (with close matches; a key gets its own help), a name given twice, a value
    of the wrong kind or out of range."""
    import difflib

    model = decl.name.text
    valid: list[tuple[str, OptionValue]] = []
    problems: list[Diagnostic] = []
    first: dict[str, syntax.ModelOption] = {}
    for option in decl.options:
        name = option.name.text
        kind = MODEL_OPTIONS.get(name)
        if kind is None:
            if name.lower() in _KEY_NAMES:
                help = (
                    "a spec never holds a key: put it in the environment and name the variable, "
                    'like `api_key_env="MY_KEY"` (default: OPENAI_API_KEY), or give it at run time '
                    "(LLMConfig / ModelSettings)"
                )
            else:
                close = difflib.get_close_matches(name, list(MODEL_OPTIONS), n=1, cutoff=0.6)
                help = f"did you mean `{close[0]}`?" if close else "a model takes " + ", ".join(f"`{o}`" for o in MODEL_OPTIONS)
            problems.append(report.model_option(f"model `{model}` has no option `{name}`", option.name.span, help))
            continue
        if name in first:
            problems.append(
                report.model_option(
                    f"option `{name}` of model `{model}` is given twice",
                    option.name.span,
                    "give each option once",
                    (Label(first[name].name.span, "first given here"),),
                )
            )
            continue
        first[name] = option
        value = _option_value(kind, option.value)
        if value is None:
            problems.append(
                report.model_option(
                    f"option `{name}` of model `{model}` takes {_WANTS[kind]}, not {_written(option.value)}",
                    option.value_span,
                    f"write `{name}=` with {_WANTS[kind]}",
                )
            )
            continue
        valid.append((name, value))
    return tuple(valid), problems


def _written(value: OptionValue) -> str:
    """An option's value as a message shows it: numbers as written, never a string's text
    (it might be a key written in the wrong place; the source line shows what it is)."""
    if isinstance(value, str):
        return "this string"
    return repr(value)
