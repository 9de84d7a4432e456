"""``mcec serve`` elicits every answer type an ``ask`` accepts, and a client's malformed reply is
the ask's typed error (docs/language.md §9, §15; issue 47 item 2).

MCP form elicitation holds only flat objects of primitive fields, and the SDK rejects a reply whose
``content`` holds anything else: a ``list[int]`` answer, or a model with a list of models, is asked
as JSON text fields (mcec parses and validates them). A reply that is no valid elicitation result,
or a JSON-RPC error, is ``BadAnswer`` / ``NoAnswer``, which the spec's ``catch``/``orelse`` handle.
A real ``mcec serve`` subprocess (tests/tools/askforms/forms.mce): the SDK's own client where it
can say what is tested, and a raw JSON-RPC client on the server's stdin/stdout for the replies the
SDK client would never send."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent
from pydantic import TypeAdapter

from mcec.run.serve_ask import elicitation_form

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/tools/askforms/forms.mce"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}

#: The keywords of each kind of MCP form field (PrimitiveSchemaDefinition, protocol 2025-11-25).
FIELD_KEYS = {
    "string": {"type", "title", "description", "minLength", "maxLength", "format", "default", "enum"},
    "integer": {"type", "title", "description", "minimum", "maximum", "default"},
    "number": {"type", "title", "description", "minimum", "maximum", "default"},
    "boolean": {"type", "title", "description", "default"},
    "array": {"type", "title", "description", "items", "minItems", "maxItems", "default"},
}


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def assert_flat_form(schema: dict[str, Any]) -> None:
    """``schema`` is a form MCP allows: an object of primitive fields, nothing nested."""
    assert schema["type"] == "object" and set(schema) <= {"type", "properties", "required"}, schema
    for name, field in schema["properties"].items():
        assert set(field) <= FIELD_KEYS[field["type"]], (name, field)
        if field["type"] == "array":  # multi-select: an array of string choices only
            assert field["items"]["type"] == "string" and field["items"]["enum"], (name, field)


def test_a_list_and_a_nested_model_are_answered_through_json_text_fields() -> None:
    asked: dict[str, dict[str, Any]] = {}
    replies = {
        "How many boxes on each shelf?": [{"answer": "[1, 2, 3]"}, {"answer": '["one"]'}, {"answer": "1, 2"}],
        "The order, please.": [
            {"customer": "Ada", "rush": True, "lines": '[{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}]'}
        ],
    }

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked[params.message] = params.requested_schema  # type: ignore[union-attr]
        return ElicitResult(action="accept", content=replies[params.message].pop(0))

    async def main() -> list[CallToolResult]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcec", "serve", SPEC], env=ENV, cwd=str(ROOT)
        )
        async with (
            stdio_client(params) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            await session.initialize()
            return [
                await session.call_tool("count_boxes", {"value": "shelves"}),
                await session.call_tool("take_order", {"value": "next"}),
                await session.call_tool("count_boxes", {"value": "shelves"}),  # JSON, not a list of ints
                await session.call_tool("count_boxes", {"value": "shelves"}),  # not JSON
            ]

    counted, ordered, wrong_type, not_json = asyncio.run(asyncio.wait_for(main(), 60))
    assert not counted.is_error, text(counted)
    assert counted.structured_content == {"result": 6}
    assert not ordered.is_error, text(ordered)
    assert ordered.structured_content == {"result": "Ada (rush): 2 x A-1, 1 x B-7"}
    assert wrong_type.is_error and text(wrong_type).startswith("BadAnswer: bad answer to counts: ['one']"), text(
        wrong_type
    )
    assert not_json.is_error and text(not_json).startswith("BadAnswer: bad answer to counts: '1, 2': answer: not JSON")

    counts = asked["How many boxes on each shelf?"]
    assert_flat_form(counts)
    assert counts["required"] == ["answer"] and counts["properties"]["answer"]["type"] == "string"
    assert '{"items":{"type":"integer"},"type":"array"}' in counts["properties"]["answer"]["description"]
    order = asked["The order, please."]
    assert_flat_form(order)
    assert order["properties"]["customer"] == {"type": "string", "title": "Customer"}
    assert order["properties"]["rush"] == {"type": "boolean", "title": "Rush", "default": False}
    lines = order["properties"]["lines"]
    assert lines["type"] == "string" and lines["title"] == "Lines"
    described = json.loads(lines["description"].split("JSON of this schema: ", 1)[1])
    assert described["items"] == {"$ref": "#/$defs/Line"} and set(described["$defs"]["Line"]["properties"]) == {
        "sku",
        "qty",
    }


class RawClient:
    """A JSON-RPC client on ``mcec serve``'s stdin/stdout, answering its elicitations with
    whatever a test hands it (what the SDK's client validates away)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 100

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        assert line, "the server closed its stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    async def initialize(self) -> None:
        capabilities = {"elicitation": {"form": {}}}
        client = {"name": "raw", "version": "0"}
        params = {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": client}
        await self.send({"id": 1, "method": "initialize", "params": params})
        assert "result" in await self.receive()
        await self.send({"method": "notifications/initialized"})

    async def call(self, tool: str, value: str, reply: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool``; answer its one elicitation with ``reply`` (``{"result": …}`` or
        ``{"error": …}``); the call's result."""
        self.next_id += 1
        await self.send(
            {"id": self.next_id, "method": "tools/call", "params": {"name": tool, "arguments": {"value": value}}}
        )
        request = await self.receive()
        assert request["method"] == "elicitation/create", request
        await self.send({"id": request["id"], **reply})
        response = await self.receive()
        assert response["id"] == self.next_id, response
        result: dict[str, Any] = response["result"]
        return result


MALFORMED = {
    "content not an object": {"result": {"action": "accept", "content": [1, 2]}},
    "a value no form field holds": {"result": {"action": "accept", "content": {"answer": [1, 2]}}},
    "an unknown action": {"result": {"action": "maybe"}},
    "no action": {"result": {"content": {"answer": "[1]"}}},
    "accepted without content": {"result": {"action": "accept"}},
    "a JSON-RPC error": {"error": {"code": -32603, "message": "the form broke"}},
}


def test_malformed_replies_are_the_asks_errors_for_catch_and_orelse() -> None:
    async def main() -> dict[str, list[dict[str, Any]]]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "mcec",
            "serve",
            SPEC,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=ENV,
            cwd=str(ROOT),
        )
        client = RawClient(process)
        try:
            await client.initialize()
            seen = {}
            for what, reply in MALFORMED.items():
                seen[what] = [
                    await client.call("count_or_why", "shelves", reply),  # catch BadAnswer | NoAnswer
                    await client.call("order_or_nobody", "next", reply),  # orelse
                    await client.call("count_boxes", "shelves", reply),  # not handled: an isError naming it
                ]
            seen["still serving"] = [
                await client.call(
                    "count_boxes", "shelves", {"result": {"action": "accept", "content": {"answer": "[4, 5]"}}}
                )
            ]
            return seen
        finally:
            assert process.stdin is not None
            process.stdin.close()
            await process.wait()

    seen = asyncio.run(asyncio.wait_for(main(), 120))
    expected = {
        "content not an object": ("BadAnswer", "result.content: Input should be a valid dictionary"),
        "a value no form field holds": ("BadAnswer", "result.content.answer: not a value a form field holds"),
        "an unknown action": ("BadAnswer", "result.action: Input should be 'accept', 'cancel' or 'decline'"),
        "no action": ("BadAnswer", "result.action: Field required"),
        "accepted without content": ("BadAnswer", "answer: Field required"),
        "a JSON-RPC error": ("NoAnswer", "no answer to counts: the client answered with an error"),
    }
    for what, (error, detail) in expected.items():
        caught, fallen_back, unhandled = seen[what]
        assert not caught.get("isError"), (what, caught)
        assert caught["structuredContent"]["result"].startswith(f"caught {error}: "), (what, caught)
        assert detail in caught["structuredContent"]["result"], (what, caught)
        assert not fallen_back.get("isError") and fallen_back["structuredContent"] == {"result": "no order"}, (
            what,
            fallen_back,
        )
        assert unhandled["isError"] and unhandled["content"][0]["text"].startswith(f"{error}: "), (what, unhandled)
    assert seen["still serving"][0]["structuredContent"] == {"result": 9}


def test_every_answer_type_has_a_flat_form() -> None:
    from typing import Literal

    from tests.tools.askforms.impl import Line, Order

    for answer in (
        int,
        str,
        bool,
        float,
        Literal["a", "b"],
        Literal[1, 2],
        list[int],
        list[str],
        dict[str, int],
        Line | int,
        Order,
        list[Order],
        tuple[int, str],
        int | None,
    ):
        form = elicitation_form(TypeAdapter(answer).json_schema())
        assert_flat_form(form.schema)
    plain = elicitation_form(TypeAdapter(bool).json_schema())
    assert (plain.schema["properties"], plain.wrapped, plain.json_fields) == (
        {"answer": {"type": "boolean"}},
        True,
        frozenset(),
    )
    choice = elicitation_form(TypeAdapter(Literal["a", "b"]).json_schema())
    assert choice.schema["properties"]["answer"] == {"type": "string", "enum": ["a", "b"]} and not choice.json_fields


def test_a_models_fields_are_form_fields_or_json_text() -> None:
    from enum import Enum
    from typing import Literal

    from pydantic import BaseModel

    from agentmonad.human import BadAnswer
    from tests.tools.askforms.impl import Line

    class Colour(str, Enum):
        RED = "red"
        BLUE = "blue"

    class Pick(BaseModel):
        colour: Colour = Colour.RED
        size: Literal["S", "M"] | None = None
        tags: list[Literal["new", "sale"]] = []
        when: str
        lines: list[Line] = []
        extra: dict[str, int]

    form = elicitation_form(TypeAdapter(Pick).json_schema())
    assert_flat_form(form.schema)
    fields = form.schema["properties"]
    assert fields["colour"] == {"type": "string", "enum": ["red", "blue"], "title": "Colour", "default": "red"}
    assert fields["size"] == {"type": "string", "enum": ["S", "M"], "title": "Size"}
    assert fields["tags"] == {"type": "array", "items": {"type": "string", "enum": ["new", "sale"]}, "title": "Tags"}
    assert form.json_fields == {"lines", "extra"} and form.schema["required"] == ["when", "extra"]
    # JSON text parsed; an optional one left empty takes its default; a required one must be JSON
    answer = form.answer("pick", {"when": "now", "tags": ["sale"], "lines": " ", "extra": '{"a": 1}'})
    assert TypeAdapter(Pick).validate_python(answer) == Pick(when="now", tags=["sale"], extra={"a": 1})
    with pytest.raises(BadAnswer) as raised:
        form.answer("pick", {"when": "now", "extra": ""})
    assert raised.value.errors[0].startswith("extra: not JSON")
