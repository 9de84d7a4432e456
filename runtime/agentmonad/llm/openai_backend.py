"""The real backend: an OpenAI-compatible chat-completions endpoint through ``AsyncOpenAI``.

One client per model per run scope (``llm_scope`` makes and closes them). The
``openai`` package is imported when the first client is made, so a spec
without models, and a run whose models are all scripted, never needs it.

The client's own retries (``max_retries``, with its backoff and the
endpoint's ``Retry-After``) handle connection errors, time-outs, 408, 409,
429 and 5xx; what is still failing after them becomes ``LLMUnavailable``,
its ``kind`` from the last failure. The API key never appears in a message:
any text quoted from the endpoint (an error body may echo a header) has the
key replaced by ``***``.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from .._show import safe_str, truncate
from .config import Misconfigured, Resolved, Secret
from .errors import LLMUnavailable
from .errors import LLMUnavailableKind as Kind
from .wire import LLMReply, LLMRequest, ToolCall

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIBackend", "redact"]

#: How much of an endpoint's error text a reason quotes.
_QUOTE = 400

_CREATE_PARAMS: frozenset[str] | None = None


def redact(text: str, secret: Secret | None) -> str:
    """``text`` with the key (if any, and not trivially short) replaced by ``***``."""
    if secret is None:
        return text
    key = secret.reveal()
    return text.replace(key, "***") if len(key) >= 4 else text


def _create_params(client: AsyncOpenAI) -> frozenset[str]:
    """The body fields ``chat.completions.create`` takes as keywords (the rest go in ``extra_body``)."""
    global _CREATE_PARAMS
    if _CREATE_PARAMS is None:
        try:
            names = set(inspect.signature(client.chat.completions.create).parameters)
        except (TypeError, ValueError):  # pragma: no cover - a signature inspect cannot read
            names = {"messages", "model", "tools", "tool_choice", "response_format", "temperature", "max_tokens"}
        names -= {"extra_headers", "extra_query", "extra_body", "timeout", "stream"}
        _CREATE_PARAMS = frozenset(names)
    return _CREATE_PARAMS


class OpenAIBackend:
    """Answers requests for one model from its endpoint; :meth:`close` closes the client."""

    __slots__ = ("settings", "client")

    def __init__(self, settings: Resolved) -> None:
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:
            raise Misconfigured(f"calling a model needs the `openai` package ({exc}); pip install 'mcec[llm]'") from None
        self.settings = settings
        key = settings.api_key
        self.client = AsyncOpenAI(
            api_key=key.reveal() if key is not None else None,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
        )

    def __repr__(self) -> str:
        return f"OpenAIBackend(model={self.settings.name!r}, base_url={self.settings.base_url!r})"

    async def close(self) -> None:
        await self.client.close()

    def _unavailable(self, request: LLMRequest, reason: str, kind: Kind, status: int | None = None) -> LLMUnavailable:
        text = truncate(redact(reason, self.settings.api_key), _QUOTE * 2)
        return LLMUnavailable(request.model, request.step, text, kind, status)

    async def complete(self, request: LLMRequest) -> LLMReply:
        import openai

        body = request.body()
        known = _create_params(self.client)
        kwargs = {k: v for k, v in body.items() if k in known}
        extra = {k: v for k, v in body.items() if k not in known}
        if extra:
            kwargs["extra_body"] = extra
        try:
            completion = await self.client.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise self._unavailable(
                request, f"no answer within {self.settings.timeout:g}s (after {self.settings.max_retries} retries)", Kind.TIMEOUT
            ) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__
            detail = f": {type(cause).__name__}: {safe_str(cause)}" if cause is not None else ""
            raise self._unavailable(request, f"cannot reach {self._where()}{detail}", Kind.CONNECTION_FAILED) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            kind = Kind.RATE_LIMITED if status == 429 else Kind.SERVER_ERROR if status >= 500 else Kind.REJECTED
            raise self._unavailable(request, f"HTTP {status}: {_error_text(exc)}", kind, status) from None
        except openai.OpenAIError as exc:  # APIResponseValidationError and the like
            raise self._unavailable(request, f"the endpoint's answer is not a chat completion: {safe_str(exc)}", Kind.INVALID_RESPONSE) from None
        return self._reply(request, completion)

    def _where(self) -> str:
        return self.settings.base_url or "the OpenAI API"

    def _reply(self, request: LLMRequest, completion: Any) -> LLMReply:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise self._unavailable(request, "the endpoint answered with no choices", Kind.INVALID_RESPONSE)
        choice = choices[0]
        message = choice.message
        calls = []
        for n, call in enumerate(getattr(message, "tool_calls", None) or ()):
            function = getattr(call, "function", None)
            if function is None:
                continue
            calls.append(ToolCall(str(function.name), str(function.arguments or ""), str(call.id or f"call_{n}")))
        usage = getattr(completion, "usage", None)
        return LLMReply(
            content=message.content,
            tool_calls=tuple(calls),
            refusal=getattr(message, "refusal", None),
            finish_reason=choice.finish_reason,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )


def _error_text(exc: Any) -> str:
    """The message of an endpoint's error body, else the body itself, quoted briefly."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return truncate(message, _QUOTE)
    text = safe_str(body) if body is not None else safe_str(getattr(exc, "message", exc))
    return truncate(text, _QUOTE)
