"""The last bytes a server wrote to its stderr, kept for the error a failed call gives.

Its own module, with no third-party imports, because both the stdio transport
(:mod:`agentmonad.mcp._stdio`, which imports ``mcp``) and the tool layer
(:mod:`agentmonad.mcp.tools`, which imports ``mcp`` only when a server is first
used) need it: in either one it made an import circle.
"""

from __future__ import annotations

__all__ = ["Tail"]


class Tail:
    """The last ``limit`` bytes written to a stream (a server's stderr).

    >>> t = Tail(8)
    >>> t.add(b"hello "); t.add(b"world\\n")
    >>> len(t), t.text(100)
    (8, '…o world')
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._data = bytearray()
        self._dropped = False

    def add(self, chunk: bytes) -> None:
        """Append ``chunk``, forgetting what no longer fits."""
        if len(chunk) >= self.limit:
            self._data[:] = chunk[-self.limit :]
            self._dropped = True
            return
        self._data += chunk
        excess = len(self._data) - self.limit
        if excess > 0:
            del self._data[:excess]
            self._dropped = True

    def __len__(self) -> int:
        return len(self._data)

    def text(self, chars: int) -> str:
        """At most the last ``chars`` characters kept, stripped; ``…`` marks a cut."""
        text = self._data.decode("utf-8", errors="replace").strip()
        cut = self._dropped or len(text) > chars
        return ("…" if cut and text else "") + text[-chars:]
