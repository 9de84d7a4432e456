"""The real backend: an OpenAI-compatible chat-completions endpoint through ``AsyncOpenAI``.

One client per model per run scope (``llm_scope`` makes and closes them). The
``openai`` package is imported when the first client is made, so a spec
without models, and a run whose models are all scripted, never needs it.

The client's own retries (``max_retries``, with its backoff and the
endpoint's ``Retry-After``) handle connection errors, time-outs, 408, 409,
429 and 5xx; what is still failing after them becomes ``LLMUnavailable``,
its ``kind`` from the last failure.

Each HTTP request (each attempt of the client) has one deadline, the model's
``timeout``: the client's own time-outs bound each read, so an endpoint
trickling a byte at a time would otherwise keep a request alive for as long as
it likes.

The answer is read from the response's bytes by :func:`reply_from_body`, not
by the SDK's lenient parsing: anything but a chat completion as the API
documents it (a body that is not UTF-8 or JSON, no ``choices``, a ``message``
that is not an object, ``content`` that is not text, token counts that are not
whole numbers ≥ 0, …) is ``LLMUnavailable(kind=INVALID_RESPONSE)``, never an
exception of the step. Messages made here quote the endpoint as it answered;
the step seals them (``agentmonad.llm.errors.sealed``) before they leave it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._show import safe_str, type_name
from .config import Misconfigured, Resolved
from .errors import LLMUnavailable, redact
from .errors import LLMUnavailableKind as Kind
from .wire import Deltas, LLMReply, LLMRequest, ToolCall, is_token_count, json_kind

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIBackend", "NotACompletion", "StreamReader", "reply_from_body"]

_CREATE_PARAMS: frozenset[str] | None = None


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


@functools.cache
def _deadline_client() -> type[Any]:
    """``openai.DefaultAsyncHttpxClient`` (the SDK's defaults: connection limits, redirects) whose
    every ``send`` must be done — status, headers and body — within one deadline.

    Made on first use, as ``openai`` is imported then. A request past its deadline raises the
    HTTP library's ``ReadTimeout``, which the SDK retries like any time-out of its own.
    """
    import httpx2
    import openai

    class DeadlineClient(openai.DefaultAsyncHttpxClient):
        def __init__(self, deadline: float, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.deadline = deadline

        async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
            # Not streamed, `send` reads the whole body; streamed (`stream`), the headers: the
            # backend bounds the streamed body itself.
            limit = asyncio.timeout(self.deadline)
            try:
                async with limit:
                    return await super().send(request, **kwargs)
            except TimeoutError:
                if not limit.expired():
                    raise
                raise httpx2.ReadTimeout(f"no whole answer within {self.deadline:g}s", request=request) from None

    return DeadlineClient


class OpenAIBackend:
    """Answers requests for one model from its endpoint; :meth:`close` closes the client."""

    __slots__ = ("settings", "client")

    def __init__(self, settings: Resolved) -> None:
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:
            raise Misconfigured(f"calling a model needs the `openai` package ({exc}); pip install 'agentmonad[llm]'") from None
        self.settings = settings
        key = settings.api_key
        try:
            self.client = AsyncOpenAI(
                api_key=key.reveal() if key is not None else None,
                base_url=settings.base_url,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                http_client=_deadline_client()(settings.timeout),
            )
        except Exception as exc:  # a base URL the HTTP library cannot parse (a bad port, a control character)
            raise Misconfigured(
                f"the endpoint {self._where()} cannot be used: {type_name(exc)}: {safe_str(exc)}", settings.secrets
            ) from None

    def __repr__(self) -> str:
        where = redact(self._where(), self.settings.secrets)
        return f"OpenAIBackend(model={self.settings.name!r}, base_url={where!r})"

    async def close(self) -> None:
        await self.client.close()

    def _unavailable(self, request: LLMRequest, reason: str, kind: Kind, status: int | None = None) -> LLMUnavailable:
        return LLMUnavailable(request.model, request.step, reason, kind, status)

    def _arguments(self, request: LLMRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for ``request``."""
        body = request.body()
        known = _create_params(self.client)
        kwargs = {k: v for k, v in body.items() if k in known}
        extra = {k: v for k, v in body.items() if k not in known}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    async def complete(self, request: LLMRequest) -> LLMReply:
        kwargs = self._arguments(request)
        with self._translated(request):
            response = await self.client.chat.completions.with_raw_response.create(**kwargs)
            status, content = response.status_code, response.content
        try:
            return reply_from_body(content)
        except NotACompletion as exc:
            raise self._unavailable(request, f"{_NOT_A_COMPLETION}: {exc}", Kind.INVALID_RESPONSE, status) from None

    async def stream(self, request: LLMRequest, deltas: Deltas) -> LLMReply:
        """The answer streamed (docs/language.md §14): ``stream=True`` with the usage in the
        last chunk; each chunk is read as strictly as a whole completion (:class:`StreamReader`)
        and its pieces go to ``deltas`` as they arrive. The client's retries and the deadline of
        the response's headers are as for :meth:`complete`; the body has the model's ``timeout``
        again from then. An endpoint that answers with a whole completion instead is read as one."""
        kwargs = self._arguments(request)
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
        reader = StreamReader(deltas)
        status = None
        try:
            with self._translated(request):
                async with self.client.chat.completions.with_streaming_response.create(**kwargs) as response:
                    status = response.status_code
                    if not response.headers.get("content-type", "").startswith("text/event-stream"):
                        return reader.whole(await response.read())
                    limit = asyncio.timeout(self.settings.timeout)
                    try:
                        async with limit:
                            # read to the body's end, past `[DONE]`: a response not read whole
                            # closes its connection instead of going back to the pool
                            async for line in response.iter_lines():
                                reader.line(line)
                    except TimeoutError:
                        if not limit.expired():
                            raise
                        raise self._unavailable(
                            request, f"the streamed answer did not end within {self.settings.timeout:g}s", Kind.TIMEOUT
                        ) from None
            return reader.reply()
        except NotACompletion as exc:
            raise self._unavailable(request, f"{_NOT_A_STREAM}: {exc}", Kind.INVALID_RESPONSE, status) from None

    @contextlib.contextmanager
    def _translated(self, request: LLMRequest) -> Iterator[None]:
        """The client's failures (after its own retries) as ``LLMUnavailable``, kind by cause."""
        import httpx2
        import openai

        try:
            yield
        except openai.APITimeoutError:
            raise self._unavailable(
                request, f"no answer within {self.settings.timeout:g}s (after {self.settings.max_retries} retries)", Kind.TIMEOUT
            ) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__
            detail = f": {type_name(cause)}: {safe_str(cause)}" if cause is not None else ""
            raise self._unavailable(request, f"cannot reach {self._where()}{detail}", Kind.CONNECTION_FAILED) from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            kind = Kind.RATE_LIMITED if status == 429 else Kind.SERVER_ERROR if status >= 500 else Kind.REJECTED
            raise self._unavailable(request, f"HTTP {status}: {_error_text(exc)}", kind, status) from None
        except openai.OpenAIError as exc:
            raise self._unavailable(request, f"{_NOT_A_COMPLETION}: {safe_str(exc)}", Kind.INVALID_RESPONSE) from None
        except httpx2.TimeoutException:  # a read of the streamed body timed out
            raise self._unavailable(request, f"the stream stalled for {self.settings.timeout:g}s", Kind.TIMEOUT) from None
        except (httpx2.TransportError, httpx2.StreamError, httpx2.DecodingError) as exc:
            # the connection broke while the streamed body was read (the SDK translates the rest)
            detail = f"{type_name(exc)}: {safe_str(exc)}"
            raise self._unavailable(request, f"the stream from {self._where()} broke: {detail}", Kind.CONNECTION_FAILED) from None

    def _where(self) -> str:
        return self.settings.base_url or "the OpenAI API"


def _error_text(exc: Any) -> str:
    """The message of an endpoint's error body, else the body itself (whole: the step redacts, then cuts)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    return safe_str(body) if body is not None else safe_str(getattr(exc, "message", exc))


# ---------------------------------------------------------------- reading a completion

_NOT_A_COMPLETION = "the endpoint's answer is not a chat completion"


class NotACompletion(Exception):
    """A response body that is not a chat completion; the message says what is wrong with it."""


def reply_from_body(body: bytes) -> LLMReply:
    """The :class:`LLMReply` of a chat-completion response body, read strictly.

    Raises :class:`NotACompletion` unless the body is UTF-8 JSON of an object
    whose ``choices`` is a non-empty list, whose first choice has a
    ``message`` object with ``content`` and ``refusal`` text or null, and
    ``tool_calls`` null or a list of function calls (a ``function`` object
    with a text ``name`` and text ``arguments``); ``finish_reason`` is text or
    null, and ``usage`` (null or missing: no tokens) holds whole numbers ≥ 0.

    >>> reply_from_body(b'{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": 3}}')
    LLMReply(content='hi', tool_calls=(), refusal=None, finish_reason=None, prompt_tokens=3, completion_tokens=0)
    >>> reply_from_body(b'{"choices": [{"message": {"content": 12345}}]}')
    Traceback (most recent call last):
    ...
    agentmonad.llm.openai_backend.NotACompletion: choices[0].message.content is the number 12345, not text or null
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotACompletion(f"the body is not UTF-8 ({exc.reason} at byte {exc.start}): {body.decode('utf-8', 'replace')}") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise NotACompletion("the body is JSON nested too deeply to read") from None
    except ValueError as exc:  # JSONDecodeError, or an integer of too many digits
        raise NotACompletion(f"the body is not JSON ({exc}): {text}" if text.strip() else "the body is empty") from None
    if not isinstance(data, dict):
        raise NotACompletion(f"the body is {json_kind(data)}, not an object")
    if "choices" not in data and data.get("error") is not None:
        error = data["error"]
        said = error.get("message") if isinstance(error, dict) else error
        raise NotACompletion(f"the endpoint answered with an error: {safe_str(said)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise NotACompletion("there are no choices" if choices in (None, []) else f"choices is {json_kind(choices)}, not a list")
    choice = _object(choices[0], "choices[0]")
    message = _object(choice.get("message"), "choices[0].message")
    prompt_tokens, completion_tokens = _usage(data.get("usage"))
    return LLMReply(
        content=_text(message, "content", "choices[0].message"),
        tool_calls=_tool_calls(message.get("tool_calls")),
        refusal=_text(message, "refusal", "choices[0].message"),
        finish_reason=_text(choice, "finish_reason", "choices[0]"),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
    )


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise NotACompletion(f"{where} is {json_kind(value)}, not an object")
    return value


def _text(parent: dict[str, Any], key: str, where: str) -> str | None:
    value = parent.get(key)
    if value is not None and not isinstance(value, str):
        raise NotACompletion(f"{where}.{key} is {json_kind(value)}, not text or null")
    return value


def _tool_calls(value: object) -> tuple[ToolCall, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise NotACompletion(f"choices[0].message.tool_calls is {json_kind(value)}, not a list")
    calls = []
    for n, item in enumerate(value):
        where = f"choices[0].message.tool_calls[{n}]"
        call = _object(item, where)
        function = _object(call.get("function"), f"{where}.function")
        name = _text(function, "name", f"{where}.function")
        if name is None:
            raise NotACompletion(f"{where}.function has no name")
        arguments = _text(function, "arguments", f"{where}.function") or ""
        calls.append(ToolCall(name, arguments, _text(call, "id", where) or f"call_{n}"))
    return tuple(calls)


def _usage(value: object) -> tuple[int, int]:
    """``(prompt_tokens, completion_tokens)``: whole numbers ≥ 0 (missing or null: 0)."""
    if value is None:
        return 0, 0
    usage = _object(value, "usage")
    counts = []
    for key in ("prompt_tokens", "completion_tokens"):
        count = usage.get(key)
        if count is None:
            count = 0
        if not is_token_count(count):
            raise NotACompletion(f"usage.{key} is {json_kind(count)}, not a token count (a whole number ≥ 0)")
        counts.append(count)
    return counts[0], counts[1]


# ---------------------------------------------------------------- reading a streamed completion

_NOT_A_STREAM = "the endpoint's streamed answer is not a chat completion stream"


class StreamReader:
    """Reads a streamed chat completion — server-sent events whose ``data`` is a chunk, then
    ``[DONE]`` — as strictly as :func:`reply_from_body` reads a whole one, sending each piece of
    text and of the first function call's arguments to ``deltas`` as it arrives.

    Feed it the body's lines with :meth:`line`; :meth:`reply` is then the whole reply, the same
    :class:`LLMReply` the endpoint's whole completion would give. A chunk that is not JSON of an
    object, ``choices`` that is not a list, a ``delta`` that is not an object, ``content`` that is
    not text, token counts that are not whole numbers ≥ 0, a stream with no choice at all: each
    raises :class:`NotACompletion`.
    """

    __slots__ = ("deltas", "_data", "_content", "_refusal", "_calls", "_first", "_finish", "_tokens", "_chunks", "_done")

    def __init__(self, deltas: Deltas) -> None:
        self.deltas = deltas
        self._data: list[str] = []
        self._content: list[str] | None = None
        self._refusal: list[str] | None = None
        #: a function call's index → [id, name, argument pieces]
        self._calls: dict[int, list[Any]] = {}
        self._first: int | None = None
        self._finish: str | None = None
        self._tokens = (0, 0)
        self._chunks = 0
        self._done = False

    def line(self, line: str) -> bool:
        """Read one line of the body (without its line break); True once the stream says ``[DONE]``
        (what follows it is ignored)."""
        if self._done:
            return True
        if not line:
            self._done = self._dispatch()
            return self._done
        if line.startswith(":"):
            return False  # a comment (a keep-alive)
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return False  # `event:`, `id:`, `retry:` say nothing a completion needs

    def _dispatch(self) -> bool:
        """The event whose ``data`` lines were read: a chunk, or ``[DONE]``."""
        if not self._data:
            return False
        data = "\n".join(self._data)
        self._data = []
        if data.strip() == "[DONE]":
            return True
        self._chunk(data)
        return False

    def _chunk(self, data: str) -> None:
        try:
            chunk = json.loads(data)
        except RecursionError:
            raise NotACompletion("a chunk is JSON nested too deeply to read") from None
        except ValueError as exc:
            raise NotACompletion(f"a chunk is not JSON ({exc}): {data}") from None
        if not isinstance(chunk, dict):
            raise NotACompletion(f"a chunk is {json_kind(chunk)}, not an object")
        if "choices" not in chunk and chunk.get("error") is not None:
            error = chunk["error"]
            said = error.get("message") if isinstance(error, dict) else error
            raise NotACompletion(f"the endpoint answered with an error: {safe_str(said)}")
        if chunk.get("usage") is not None:
            self._tokens = _usage(chunk["usage"])
        choices = chunk.get("choices")
        if choices is None or choices == []:
            return  # the usage chunk
        if not isinstance(choices, list):
            raise NotACompletion(f"choices is {json_kind(choices)}, not a list")
        choice = _object(choices[0], "choices[0]")
        delta = choice.get("delta")
        delta = {} if delta is None else _object(delta, "choices[0].delta")
        self._chunks += 1
        finish = _text(choice, "finish_reason", "choices[0]")
        if finish is not None:
            self._finish = finish
        refusal = _text(delta, "refusal", "choices[0].delta")
        if refusal is not None:
            self._refusal = [*(self._refusal or ()), refusal]
        self._read_calls(delta.get("tool_calls"))
        content = _text(delta, "content", "choices[0].delta")
        if content is not None:
            if self._content is None:
                self._content = []
            self._content.append(content)
            self.deltas.text(content)

    def _read_calls(self, value: object) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            raise NotACompletion(f"choices[0].delta.tool_calls is {json_kind(value)}, not a list")
        for n, item in enumerate(value):
            where = f"choices[0].delta.tool_calls[{n}]"
            piece = _object(item, where)
            index = piece.get("index", n)
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                raise NotACompletion(f"{where}.index is {json_kind(index)}, not a whole number ≥ 0")
            function = piece.get("function")
            function = {} if function is None else _object(function, f"{where}.function")
            call = self._calls.setdefault(index, [None, None, []])
            call_id = _text(piece, "id", where)
            if call_id:
                call[0] = call_id
            name = _text(function, "name", f"{where}.function")
            if name:
                call[1] = name
            arguments = _text(function, "arguments", f"{where}.function") or ""
            call[2].append(arguments)
            if self._first is None:
                self._first = index
            if index == self._first and call[1] is not None:
                self.deltas.call(call[1], arguments)

    def reply(self) -> LLMReply:
        """The whole reply the stream made (once it is over)."""
        if not self._done:
            self._dispatch()  # a last event the body did not end with a blank line
        if self._chunks == 0:
            raise NotACompletion("the stream has no choices")
        calls = []
        for n, (index, (call_id, name, pieces)) in enumerate(sorted(self._calls.items())):
            if name is None:
                raise NotACompletion(f"the function call at index {index} has no name")
            calls.append(ToolCall(name, "".join(pieces), call_id or f"call_{n}"))
        return LLMReply(
            content="".join(self._content) if self._content is not None else None,
            tool_calls=tuple(calls),
            refusal="".join(self._refusal) if self._refusal is not None else None,
            finish_reason=self._finish,
            prompt_tokens=self._tokens[0],
            completion_tokens=self._tokens[1],
        )

    def whole(self, body: bytes) -> LLMReply:
        """A whole completion where a stream was asked for (an endpoint that does not stream):
        read as :func:`reply_from_body` reads it, and told to ``deltas`` as one piece."""
        reply = reply_from_body(body)
        if reply.tool_calls:
            self.deltas.call(reply.tool_calls[0].name, reply.tool_calls[0].arguments)
        elif reply.content:
            self.deltas.text(reply.content)
        return reply
