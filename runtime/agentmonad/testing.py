"""Scripted models: LLM steps in tests, without a network (docs/language.md §10).

In the spirit of pydantic-ai's ``TestModel`` and ``FunctionModel``, three
backends answer in place of a real model:

- :class:`ScriptedModel` — replies in order (``ScriptedModel([text("hi"), tool_call("SearchArgs", {"query": "x"})])``);
  an item may also be a function of the request;
- :class:`FunctionModel` — a function of the request (messages, functions
  offered, response format, attempt) → a reply, sync or async;
- :class:`TestModel` — no script: a valid answer made up from the output
  type's JSON schema (it calls the first function offered, or ``call=``).

A reply is a :class:`Reply`, made with :func:`text`, :func:`tool_call`,
:func:`refusal`, :func:`status` (an HTTP error status: 429 and 5xx become
``LLMUnavailable`` as the real client's would after its retries) or
:func:`hangup` (the connection breaks); a plain ``str`` is a text reply. Each
can carry token ``usage=(prompt, completion)`` (by default a word count, as
pydantic-ai estimates) and a ``delay`` in seconds.

:class:`ScriptedHuman` answers ``ask`` steps the same way (docs/language.md §15). The same replies script the
OpenAI-compatible test server of the project's tests (``tests/llm_server.py``).

Every backend records the requests it got (``.requests``). To put one in
place of a model for a run, by the spec's model name::

    with use_models(fast=ScriptedModel(["positive"])):
        outcome = asyncio.run(module.classify(state, ticket))

or ``LLMConfig(models={"fast": backend})`` in ``llm_scope(config)``;
``mcec run --model fast=test`` does the same (``parse_model_option``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from .llm.config import LLMConfig, llm_config
from .llm.errors import LLMUnavailable, LLMUnavailableKind
from .llm.wire import Backend, LLMReply, LLMRequest, ToolCall

__all__ = [
    "Reply",
    "text",
    "tool_call",
    "refusal",
    "status",
    "hangup",
    "Responder",
    "ScriptedModel",
    "FunctionModel",
    "TestModel",
    "ScriptExhausted",
    "use_models",
    "sample",
    "estimate_tokens",
    "reply_from_json",
    "replies_from_json",
    "backend_from_option",
    "ScriptedHuman",
]


def estimate_tokens(text: str) -> int:
    """A stand-in token count: the number of words (as pydantic-ai's test models estimate)."""
    return len(text.split())


def _prompt_tokens(request: LLMRequest) -> int:
    total = 0
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str):
            total += estimate_tokens(content)
    return total


