"""Asking a person: the runtime half of the ``ask`` declaration (docs/language.md §15).

Generated code and the interpreter call :func:`ask` for an ``ask`` step. It is an effect of
kind ``"human"`` through the effect seam (:mod:`agentmonad.effects`), so the hooks see it like
any other: the event sink times it; a journal (a durable run) may answer it from its record,
or record the open question and stop the run (it finds the question in the call handed to it:
an :class:`Asking`, whose ``question`` is the :class:`Question`).

Who answers is the run's :class:`~agentmonad.context.HumanInput` (``RunContext.human``,
attached with :func:`agentmonad.context.hooks` ``(human=…)``): ``mcec run`` attaches
:class:`ConsoleHuman` (the terminal), tests a ``ScriptedHuman`` (:mod:`agentmonad.testing`).
What can go wrong is a typed error, declared by every ``ask`` step (the checker adds them to
its error set):

- :class:`NoOneToAsk` — no handler attached and no journal to wait in: nobody can answer
  (a run never hangs waiting for a person nobody asks);
- :class:`NoAnswer` — the deadline passed (``within S``), or the handler's input ended
  (end of file at the terminal) before an answer came;
- :class:`BadAnswer` — a non-interactive handler gave an answer that does not validate against
  the answer type (an interactive one asks again instead: it validates with
  :meth:`Question.parse` / :meth:`Question.parse_text` before it returns).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar, cast, final

from ._show import safe_str, short_repr
from .context import current_run_context
from .effects import perform
from .errors import _ValueError
from .outcome import Ok, Site

if TYPE_CHECKING:  # pydantic is imported where an answer is validated: `import agentmonad` stays light
    from pydantic import TypeAdapter, ValidationError

__all__ = [
    "Question",
    "Asking",
    "ask",
    "NoOneToAsk",
    "NoAnswer",
    "BadAnswer",
    "ERRORS",
    "ConsoleHuman",
    "ask_step",
]

_T = TypeVar("_T")


# ------------------------------------------------------------------------- errors


class NoOneToAsk(_ValueError):
    """The ask step ``name`` ran where nobody can answer: no human-input handler is attached
    to the run (and no journal to wait in).

    >>> str(NoOneToAsk("approve"))
    'no one to ask approve: the run has no human-input handler'
    """

    _fields = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(name)

    def __str__(self) -> str:
        return f"no one to ask {safe_str(self.name)}: the run has no human-input handler"


class NoAnswer(_ValueError):
    """No answer came to the ask step ``name``: ``reason`` says why (its deadline of
    ``seconds`` passed: ``"deadline"``; the handler's input ended: ``"closed"``; the person
    declined or cancelled: ``"decline"``, ``"cancel"``; the handler's channel answered with an
    error, e.g. an MCP client's JSON-RPC error: ``"error"``).

    >>> str(NoAnswer("approve", "deadline", 3600))
    'no answer to approve within 3600 s'
    >>> str(NoAnswer("approve", "closed", None))
    'no answer to approve: the input ended'
    >>> str(NoAnswer("approve", "decline", None))
    'no answer to approve: declined'
    """

    _fields = ("name", "reason", "seconds")

    def __init__(self, name: str, reason: str, seconds: float | None) -> None:
        self.name = name
        self.reason = reason
        self.seconds = seconds
        super().__init__(name, reason, seconds)

    def __str__(self) -> str:
        if self.reason == "deadline":
            return f"no answer to {safe_str(self.name)} within {safe_str(self.seconds)} s"
        why = _NO_ANSWER_WHY.get(self.reason, self.reason) if isinstance(self.reason, str) else self.reason
        return f"no answer to {safe_str(self.name)}: {safe_str(why)}"


_NO_ANSWER_WHY = {
    "closed": "the input ended",
    "decline": "declined",
    "cancel": "cancelled",
    "error": "the client answered with an error",
}


class BadAnswer(_ValueError):
    """The handler answered the ask step ``name`` with ``answer``, which does not validate
    against the answer type (``errors``: pydantic's error messages).

    >>> str(BadAnswer("approve", "maybe", ["Input should be a valid boolean"]))
    "bad answer to approve: 'maybe': Input should be a valid boolean"
    """

    _fields = ("name", "answer", "errors")

    def __init__(self, name: str, answer: object, errors: list[str]) -> None:
        self.name = name
        self.answer = answer
        self.errors = errors
        super().__init__(name, answer, errors)

    def __str__(self) -> str:
        return f"bad answer to {safe_str(self.name)}: {short_repr(self.answer)}: {'; '.join(map(safe_str, self.errors))}"


#: The errors every ``ask`` step declares (its ``errors=`` when lifted).
ERRORS: tuple[type[Exception], ...] = (NoOneToAsk, NoAnswer, BadAnswer)


# ------------------------------------------------------------------------- the question


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(answer: Any) -> TypeAdapter[Any]:
    """The pydantic adapter of ``answer``, one per type: building one walks the type."""
    from pydantic import TypeAdapter

    try:
        return _ADAPTERS[answer]
    except KeyError:
        adapter = _ADAPTERS[answer] = TypeAdapter(answer)
        return adapter
    except TypeError:  # an unhashable type form
        return TypeAdapter(answer)


def _errors(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(map(str, e['loc'])) or 'answer'}: {e['msg']}" for e in exc.errors()]


@final
@dataclass(frozen=True, slots=True)
class Question(Generic[_T]):
    """One question to a person: what a :class:`~agentmonad.context.HumanInput` handler gets.

    ``name`` is the ask step's name, ``site`` where it is declared, ``index`` the element
    indices of the ``each``/``par`` branches it is asked in (outermost first), ``payload`` the
    step's input (the question value), ``answer`` the answer type and ``prompt`` the rendered
    template (``None``: the spec gave none). :attr:`schema` and :attr:`payload_json` are the
    JSON forms a handler shows or sends (a terminal, an MCP elicitation, a journal)."""

    site: Site
    name: str
    payload: object
    answer: type[_T]
    prompt: str | None
    index: tuple[int, ...] = ()
    deadline: float | None = field(default=None)

    @property
    def schema(self) -> dict[str, Any]:
        """The answer type's JSON schema."""
        return _adapter(self.answer).json_schema()

    @property
    def payload_json(self) -> object:
        """The question value as JSON data."""
        return _adapter(type(self.payload)).dump_python(self.payload, mode="json")

    def parse(self, raw: object) -> _T:
        """``raw`` (JSON data or a Python value) as the answer type; raises pydantic's
        ``ValidationError`` if it does not validate."""
        return cast("_T", _adapter(self.answer).validate_python(raw))

    def parse_text(self, text: str) -> _T:
        """An answer typed as text: JSON for the answer type, or, for a ``str`` answer, the
        text itself when it is not a JSON string. Raises ``ValidationError``."""
        adapter = _adapter(self.answer)
        if self.answer is str:
            stripped = text.strip()
            if stripped.startswith('"'):
                return cast("_T", adapter.validate_json(stripped))
            return cast("_T", stripped)
        return cast("_T", adapter.validate_json(text))

    def text(self) -> str:
        """The question as a person reads it: the prompt (or the question value as JSON)."""
        if self.prompt is not None:
            return self.prompt
        return json.dumps(self.payload_json, indent=2, ensure_ascii=False)


@final
class Asking:
    """The call the seam runs for a ``"human"`` effect: asks the run's handler
    :attr:`question` (the effect carries it too, :attr:`agentmonad.events.Effect.question`)."""

    __slots__ = ("question", "_handler")

    def __init__(self, question: Question[Any], handler: Callable[[Question[Any]], Awaitable[object]] | None) -> None:
        self.question = question
        self._handler = handler

    async def __call__(self) -> object:
        question = self.question
        if self._handler is None:
            raise NoOneToAsk(question.name)
        try:
            if question.deadline is None:
                raw = await self._handler(question)
            else:
                async with asyncio.timeout(question.deadline):
                    raw = await self._handler(question)
        except TimeoutError:
            raise NoAnswer(question.name, "deadline", question.deadline) from None
        except EOFError:
            raise NoAnswer(question.name, "closed", question.deadline) from None
        from pydantic import ValidationError

        try:
            return question.parse(raw)
        except ValidationError as exc:
            raise BadAnswer(question.name, raw, _errors(exc)) from None


async def ask(site: Site, name: str, question: object, answer: type[_T], prompt: str | None, deadline: float | None) -> _T:
    """Ask a person ``question`` (the ask step ``name`` at ``site``) and return their answer,
    validated as ``answer``. ``prompt`` is the rendered template (``None``: none), ``deadline``
    the seconds to wait (``None``: no limit). Raises :class:`NoOneToAsk`, :class:`NoAnswer`,
    :class:`BadAnswer` (see the module docstring)."""
    run = current_run_context()
    if not run.hooked:
        raise NoOneToAsk(name)
    human = run.human
    asked = Question(site, name, question, answer, prompt, run.index, deadline)
    call = Asking(asked, human.ask if human is not None else None)
    return cast("_T", await perform(run, "human", site, call, asked))


# ------------------------------------------------------------------------- the terminal


@final
class ConsoleHuman:
    """Asks on a terminal (``mcec run``): prints the question and the expected form (the
    answer's JSON schema, or the choices), reads a line, and asks again until it validates.
    End of input is :class:`NoAnswer`. ``input``/``output`` default to stdin/stderr."""

    def __init__(self, input: IO[str] | None = None, output: IO[str] | None = None) -> None:
        self._input = input
        self._output = output
        # one question at a time at a terminal, even from par/each branches
        self._lock = asyncio.Lock()

    async def ask(self, question: Question[Any]) -> object:
        """Ask ``question`` until the answer validates; the validated answer."""
        async with self._lock:
            self._say(_heading(question))
            from pydantic import ValidationError

            while True:
                line = await asyncio.to_thread(self._readline)
                if not line:
                    raise EOFError
                try:
                    return question.parse_text(line)
                except ValidationError as exc:
                    self._say("not a valid answer: " + "; ".join(_errors(exc)) + "\nanswer again> ")

    def _readline(self) -> str:
        return (self._input or sys.stdin).readline()

    def _say(self, text: str) -> None:
        out = self._output or sys.stderr
        out.write(text)
        out.flush()


def _heading(question: Question[Any]) -> str:
    where = f" [{', '.join(map(str, question.index))}]" if question.index else ""
    return (
        f"\n? {question.name}{where} ({question.site.file}:{question.site.line})\n"
        f"{question.text()}\n"
        f"answer ({_form(question)}) > "
    )


def _form(question: Question[Any]) -> str:
    """The expected form of an answer, short: its choices, a word for simple types, else the schema."""
    schema = question.schema
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    choices = schema.get("anyOf", ())
    if choices and all("const" in c or "enum" in c for c in choices):  # a union of Literals
        values = [v for c in choices for v in (c["enum"] if "enum" in c else [c["const"]])]
        return "one of " + ", ".join(json.dumps(v) for v in values)
    match schema.get("type"):
        case "boolean":
            return "true or false"
        case "string":
            return "text"
        case "integer" | "number":
            return "a number"
        case _:
            return "JSON: " + json.dumps(schema, separators=(",", ":"))


# ------------------------------------------------------------------------- the step


def ask_step(
    name: str,
    answer: Any,
    template: str | None = None,
    *,
    within: float | None = None,
    site: Site | None = None,
    template_name: str | None = None,
) -> Callable[[Any, Any], Awaitable[Ok[Any, Any]]]:
    """The async step of ``ask name : A -> B [= TEMPLATE] [within S]`` (docs/language.md §15):
    renders ``template`` (Jinja2, as an ``llm`` step's: the input's fields and ``state``) and
    :func:`ask` s the person; the state comes back unchanged. Raises :data:`ERRORS` (the step
    declares them). No effect of its own besides the ``"human"`` one :func:`ask` performs.
    ``answer`` is any type form pydantic validates (a ``Literal[…]`` is no ``type``): the
    generated binding's annotation gives the step its type."""
    prompt = None
    if template is not None:
        from .llm.prompt import Prompt  # jinja2: only a step with a template needs it

        prompt = Prompt(template, template_name or f"<{name}>")
    where = site if site is not None else Site(name, "<unknown>", 0, 0)

    async def step(state: Any, value: Any) -> Ok[Any, Any]:
        rendered = prompt.render(value, state) if prompt is not None else None
        return Ok(await ask(where, name, value, answer, rendered, within), state)

    step.__name__ = step.__qualname__ = f"ask_{name}"
    step.__doc__ = f"Ask a person {name} -> {getattr(answer, '__name__', answer)}."
    return step
