"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1.

It speaks just enough HTTP/1.1 (keep-alive, ``Content-Length`` bodies) for
the real ``AsyncOpenAI`` client, so tests exercise the real client path: its
request bodies, retries, time-outs and cancellation. It runs its own event
loop in a background thread, so sync tests, async tests and subprocesses
(``mcec run``) can all use it.

    with LLMServer() as server:
        server.script(text("hello"), status(429), tool_call("SearchArgs", {"query": "x"}))
        config = server.config()          # an LLMConfig pointing every model here
        ...
        server.requests[0].body           # what the client sent (JSON)

Replies are :class:`agentmonad.testing.Reply` values (``text``, ``tool_call``,
``refusal``, ``status``, ``hangup``, each with ``usage`` and ``delay``), a
``str``, or a function of the request (an :class:`~agentmonad.llm.LLMRequest`
rebuilt from the body: messages, tools, tool_choice, response_format; its
``attempt`` is one more than the number of assistant messages). Scripted
replies are used in order; when none is left, ``respond_with``'s function
answers, by default a :class:`~agentmonad.testing.TestModel` (a valid answer
made up from the schema requested).

Two more kinds of reply reach what no well-behaved endpoint sends: a
:class:`Raw` response is written as given (any status, headers and body bytes:
a malformed completion, a body that is not JSON or not UTF-8), optionally
trickled a byte at a time; an :class:`Echo` is made from the request as it
arrived, headers included (an endpoint that quotes the caller's
``Authorization`` back). :func:`completion` builds a valid completion body to
break.

A reply with a ``delay`` waits while watching the connection: if the client
closes it meanwhile (a cancelled call), the server counts it in
``disconnects`` and answers nothing. Error statuses carry an OpenAI-style
error body, and 429/5xx a ``retry-after-ms: 1`` header (unless the reply sets
its own headers), so the client's retries are quick.

A request with ``"stream": true`` is answered as the OpenAI API streams
(docs/language.md §14): server-sent events (``text/event-stream``, chunked
transfer encoding), one ``data: {chunk}`` per piece of the reply's text (or of
its first function call's arguments) — pieces of ``chunk_size`` characters, by
default 4, ``chunk_delay`` seconds apart —, then the finish reason, the usage
when ``stream_options.include_usage`` asks for it, and ``data: [DONE]``. A
:class:`Streamed` reply says how one reply streams: its own pieces, a
``gate`` (a ``threading.Event``) the server waits for after the first piece,
a hang-up after some pieces. Error statuses, delays and hang-ups are answered
as without streaming.

Run it alone (for benchmarks): ``python tests/llm_server.py [--port N] [--chunk-size N] [--chunk-delay S]``
prints its base URL and serves until interrupted. Another process scripts it
over HTTP: ``POST /v1/_script`` with ``{"replies": [...]}`` (replies as JSON,
see :func:`agentmonad.testing.reply_from_json`) queues them; ``{"clear": true}``
first drops what is still queued; the answer is ``{"pending": n}``. Such
requests are not recorded in ``requests``.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


from agentmonad.llm import LLMConfig, LLMRequest, Model, ModelSettings, ToolSpec
from agentmonad.testing import Reply, Responder, TestModel, reply_from_json, text

__all__ = ["LLMServer", "Recorded", "Raw", "Echo", "Streamed", "completion", "chunks", "llm_server", "TEST_KEY"]

#: The API key tests give the client (the server accepts any key).
TEST_KEY = "sk-test-7f3a9c2e5b8d1046"

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            408: "Request Timeout", 409: "Conflict", 422: "Unprocessable Entity", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
_BODY_KEYS = {"model", "messages", "tools", "tool_choice", "response_format", "stream"}


@dataclass
class Recorded:
    """One request the server got: its JSON body, its headers (lower-case names) and the request rebuilt."""

    body: dict[str, Any]
    headers: dict[str, str]
    request: LLMRequest
    #: How the server answered: a status code, or "disconnected" / "hangup".
    outcome: str | int = ""


@dataclass(frozen=True)
class Raw:
    """A response written exactly as given (see the module docstring).

    ``body`` is sent as it is when it is ``bytes``, UTF-8 encoded when it is a
    ``str``, and as JSON otherwise (non-finite floats as ``Infinity``, which
    JSON does not have). ``trickle`` > 0 writes the whole response (status
    line, headers, body) one byte every ``trickle`` seconds.
    """

    body: Any
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    trickle: float = 0.0

    def data(self) -> bytes:
        """The body's bytes."""
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class Echo:
    """A reply made from the request as the server got it (body and headers): ``make(recorded)``."""

    make: Callable[[Recorded], Reply | Raw | str]


