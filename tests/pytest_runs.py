"""The plugins a test blocks when it runs pytest itself, to see the mcec plugin as a user's run does."""

from __future__ import annotations

#: ``-p no:NAME`` for the installed plugins that are slow to import and irrelevant to a run over a
#: project's specs (blocking one that is not installed is harmless); the mcec plugin still loads from
#: its entry point. pytest-lsp (lsprotocol's types) and hypothesis are most of an inner pytest's start:
#: about 2.8 s of CPU with every plugin against 0.4 s without them.
QUIET = [
    f"-pno:{name}"
    for name in (
        "langsmith_plugin",
        "anyio",
        "returns",
        "hypothesispytest",
        "benchmark",
        "xdist",
        "xdist.looponfail",
        "pytest-lsp",
    )
]
