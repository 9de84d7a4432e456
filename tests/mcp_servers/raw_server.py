"""A hand-written MCP stdio server whose one tool answers a result nested too deeply to parse.

Run as ``python tests/mcp_servers/raw_server.py DEPTH``. It speaks just enough
JSON-RPC (``initialize``, ``tools/list``, ``tools/call``) to reach the point: the
answer to ``tools/call`` is one valid JSON line whose ``structuredContent`` nests
``DEPTH`` lists deep, which the client's message parser cannot take. A second
tool, ``ping``, answers normally, so tests can see the connection survives.
"""

from __future__ import annotations

import json
import sys

DEPTH = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000


def send(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def answer(request_id: object, result: dict[str, object]) -> None:
    send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}))


for line in sys.stdin:
    if not line.strip():
        continue
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        continue  # a notification
    if method == "initialize":
        answer(
            request_id,
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            },
        )
    elif method == "tools/list":
        schema = {"type": "object"}
        answer(request_id, {"tools": [{"name": "deep", "inputSchema": schema}, {"name": "ping", "inputSchema": schema}]})
    elif method == "tools/call" and message["params"]["name"] == "deep":
        deep = "[" * DEPTH + "]" * DEPTH
        head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
        send(head + ', "result": {"content": [], "structuredContent": {"value": ' + deep + "}}}")
    elif method == "tools/call":
        answer(request_id, {"content": [{"type": "text", "text": "pong"}]})
    else:
        send(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}}))