@dataclass(frozen=True)
class Reply:
    """One scripted reply (see the module docstring); build it with the functions below."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    refusal: str | None = None
    finish_reason: str = "stop"
    #: ``(prompt_tokens, completion_tokens)``; ``None``: estimated from the words.
    usage: tuple[int, int] | None = None
    #: An HTTP error status instead of an answer.
    status: int | None = None
    #: The error's message (with ``status``).
    message: str = ""
    #: Extra response headers (the test server sends them; e.g. ``retry-after``).
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering.
    delay: float = 0.0
    #: Break the connection instead of answering.
    hangup: bool = False

    def tokens(self, request: LLMRequest) -> tuple[int, int]:
        """The ``(prompt, completion)`` tokens this reply reports for ``request``."""
        if self.usage is not None:
            return self.usage
        return _prompt_tokens(request), estimate_tokens(self.as_reply().raw)

    def as_reply(self, request: LLMRequest | None = None) -> LLMReply:
        """The :class:`~agentmonad.llm.LLMReply` a step gets (with token counts if ``request`` is given)."""
        prompt, completion = self.tokens(request) if request is not None else (0, 0)
        return LLMReply(self.content, self.tool_calls, self.refusal, self.finish_reason, prompt, completion)

    def error(self, request: LLMRequest) -> LLMUnavailable | None:
        """The ``LLMUnavailable`` this reply stands for (a status or a hang-up), else ``None``."""
        if self.hangup:
            return LLMUnavailable(
                request.model, request.step, "the connection broke (scripted)", LLMUnavailableKind.CONNECTION_FAILED
            )
        if self.status is None:
            return None
        code = self.status
        kind = (
            LLMUnavailableKind.RATE_LIMITED
            if code == 429
            else LLMUnavailableKind.SERVER_ERROR
            if code >= 500
            else LLMUnavailableKind.REJECTED
        )
        return LLMUnavailable(request.model, request.step, f"HTTP {code}: {self.message or 'scripted error'}", kind, code)


def text(content: str, *, usage: tuple[int, int] | None = None, delay: float = 0.0, finish_reason: str = "stop") -> Reply:
    """A text reply."""
    return Reply(content=content, usage=usage, delay=delay, finish_reason=finish_reason)


def _arguments_json(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    dump = getattr(arguments, "model_dump_json", None)
    if callable(dump):
        return str(dump())
    if dataclasses.is_dataclass(arguments) and not isinstance(arguments, type):
        return json.dumps(dataclasses.asdict(arguments))
    return json.dumps(arguments)


def tool_call(
    name: str,
    arguments: Mapping[str, Any] | str | object = "{}",
    *,
    content: str | None = None,
    usage: tuple[int, int] | None = None,
    delay: float = 0.0,
    id: str = "call_0",
) -> Reply:
    """A reply that calls function ``name`` (a member of a union output) with ``arguments``
    (a mapping, a pydantic model, a dataclass, or JSON text)."""
    call = ToolCall(name, _arguments_json(arguments), id)
    return Reply(content=content, tool_calls=(call,), finish_reason="tool_calls", usage=usage, delay=delay)


def refusal(reason: str = "I can't help with that.", *, usage: tuple[int, int] | None = None) -> Reply:
    """A refusal (OpenAI's ``message.refusal``)."""
    return Reply(refusal=reason, usage=usage)


def status(code: int, message: str = "", *, headers: Mapping[str, str] | None = None, delay: float = 0.0) -> Reply:
    """An HTTP error status instead of an answer (429: rate limited, 5xx: server error, else rejected)."""
    return Reply(status=code, message=message, headers=dict(headers or {}), delay=delay)


def hangup(*, delay: float = 0.0) -> Reply:
    """The connection breaks instead of an answer."""
    return Reply(hangup=True, delay=delay)


Responder: TypeAlias = Callable[[LLMRequest], "Reply | str | Awaitable[Reply | str]"]
"""A function of the request giving the reply (sync or async)."""


async def _answer(item: Reply | str | Responder, request: LLMRequest) -> LLMReply:
    """Play one script item: wait its delay, raise its error, or give its reply."""
    if callable(item) and not isinstance(item, Reply):
        made = item(request)
        if inspect.isawaitable(made):
            made = await made
        item = made
    reply = text(item) if isinstance(item, str) else item
    if not isinstance(reply, Reply):
        raise TypeError(f"a scripted reply must be a Reply or a str, not {type(reply).__name__}")
    if reply.delay > 0:
        await asyncio.sleep(reply.delay)
    error = reply.error(request)
    if error is not None:
        raise error
    return reply.as_reply(request)


class ScriptExhausted(AssertionError):
    """A :class:`ScriptedModel` was asked for more replies than it has (a bug in the test)."""


class ScriptedModel:
    """Replies in order: each request takes the next item (a reply, a str, or a function of the request).

    >>> model = ScriptedModel(["first", text("second", usage=(5, 1))])
    >>> model.remaining
    2
    """

    def __init__(self, replies: Iterable[Reply | str | Responder], *, name: str = "scripted") -> None:
        self.name = name
        self._replies: deque[Reply | str | Responder] = deque(replies)
        self.requests: list[LLMRequest] = []

    @property
    def remaining(self) -> int:
        """How many replies are left."""
        return len(self._replies)

    def add(self, *replies: Reply | str | Responder) -> None:
        """Append replies to the script."""
        self._replies.extend(replies)

    async def complete(self, request: LLMRequest) -> LLMReply:
        self.requests.append(request)
        if not self._replies:
            raise ScriptExhausted(
                f"{self.name}: no reply left for request {len(self.requests)} (step {request.step}, attempt {request.attempt})"
            )
        return await _answer(self._replies.popleft(), request)

    def __repr__(self) -> str:
        return f"ScriptedModel(name={self.name!r}, remaining={self.remaining})"


class FunctionModel:
    """Each request answered by ``fn(request)`` (a reply or a str, or an awaitable of one)."""

    def __init__(self, fn: Responder) -> None:
        self.fn = fn
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMReply:
        self.requests.append(request)
        return await _answer(self.fn, request)

    def __repr__(self) -> str:
        return f"FunctionModel({getattr(self.fn, '__qualname__', self.fn)!r})"


def sample(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None, depth: int = 0) -> Any:
    """A small value valid for JSON schema ``schema`` (what pydantic writes): for :class:`TestModel`.

    >>> sample({"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer", "minimum": 3}}, "required": ["q", "n"]})
    {'q': 'a', 'n': 3}
    """
    root = schema if root is None else root
    if depth > 32:
        return None
    if "$ref" in schema:
        ref = str(schema["$ref"])
        target: Any = root
        for part in ref.lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return sample(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return list(schema["enum"])[0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"] or list(schema[key])
            return sample(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        props: Mapping[str, Any] = schema.get("properties", {})
        required = schema.get("required", list(props))
        return {name: sample(props[name], root, depth + 1) for name in required if name in props}
    if kind == "array":
        if "prefixItems" in schema:
            return [sample(s, root, depth + 1) for s in schema["prefixItems"]]
        count = int(schema.get("minItems", 0))
        return [sample(schema.get("items", {}), root, depth + 1) for _ in range(count)]
    if kind == "string":
        return "a" * max(1, int(schema.get("minLength", 1)))
    if kind == "integer":
        return int(schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1))
    if kind == "number":
        return float(schema.get("minimum", 0.0))
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "a"


class TestModel:
    """Answers every request validly, with no script: text ``text`` for a ``str`` output, else a
    value made up from the schema requested (:func:`sample`); for a union it calls ``call``
    (a class name) or the first function offered."""

    __test__ = False  # not a pytest test class

    def __init__(self, *, text: str = "test answer", call: str | None = None, usage: tuple[int, int] | None = None) -> None:
        self.text = text
        self.call = call
        self.usage = usage
        self.requests: list[LLMRequest] = []

    def reply_for(self, request: LLMRequest) -> Reply:
        """The reply this model gives to ``request``."""
        if request.tools:
            chosen = next((t for t in request.tools if t.name == self.call), request.tools[0])
            return tool_call(chosen.name, sample(chosen.parameters), usage=self.usage)
        if request.response_format is not None:
            schema = request.response_format.get("json_schema", {}).get("schema", {})
            return text(json.dumps(sample(schema)), usage=self.usage)
        return text(self.text, usage=self.usage)

    async def complete(self, request: LLMRequest) -> LLMReply:
        self.requests.append(request)
        return await _answer(self.reply_for(request), request)

    def __repr__(self) -> str:
        return f"TestModel(call={self.call!r})"


@contextmanager
def use_models(
    models: Mapping[str, Backend | Responder | Iterable[Reply | str]] | None = None, /, **by_name: Backend | Responder | Iterable[Reply | str]
) -> Iterator[LLMConfig]:
    """Put backends in place of models, by the spec's model name (``"*"``: every model), for the
    code inside. A function becomes a :class:`FunctionModel`, a list a :class:`ScriptedModel`."""
    entries: dict[str, Backend] = {}
    for name, item in {**(models or {}), **by_name}.items():
        if isinstance(item, Backend):
            entries[name] = item
        elif callable(item):
            entries[name] = FunctionModel(item)
        else:
            entries[name] = ScriptedModel(item, name=name)
    with llm_config(LLMConfig(models=entries)) as config:
        yield config


def reply_from_json(data: object) -> Reply:
    """A reply written as JSON: ``"text"``, ``{"text": …}``, ``{"tool": NAME, "arguments": {…}}``,
    ``{"refusal": …}``, ``{"status": 429, "message": …}``, ``{"hangup": true}``; each object may
    add ``"usage": [prompt, completion]`` and ``"delay": seconds``."""
    if isinstance(data, str):
        return text(data)
    if not isinstance(data, dict):
        raise ValueError(f"a scripted reply is a string or an object, not {data!r}")
    usage = tuple(data["usage"]) if "usage" in data else None
    if usage is not None and (len(usage) != 2 or not all(type(n) is int for n in usage)):
        raise ValueError(f"usage must be [prompt_tokens, completion_tokens], not {data['usage']!r}")
    tokens = (usage[0], usage[1]) if usage is not None else None
    delay = float(data.get("delay", 0.0))
    if "tool" in data:
        return tool_call(str(data["tool"]), data.get("arguments", {}), usage=tokens, delay=delay)
    if "refusal" in data:
        return dataclasses.replace(refusal(str(data["refusal"]), usage=tokens), delay=delay)
    if "status" in data:
        return status(int(data["status"]), str(data.get("message", "")), delay=delay)
    if data.get("hangup"):
        return hangup(delay=delay)
    if "text" in data:
        return text(str(data["text"]), usage=tokens, delay=delay)
    raise ValueError(f"a scripted reply needs one of text, tool, refusal, status, hangup: {data!r}")


def replies_from_json(path: str | Path) -> list[Reply]:
    """The replies in a JSON file holding a list of them (see :func:`reply_from_json`)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of replies")
    return [reply_from_json(item) for item in data]


def backend_from_option(value: str) -> Backend:
    """The backend of an ``mcec run --model NAME=VALUE`` value: ``test``, ``script:PATH`` or
    ``py:MODULE:ATTR`` (see ``agentmonad.llm.parse_model_option``)."""
    if value == "test":
        return TestModel()
    if value.startswith("script:"):
        path = value[len("script:") :]
        return ScriptedModel(replies_from_json(path), name=path)
    if value.startswith("py:"):
        module_name, _, attr = value[len("py:") :].partition(":")
        if not module_name or not attr:
            raise ValueError(f"expected py:MODULE:ATTR, not {value!r}")
        found: object = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
        if isinstance(found, type):  # a backend class: one made with no arguments
            found = found()
        if isinstance(found, Backend):
            return found
        if callable(found):
            return FunctionModel(found)
        raise ValueError(f"{module_name}:{attr} is neither a backend nor a function of the request")
    raise ValueError(f"not a scripted model: {value!r} (expected test, script:PATH or py:MODULE:ATTR)")


class ScriptedHuman:
    """Answers a run's ``ask`` steps from a script (attach it with
    ``agentmonad.context.hooks(human=ScriptedHuman(...))``): ``answers`` maps an ask step's name
    to its answers in the order asked (a list), or to one answer for every time; an answer may
    be a function of the :class:`~agentmonad.human.Question`. Not interactive: an answer that
    does not validate is the run's ``BadAnswer``; a name with no answer left is
    :class:`ScriptExhausted`. ``.asked`` records every question, in order."""

    def __init__(self, answers: Mapping[str, object], *, delay: float = 0.0) -> None:
        self._answers: dict[str, deque[object] | tuple[object]] = {
            name: deque(value) if isinstance(value, list) else (value,) for name, value in answers.items()
        }
        self._delay = delay
        self.asked: list[Any] = []

    async def ask(self, question: Any) -> object:
        """The scripted answer to ``question``."""
        self.asked.append(question)
        if self._delay:
            await asyncio.sleep(self._delay)
        script = self._answers.get(question.name)
        if script is None or not script:
            raise ScriptExhausted(f"no scripted answer left for ask {question.name!r}")
        answer = script.popleft() if isinstance(script, deque) else script[0]
        return answer(question) if callable(answer) else answer
