"""``mcec serve`` asks a person through the MCP client (docs/language.md §9, §15): a pipeline's
question goes to the client as a form elicitation with the question and the answer's JSON schema,
and the accepted form is the answer; a client that cannot elicit, or declines, gets the ask's
typed error (``NoOneToAsk``, ``NoAnswer``) as an ``isError`` result, and the server keeps serving.
A real server subprocess and the SDK's own client."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

from mcec.run.serve_ask import elicitation_form

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/durable/askbox/desk.mce"


def text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def _params() -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return StdioServerParameters(command=sys.executable, args=["-m", "mcec", "serve", SPEC], env=env, cwd=str(ROOT))


def test_a_question_is_an_elicitation_with_the_answer_schema() -> None:
    asked: list[ElicitRequestParams] = []

    async def elicit(_context: Any, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        if "B-2" in params.message:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"ok": "A-1" in params.message, "note": "checked"})

    async def main() -> tuple[CallToolResult, CallToolResult]:
        async with stdio_client(_params()) as (read, write), ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            answered = await session.call_tool("settle", {"value": "A-1:120,C-3:5"})
            declined = await session.call_tool("settle", {"value": "B-2:80"})
            return answered, declined

    answered, declined = asyncio.run(asyncio.wait_for(main(), 60))
    assert not answered.is_error, text(answered)
    assert answered.structured_content == {"result": ["paid", "refused: checked"]}
    messages = sorted(p.message for p in asked)
    assert messages == ["Refund 120.0 for A-1?", "Refund 5.0 for C-3?", "Refund 80.0 for B-2?"]
    schema: dict[str, Any] = asked[0].requested_schema  # type: ignore[union-attr]
    assert schema["properties"]["ok"] == {"title": "Ok", "type": "boolean"} and schema["required"] == ["ok"]
    assert declined.is_error and text(declined).startswith("NoAnswer: no answer to approve"), text(declined)


def test_a_client_that_cannot_elicit_gets_no_one_to_ask() -> None:
    async def main() -> tuple[CallToolResult, CallToolResult]:
        async with stdio_client(_params()) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            first = await session.call_tool("settle", {"value": "A-1:120"})
            again = await session.call_tool("settle", {"value": "A-1:120"})
            return first, again

    first, again = asyncio.run(asyncio.wait_for(main(), 60))
    for result in (first, again):  # a typed error, and the server keeps serving
        assert result.is_error
        assert text(result).startswith("NoOneToAsk: no one to ask approve"), text(result)


def test_an_answer_that_is_not_an_object_is_the_forms_one_field() -> None:
    plain = elicitation_form({"type": "boolean"})
    assert (plain.schema, plain.wrapped) == (
        {"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"]}, True
    )
    model = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    fields = elicitation_form(model)
    assert (fields.schema, fields.wrapped, fields.json_fields) == (model, False, frozenset())
