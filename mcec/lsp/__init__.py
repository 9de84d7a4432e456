"""``mcec lsp``: the language server (docs/editor.md).

The package is in three layers, so that the analysis can be tested and timed
without the protocol:

- :mod:`mcec.lsp.positions` — offsets of a :class:`~mcec.span.SourceFile` to the
  protocol's line / UTF-16 positions and back;
- :mod:`mcec.lsp.analysis` — one open spec: its parse (incremental, through
  :func:`mcec.syntax.incremental.reparse`), its check (the checker's public
  ``check``, as ``mcec check --fast`` runs it), and the names in it;
- :mod:`mcec.lsp.features` — hover, definitions, references, completion, code
  actions, symbols and semantic tokens, each a function of an analysis;
- :mod:`mcec.lsp.saves` — the full check with mypy a save starts, one at a time per
  spec (a newer save kills the running mypy);
- :mod:`mcec.lsp.server` — pygls wiring: documents, debouncing, saves.

Only :mod:`mcec.lsp.server` imports pygls, and only ``mcec lsp`` imports it, so
the other commands pay nothing for the language server.
"""

from __future__ import annotations

__all__ = ["serve_stdio"]


def serve_stdio() -> None:
    """Run the language server on stdin/stdout until the client says exit."""
    from mcec.lsp.server import build_server

    build_server().start_io()
