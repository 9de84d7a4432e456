"""Running what the compiler built: the generated module (runner), the reference interpreter,
and serving pipelines over MCP (serve)."""
