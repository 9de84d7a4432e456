"""``Outcome`` ⇄ MCP ``CallToolResult`` (docs/language.md §9), without the ``mcp`` package.

The EitherT layer maps onto MCP's ``isError``. A ``ToolResult`` is a plain dict
shaped like ``CallToolResult`` (``content``, ``structuredContent``, ``isError``),
so ``mcp.types.CallToolResult.model_validate(result)`` accepts it as is.

>>> to_tool_result(Ok({"n": 1}, None))
{'content': [{'type': 'text', 'text': '{"n": 1}'}], 'structuredContent': {'n': 1}, 'isError': False}
>>> to_tool_result(Ok("hi", None))["structuredContent"]
{'result': 'hi'}
>>> from_tool_result(to_tool_result(Ok([1, 2], None)), "s")
Ok(value=[1, 2], state='s')
>>> from_tool_result(to_tool_result(Err(KeyError("k"), None)), "s", server="a", tool="b")
Err(error=ToolFailed(server='a', tool='b', text="KeyError: 'k'"), state='s', site=None)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, Literal, TypedDict, TypeVar

from .._show import exception_text, safe_str, short_repr, truncate
from ..errors import ToolFailed, ToolUnavailable, ToolUnavailableKind
from ..outcome import Err, Ok, Outcome

__all__ = ["ToolResult", "TextContent", "to_tool_result", "from_tool_result", "to_jsonable"]

_S = TypeVar("_S")

_INVALID = ToolUnavailableKind.INVALID_RESULT


class TextContent(TypedDict):
    """One ``{"type": "text", "text": ...}`` content block."""

    type: Literal["text"]
    text: str


class ToolResult(TypedDict):
    """The ``CallToolResult`` shape: what a tool call returns over MCP."""

    content: list[TextContent]
    structuredContent: dict[str, Any] | None
    isError: bool


def to_jsonable(value: object) -> Any:
    """pydantic models → ``model_dump(mode="json")``, dataclasses → dicts,
    containers element-wise, everything else as is."""
    dump = getattr(value, "model_dump", None)
    if dump is not None and hasattr(type(value), "model_fields"):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    return value


def render_error(error: object) -> str:
    """The text of an error: ``Type: message`` for exceptions. Never raises: a
    message that cannot be rendered shows as ``<unprintable T object>``.

    >>> render_error(KeyError("k")), render_error({"code": 7})
    ("KeyError: 'k'", '{"code": 7}')
    """
    if isinstance(error, BaseException):
        return exception_text(error)
    try:
        text = to_jsonable(error)
        return text if isinstance(text, str) else json.dumps(text, default=str)
    except Exception:
        return safe_str(error)


def _text(content: list[TextContent]) -> str:
    return "".join(c["text"] for c in content)


def _error_result(text: str) -> ToolResult:
    return {"content": [{"type": "text", "text": text}], "structuredContent": None, "isError": True}


def _serialised(value: object) -> tuple[str, Any]:
    """``value`` as JSON text and the structured content that text denotes.

    Raises when the value has no JSON form: nested too deeply, ``NaN``, a key
    that is not a string, or an object whose own conversion raises.
    """
    data = to_jsonable(value)
    if isinstance(data, str):
        return data, data
    text = json.dumps(data, default=str, allow_nan=False)
    # The structured content is read back from the text, so both say the same
    # (objects json only knows through ``str`` appear as that string in both).
    return text, json.loads(text)


def to_tool_result(outcome: Outcome[Any, Any, Any]) -> ToolResult:
    """``Ok`` → ``structuredContent`` (a non-dict value wrapped as
    ``{"result": value}``) plus its JSON text; ``Err`` → ``isError: true`` with
    the error rendered as text.

    Total: it never raises. An ``Ok`` whose value has no JSON form (nested too
    deeply, ``NaN``, an object whose conversion raises) becomes an ``isError``
    result saying so, and an error whose ``__str__`` raises is rendered as
    ``<unprintable T object>``.

    >>> to_tool_result(Ok(float("nan"), None))["content"][0]["text"]
    'the result cannot be serialised as JSON: ValueError: Out of range float values are not JSON compliant'
    >>> to_tool_result(Ok(float("nan"), None))["isError"]
    True
    """
    if type(outcome) is Err:
        return _error_result(render_error(outcome.error))
    if type(outcome) is not Ok:
        return _error_result(f"not an Ok or Err: {short_repr(outcome)}")
    try:
        text, data = _serialised(outcome.value)
    except Exception as exc:  # RecursionError included: it is an Exception
        return _error_result(f"the result cannot be serialised as JSON: {truncate(exception_text(exc), 500)}")
    structured = data if isinstance(data, dict) else {"result": data}
    return {
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": False,
    }


def _field(result: object, name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


def _content(result: object) -> list[TextContent]:
    blocks: list[TextContent] = []
    for block in _field(result, "content") or ():
        kind = _field(block, "type")
        if kind == "text":
            blocks.append({"type": "text", "text": str(_field(block, "text"))})
    return blocks


def from_tool_result(
    result: object,
    state: _S,
    *,
    server: str = "?",
    tool: str = "?",
    output: Any = None,
) -> Outcome[_S, ToolFailed | ToolUnavailable, Any]:
    """A ``CallToolResult`` (a dict like ``ToolResult`` or an object with the
    same attributes, e.g. ``mcp.types.CallToolResult``) → ``Outcome``.

    ``isError`` → ``Err(ToolFailed(server, tool, text), state)``. Otherwise the
    value depends on ``output``: a pydantic model class validates
    ``structuredContent`` (failing → ``ToolUnavailable`` of kind
    ``INVALID_RESULT``, as is text that is JSON too deep to decode); ``str`` gives the
    text content; anything else (``None``, ``Any``) gives ``structuredContent``
    with a lone ``"result"`` key unwrapped, or the text parsed as JSON when
    there is no structured content.
    """
    content = _content(result)
    if _field(result, "isError"):
        return Err(ToolFailed(server, tool, _text(content)), state)
    structured = _field(result, "structuredContent")
    if output is str:
        return Ok(_text(content), state)
    validate = getattr(output, "model_validate", None)
    if validate is not None:
        if structured is None:
            return Err(ToolUnavailable(server, tool, "result has no structuredContent", _INVALID), state)
        try:
            return Ok(validate(structured), state)
        except Exception as exc:  # pydantic.ValidationError, without importing pydantic
            reason = f"result does not validate: {safe_str(exc)}"
            return Err(ToolUnavailable(server, tool, reason, _INVALID), state)
    if structured is not None:
        if isinstance(structured, Mapping) and set(structured) == {"result"}:
            return Ok(structured["result"], state)
        return Ok(structured, state)
    text = _text(content)
    try:
        return Ok(json.loads(text), state)
    except RecursionError:
        # JSON, but nested deeper than Python can decode: not a result we can hand on.
        reason = "the result's text is JSON nested too deeply to decode"
        return Err(ToolUnavailable(server, tool, reason, _INVALID), state)
    except ValueError:
        return Ok(text, state)