@dataclass(frozen=True)
class Streamed:
    """How one reply is streamed when the request asks for a stream (see the module docstring).

    ``pieces`` are the text pieces sent (default: the reply's text, or its first function call's
    arguments, cut every ``chunk_size`` characters); ``gate`` is waited for (in a thread, so the
    server's loop goes on) after the first piece; ``hangup_after`` breaks the connection after
    that many pieces; ``delay`` is the pause between pieces (default: the server's ``chunk_delay``).
    """

    reply: Reply | str
    pieces: tuple[str, ...] | None = None
    gate: threading.Event | None = None
    hangup_after: int | None = None
    delay: float | None = None

    def as_reply(self) -> Reply:
        """The reply streamed."""
        return text(self.reply) if isinstance(self.reply, str) else self.reply


Item = Reply | Raw | Echo | Streamed | str | Responder
"""What a script holds: a reply, or what makes one (see the module docstring)."""


def completion(content: Any = "ok", **changes: Any) -> dict[str, Any]:
    """A valid chat-completion body answering ``content``, with top-level ``changes`` applied."""
    body: dict[str, Any] = {
        "id": "chatcmpl-raw",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
    body.update(changes)
    return body


def request_from_body(body: dict[str, Any]) -> LLMRequest:
    """The :class:`LLMRequest` a chat-completions body describes."""
    tools = tuple(
        ToolSpec(t["function"]["name"], t["function"].get("description", ""), t["function"].get("parameters", {}))
        for t in body.get("tools") or ()
        if t.get("type") == "function"
    )
    messages = tuple(body.get("messages") or ())
    attempt = 1 + sum(1 for m in messages if m.get("role") == "assistant")
    choice = body.get("tool_choice")
    return LLMRequest(
        model=str(body.get("model", "")),
        model_id=str(body.get("model", "")),
        step="",
        messages=messages,
        tools=tools,
        tool_choice=choice if isinstance(choice, str) or choice is None else json.dumps(choice),
        response_format=body.get("response_format"),
        params={k: v for k, v in body.items() if k not in _BODY_KEYS},
        attempt=attempt,
    )


def completion_json(reply: Reply, request: LLMRequest, number: int) -> dict[str, Any]:
    """The chat-completion object the server sends for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": reply.refusal}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id or f"call_{i}", "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for i, c in enumerate(reply.tool_calls)
        ]
    prompt, completion = reply.tokens(request)
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model_id,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _cut(text: str, size: int) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size)) or ("",)


def chunks(reply: Reply, request: LLMRequest, number: int, pieces: tuple[str, ...] | None, size: int, usage: bool) -> list[dict[str, Any]]:
    """The chunks the server streams for ``reply``: the role, one per piece (text, or the
    first call's arguments after a chunk naming the call), the finish reason, the usage."""
    head = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "created": int(time.time()), "model": request.model_id}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    made = [chunk({"role": "assistant", "content": None if reply.tool_calls else ""})]
    if reply.tool_calls:
        first = reply.tool_calls[0]
        for n, call in enumerate(reply.tool_calls):
            function = {"name": call.name, "arguments": "" if n == 0 else call.arguments}
            made.append(chunk({"tool_calls": [{"index": n, "id": call.id or f"call_{n}", "type": "function", "function": function}]}))
        for piece in (pieces if pieces is not None else _cut(first.arguments, size)):
            made.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    elif reply.refusal is not None:
        made.extend(chunk({"refusal": piece}) for piece in (pieces if pieces is not None else _cut(reply.refusal, size)))
    elif reply.content is not None:
        made.extend(chunk({"content": piece}) for piece in (pieces if pieces is not None else _cut(reply.content, size)))
    made.append(chunk({}, reply.finish_reason))
    if usage:
        prompt, completion = reply.tokens(request)
        tokens = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        made.append({**head, "choices": [], "usage": tokens})
    return made


class LLMServer:
    """See the module docstring. ``port=0`` picks a free port."""

    def __init__(self, *, port: int = 0, chunk_size: int = 4, chunk_delay: float = 0.0) -> None:
        self._port = port
        #: How a streamed reply is cut (characters a piece) and paced (seconds between pieces).
        self.chunk_size = chunk_size
        self.chunk_delay = chunk_delay
        self._queue: deque[Item] = deque()
        self._default: Item = TestModel().reply_for
        self.requests: list[Recorded] = []
        #: Replies abandoned because the client closed the connection while the server waited.
        self.disconnects = 0
        #: Connections open now, and accepted in all.
        self.open_connections = 0
        self.connections = 0
        self._numbers = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._handlers: set[asyncio.Task[None]] = set()
        self._changed = threading.Condition()

    # ------------------------------------------------------------ control (any thread)

    @property
    def url(self) -> str:
        """The base URL to give the client (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def port(self) -> int:
        assert self._server is not None, "the server is not running"
        return int(self._server.sockets[0].getsockname()[1])

    def script(self, *replies: Item) -> LLMServer:
        """Queue replies, used in order before the default responder."""
        self._queue.extend(replies)
        return self

    def respond_with(self, responder: Item) -> LLMServer:
        """Answer with ``responder`` whenever no scripted reply is left."""
        self._default = responder
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not used yet."""
        return len(self._queue)

    def settings(self, **overrides: Any) -> ModelSettings:
        """Settings that point a model at this server, with the test key and quick retries."""
        options: dict[str, Any] = {"base_url": self.url, "api_key": TEST_KEY, "max_retries": 0, "timeout": 10.0}
        options.update(overrides)
        return ModelSettings(**options)

    def config(self, name: str = "*", **overrides: Any) -> LLMConfig:
        """An :class:`LLMConfig` pointing model ``name`` (default: every model) at this server."""
        return LLMConfig(models={name: self.settings(**overrides)})

    def model(self, name: str = "fast", model_id: str = "test-model", **options: Any) -> Model:
        """A :class:`Model` declared to be on this server (no key: a placeholder is sent)."""
        return Model(name, model_id, base_url=self.url, **options)

    def wait_until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """Block until ``condition()`` holds (checked whenever the server's counters change)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the LLM test server did not reach the expected state")
                self._changed.wait(min(left, 0.05))

    async def until(self, condition: Callable[[], bool], timeout: float = 5.0) -> None:
        """``wait_until`` for async tests (polls without blocking the loop)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError("the LLM test server did not reach the expected state")
            await asyncio.sleep(0.005)

    def start(self) -> LLMServer:
        self._thread = threading.Thread(target=self._run, name="llm test server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the LLM test server did not start")
        return self

    def close(self) -> None:
        loop = self._loop
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(self._stop_event.set)
            self._thread.join(10)
        self._loop = None

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ the server (its own thread)

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self._port, backlog=512)
        self._ready.set()
        try:
            await self._stop_event.wait()
        finally:
            self._server.close()
            for task in list(self._handlers):
                task.cancel()
            if self._handlers:
                await asyncio.wait(self._handlers)
            await self._server.wait_closed()

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        self.open_connections += 1
        self.connections += 1
        self._notify()
        try:
            while await self._serve_one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self._handlers.discard(task)
            self.open_connections -= 1
            writer.close()
            self._notify()

    async def _serve_one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is over."""
        line = await reader.readline()
        if not line:
            return False
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while True:
            raw = await reader.readline()
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body_bytes = await reader.readexactly(int(headers.get("content-length", "0")))
        keep_alive = headers.get("connection", "").lower() != "close"
        if method == "POST" and path.rstrip("/").endswith("/_script"):
            await self._control(writer, body_bytes)
            return keep_alive
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            await self._send(writer, 404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}}, {})
            return keep_alive
        try:
            body = json.loads(body_bytes or b"{}")
            request = request_from_body(body)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            await self._send(writer, 400, {"error": {"message": f"bad request: {exc}", "type": "invalid_request_error"}}, {})
            return keep_alive
        record = Recorded(body, headers, request)
        self.requests.append(record)
        self._notify()
        reply = await self._reply_for(record)
        streamed: Streamed | None = None
        if isinstance(reply, Streamed):
            streamed, reply = reply, reply.as_reply()
        if isinstance(reply, Raw):
            record.outcome = reply.status
            await self._send_raw(writer, reply)
            self._notify()
            return keep_alive
        if reply.delay > 0:
            try:
                got = await asyncio.wait_for(reader.read(1), reply.delay)
            except asyncio.TimeoutError:
                got = None
            if got == b"":  # the client closed the connection while we waited
                record.outcome = "disconnected"
                self.disconnects += 1
                self._notify()
                return False
        if reply.hangup:
            record.outcome = "hangup"
            return False
        if reply.status is not None:
            extra = dict(reply.headers) or ({"retry-after-ms": "1"} if reply.status == 429 or reply.status >= 500 else {})
            error = {"error": {"message": reply.message or "scripted error", "type": "scripted", "code": str(reply.status)}}
            record.outcome = reply.status
            await self._send(writer, reply.status, error, extra)
        elif body.get("stream") is True:
            record.outcome = 200
            if not await self._stream(writer, reply, request, streamed or Streamed(reply), body):
                record.outcome = "hangup"
                return False
        else:
            record.outcome = 200
            await self._send(writer, 200, completion_json(reply, request, next(self._numbers)), dict(reply.headers))
        self._notify()
        return keep_alive

    async def _stream(self, writer: asyncio.StreamWriter, reply: Reply, request: LLMRequest, how: Streamed, body: dict[str, Any]) -> bool:
        """Stream ``reply`` as server-sent events (chunked); False when it hung up instead of ending."""
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        made = chunks(reply, request, next(self._numbers), how.pieces, self.chunk_size, usage)
        head = ["HTTP/1.1 200 OK", "content-type: text/event-stream", "transfer-encoding: chunked", "cache-control: no-cache",
                *(f"{k}: {v}" for k, v in reply.headers.items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        delay = self.chunk_delay if how.delay is None else how.delay
        pieces = 0
        for n, chunk in enumerate([*made, None]):
            event = f"data: {json.dumps(chunk) if chunk is not None else '[DONE]'}\n\n".encode()
            writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            await writer.drain()
            is_piece = 0 < n < len(made) - (2 if usage else 1)
            pieces += is_piece
            if is_piece and how.hangup_after is not None and pieces >= how.hangup_after:
                writer.transport.abort()
                return False
            if is_piece and pieces == 1 and how.gate is not None:
                await asyncio.to_thread(how.gate.wait, 10)
            if delay > 0 and chunk is not None:
                await asyncio.sleep(delay)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _control(self, writer: asyncio.StreamWriter, body_bytes: bytes) -> None:
        """``POST …/_script``: queue the replies of the body (see the module docstring)."""
        try:
            body = json.loads(body_bytes or b"{}")
            replies = [reply_from_json(item) for item in body.get("replies", ())]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            await self._send(writer, 400, {"error": {"message": f"bad script: {exc}", "type": "invalid_request_error"}}, {})
            return
        if body.get("clear"):
            self._queue.clear()
        self._queue.extend(replies)
        await self._send(writer, 200, {"pending": len(self._queue)}, {})

    async def _reply_for(self, record: Recorded) -> Reply | Raw | Streamed:
        item = self._queue.popleft() if self._queue else self._default
        if isinstance(item, Echo):
            item = item.make(record)
        if callable(item) and not isinstance(item, (Reply, Raw, Streamed)):
            made = item(record.request)
            if inspect.isawaitable(made):
                made = await made
            item = made
        if isinstance(item, str):
            return text(item)
        if not isinstance(item, (Reply, Raw, Streamed)):
            raise TypeError(f"a scripted reply must be a Reply, a Raw, a Streamed or a str, not {type(item).__name__}")
        return item

    @staticmethod
    async def _send_raw(writer: asyncio.StreamWriter, raw: Raw) -> None:
        data = raw.data()
        head = [f"HTTP/1.1 {raw.status} {_REASONS.get(raw.status, 'Status')}", f"content-length: {len(data)}"]
        head += [f"{k}: {v}" for k, v in {"content-type": "application/json", **raw.headers}.items()]
        message = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data
        if raw.trickle <= 0:
            writer.write(message)
            await writer.drain()
            return
        for n in range(len(message)):
            if writer.is_closing():
                return
            writer.write(message[n : n + 1])
            await writer.drain()  # raises once the client has closed the connection
            await asyncio.sleep(raw.trickle)

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, code: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        head = [f"HTTP/1.1 {code} {_REASONS.get(code, 'Status')}", "content-type: application/json",
                f"content-length: {len(data)}", *(f"{k}: {v}" for k, v in headers.items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        await writer.drain()


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A running :class:`LLMServer`, closed after the test."""
    with LLMServer() as server:
        yield server


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--chunk-size", type=int, default=4, help="characters per streamed piece")
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between streamed pieces")
    args = parser.parse_args(argv)
    server = LLMServer(port=args.port, chunk_size=args.chunk_size, chunk_delay=args.chunk_delay).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
