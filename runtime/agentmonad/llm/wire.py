"""What an LLM step sends and gets back, independent of any client library.

An :class:`LLMRequest` is one chat-completions request as the step built it:
the messages (OpenAI's chat format, plain dicts), the functions offered
(:class:`ToolSpec`, for a union output), the ``tool_choice``, the
``response_format`` (for structured output) and the model's options. A
:class:`Backend` answers it with an :class:`LLMReply` (text, function calls, a
refusal, the token counts) or raises ``LLMUnavailable``. The real backend
speaks to an OpenAI-compatible endpoint with ``AsyncOpenAI``; the scripted
models of ``agentmonad.testing`` are backends too, so a test sees exactly the
requests a real model would.

Whatever backend answered, a step reads only a reply :func:`reply_problem`
finds nothing wrong with (text or ``None`` where text belongs, token counts
that are whole numbers ≥ 0); anything else is an invalid response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._show import safe_str
from ..usage import is_token_count as is_token_count  # the core counts tokens for `budget`

__all__ = [
    "ToolSpec",
    "ToolCall",
    "LLMRequest",
    "LLMReply",
    "Backend",
    "Deltas",
    "StreamingBackend",
    "reply_problem",
    "json_kind",
    "is_token_count",
]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One function offered to the model: a member of a union output type.

    ``name`` is the class name, ``parameters`` its JSON schema.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The ``tools`` entry of a chat-completions request."""
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function call in a reply: the function's name and its arguments as JSON text."""

    name: str
    arguments: str
    id: str = ""


