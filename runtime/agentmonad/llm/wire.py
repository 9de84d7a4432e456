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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["ToolSpec", "ToolCall", "LLMRequest", "LLMReply", "Backend"]


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
        """The reply as one string, for messages: the text, the refusal, or ``Name {args}`` per call."""
        parts: list[str] = []
        if self.content:
            parts.append(self.content)
        if self.refusal:
            parts.append(self.refusal)
        parts.extend(f"{call.name} {call.arguments}" for call in self.tool_calls)
        return "\n".join(parts)


@runtime_checkable
class Backend(Protocol):
    """Something that answers LLM requests: the real endpoint or a scripted model.

    ``complete`` returns the reply, or raises ``LLMUnavailable`` when there
    is none (any other exception escaping it is a bug, and becomes a ``Defect``
    of the step).
    """

    async def complete(self, request: LLMRequest) -> LLMReply: ...
