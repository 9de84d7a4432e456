"""The ReAct agent of ``benchmarks/react_bench.py``: its spec (``react.mce``), the
Python side (``impl.py``) and its MCP tool server (``tool_server.py``)."""
