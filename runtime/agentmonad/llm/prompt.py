"""Prompt templates: Jinja2, sandboxed, strict (docs/language.md §10).

A template is rendered in Jinja2's ``ImmutableSandboxedEnvironment`` (the
``SandboxedEnvironment`` that also refuses to call methods that modify lists,
dicts and sets) with ``StrictUndefined``: a variable or attribute the values do
not have is an error, never an empty string. No autoescaping (a prompt is not
HTML); otherwise Jinja2's defaults (line endings become ``\\n``, and one
trailing newline is dropped).

The variables are the fields of the input value — a pydantic model's fields
(and computed fields) or a dataclass's fields — or, for any other input type,
the variable ``value``; and ``state``, the run's state, read-only. ``state``
always means the state: an input field of that name is not visible (the
checker reports it). Jinja2's own globals (``range``, ``dict``, ``namespace``,
…) are there too.

For the checker, :func:`template_variables` reads a template without rendering
it: the top-level variables it reads (those it does not set itself, less
Jinja2's globals), or its syntax error with the line (MCE023).

``jinja2`` is imported when a template is first compiled.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._show import exception_text
from .errors import PromptError

if TYPE_CHECKING:
    from jinja2 import Environment, Template

__all__ = ["Prompt", "TemplateInfo", "template_variables", "input_variables", "STATE_VARIABLE", "VALUE_VARIABLE"]

#: The variable that holds the run's state.
STATE_VARIABLE = "state"
#: The variable that holds an input value that has no fields.
VALUE_VARIABLE = "value"

_ENV: Environment | None = None


def _environment() -> Environment:
    global _ENV
    if _ENV is None:
        try:
            from jinja2 import StrictUndefined
            from jinja2.sandbox import ImmutableSandboxedEnvironment
        except ImportError as exc:  # the runtime alone (pydantic only): the `llm` extra brings jinja2
            raise ImportError(
                f"prompt templates (`llm` steps, `ask` with a template) need the `jinja2` package ({exc}); "
                "pip install 'agentmonad[llm]'"
            ) from exc
        _ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    return _ENV


@dataclass(frozen=True)
class TemplateInfo:
    """What :func:`template_variables` found: the variables read, or the syntax error.

    ``line`` is 1-based within the template text; ``variables`` is empty when
    there is an ``error``.
    """

    variables: frozenset[str]
    error: str | None = None
    line: int | None = None


def template_variables(text: str) -> TemplateInfo:
    """The top-level variables ``text`` reads, or its syntax error and line (for MCE023).

    >>> template_variables("{% for n in notes %}- {{ n }} {{ state.turns }}{% endfor %}").variables == {"notes", "state"}
    True
    >>> template_variables("Hello {{ name ").line
    1
    """
    from jinja2 import TemplateSyntaxError, meta

    env = _environment()
    try:
        tree = env.parse(text)
    except TemplateSyntaxError as exc:
        return TemplateInfo(frozenset(), exc.message or str(exc), exc.lineno)
    return TemplateInfo(frozenset(meta.find_undeclared_variables(tree)) - frozenset(env.globals))


def input_variables(value: object) -> dict[str, Any]:
    """The template variables an input value gives (without ``state``)."""
    model_fields = getattr(type(value), "model_fields", None)
    if isinstance(model_fields, dict) and hasattr(value, "model_dump"):
        names = list(model_fields)
        computed = getattr(type(value), "model_computed_fields", None)
        if isinstance(computed, dict):
            names.extend(computed)
        return {n: getattr(value, n) for n in names}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return {VALUE_VARIABLE: value}


def _template_line(exc: BaseException, name: str) -> int | None:
    """The template line a rendering error happened at, from the traceback Jinja2 rewrites."""
    tb = exc.__traceback__
    line: int | None = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == name:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class Prompt:
    """A compiled template: ``Prompt(text, name)``, then ``render(value, state)``.

    Compiling raises :class:`PromptError` for a syntax error; rendering raises
    it for a variable or attribute that is missing, a sandbox violation, or an
    exception from the values' own code, with the template line where known.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Ticket:
    ...     subject: str
    >>> Prompt("Subject: {{ subject }} (turn {{ state }})", "<classify>").render(Ticket("printer"), 3)
    'Subject: printer (turn 3)'
    """

    __slots__ = ("name", "text", "_template", "_filename")

    def __init__(self, text: str, name: str = "<template>") -> None:
        env = _environment()  # first: without jinja2, its message says which extra brings it
        from jinja2 import TemplateSyntaxError

        self.name = name
        self.text = text
        # Jinja2 rewrites tracebacks to point into the template under this file name.
        self._filename = f"<prompt {name}>"
        try:
            code = env.compile(text, name=name, filename=self._filename)
        except TemplateSyntaxError as exc:
            raise PromptError(name, exc.lineno, exc.message or str(exc)) from None
        self._template: Template = env.template_class.from_code(env, code, env.make_globals(None), None)

    def render(self, value: object, state: object) -> str:
        """The prompt for ``value``, with ``state`` read-only."""
        variables = input_variables(value)
        variables[STATE_VARIABLE] = state
        try:
            return self._template.render(variables)
        except Exception as exc:
            from jinja2 import TemplateError

            message = (exc.message or str(exc)) if isinstance(exc, TemplateError) else exception_text(exc)
            raise PromptError(self.name, _template_line(exc, self._filename), str(message)) from exc

    def __repr__(self) -> str:
        return f"Prompt(name={self.name!r})"