@dataclass(frozen=True, slots=True)
class LLMRequest:
    """One request of an LLM step (see the module docstring).

    ``model`` is the spec's name of the model, ``model_id`` what is sent as
    ``model``, ``step`` the step's name, ``attempt`` 1 for the first request
    of a call and one more for each repair. ``params`` holds the other body
    fields (``temperature``, ``max_tokens``, …).
    """

    model: str
    model_id: str
    step: str
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str | None = None
    response_format: Mapping[str, Any] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    attempt: int = 1

    @property
    def prompt(self) -> str:
        """The text of the last ``user`` message (the rendered template, or a repair request)."""
        for message in reversed(self.messages):
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                return str(message["content"])
        return ""

    @property
    def rendered(self) -> str:
        """The text of the first ``user`` message: the rendered template (later user messages
        are repair requests), what a scripted model reads its task from."""
        for message in self.messages:
            if message.get("role") == "user" and isinstance(message.get("content"), str):
                return str(message["content"])
        return ""

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The names of the functions offered."""
        return tuple(t.name for t in self.tools)

    def body(self) -> dict[str, Any]:
        """The JSON body of the chat-completions request (without ``stream``)."""
        body: dict[str, Any] = {"model": self.model_id, "messages": [dict(m) for m in self.messages]}
        body.update(self.params)
        if self.tools:
            body["tools"] = [t.to_openai() for t in self.tools]
        if self.tool_choice is not None:
            body["tool_choice"] = self.tool_choice
        if self.response_format is not None:
            body["response_format"] = dict(self.response_format)
        return body


@dataclass(frozen=True, slots=True)
class LLMReply:
    """A model's answer to one request.

    ``content`` is the text (``None`` when there is none), ``tool_calls`` the
    function calls, ``refusal`` a refusal's text, ``finish_reason`` as the
    endpoint gave it; the token counts are added to the run's usage.
    """

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    finish_reason: str | None = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def raw(self) -> str:
        """The reply as one string, for messages: the text, the refusal, or ``Name {args}`` per call
        (never raising, also for a reply :func:`reply_problem` rejects)."""
        parts: list[str] = []
        if self.content:
            parts.append(safe_str(self.content))
        if self.refusal:
            parts.append(safe_str(self.refusal))
        try:
            parts.extend(f"{safe_str(call.name)} {safe_str(call.arguments)}" for call in self.tool_calls)
        except Exception:  # not a sequence of calls
            parts.append(safe_str(self.tool_calls))
        return "\n".join(parts)


def json_kind(value: object) -> str:
    """What a (JSON) value is, for messages: ``null``, ``the number 3``, ``text``, ``a list`` — a
    number as it is, anything else never itself: it may be large, and may hold what a message
    must not show (the step cuts a message only after redacting it).

    >>> json_kind(-5), json_kind("sk-123"), json_kind([1]), json_kind(None)
    ('the number -5', 'text', 'a list', 'null')
    """
    match value:
        case None:
            return "null"
        case bool():
            return "true" if value else "false"
        case int() | float():
            return f"the number {value!r}"
        case str():
            return "text"
        case list() | tuple():
            return "a list"
        case dict():
            return "an object"
        case _:
            return f"a {type(value).__name__}"


def _not_text(value: object) -> bool:
    return value is not None and not isinstance(value, str)


def reply_problem(reply: object) -> str | None:
    """What is wrong with a backend's answer, or ``None`` when it is a reply a step can read:
    an :class:`LLMReply` whose text fields are text or ``None``, whose calls are
    :class:`ToolCall` of text, and whose token counts are whole numbers ≥ 0.

    >>> reply_problem(LLMReply("hi")) is None
    True
    >>> reply_problem(LLMReply(12345))  # type: ignore[arg-type]
    'content is the number 12345, not text or null'
    >>> reply_problem(LLMReply("hi", prompt_tokens=-1000))
    'prompt_tokens is the number -1000, not a token count (a whole number ≥ 0)'
    """
    if not isinstance(reply, LLMReply):
        return f"the backend answered {json_kind(reply)}, not an LLMReply"
    for name in ("content", "refusal", "finish_reason"):
        value = getattr(reply, name)
        if _not_text(value):
            return f"{name} is {json_kind(value)}, not text or null"
    if not isinstance(reply.tool_calls, tuple):
        return f"tool_calls is {json_kind(reply.tool_calls)}, not a tuple"
    for n, call in enumerate(reply.tool_calls):
        if not isinstance(call, ToolCall):
            return f"tool_calls[{n}] is {json_kind(call)}, not a ToolCall"
        for name in ("name", "arguments", "id"):
            value = getattr(call, name)
            if not isinstance(value, str):
                return f"tool_calls[{n}].{name} is {json_kind(value)}, not text"
    for name in ("prompt_tokens", "completion_tokens"):
        value = getattr(reply, name)
        if not is_token_count(value):
            return f"{name} is {json_kind(value)}, not a token count (a whole number ≥ 0)"
    return None


@runtime_checkable
class Backend(Protocol):
    """Something that answers LLM requests: the real endpoint or a scripted model.

    ``complete`` returns the reply, or raises ``LLMUnavailable`` when there
    is none (any other exception escaping it is a bug, and becomes a ``Defect``
    of the step).
    """

    async def complete(self, request: LLMRequest) -> LLMReply: ...


class Deltas(Protocol):
    """Where a streaming backend sends an answer's pieces as they arrive (docs/language.md §14)."""

    def text(self, chunk: str) -> None:
        """More of the answer's text."""
        ...

    def call(self, name: str, chunk: str) -> None:
        """More of the arguments (JSON text) of the answer's first function call, ``name``."""
        ...


@runtime_checkable
class StreamingBackend(Backend, Protocol):
    """A backend that can also stream an answer (the real endpoint does; a scripted model need
    not: a step streaming from a backend without ``stream`` sends the whole answer as one piece).

    ``stream`` sends the pieces to ``deltas`` as they arrive and returns the whole reply, the same
    :class:`LLMReply` ``complete`` would have (text, calls, refusal, finish reason, tokens), or
    raises ``LLMUnavailable``."""

    async def stream(self, request: LLMRequest, deltas: Deltas) -> LLMReply: ...
