"""The fixtures of the language server's tests (defined in lsp_helpers.py)."""

from lsp_helpers import client, project  # noqa: F401  (fixtures)
