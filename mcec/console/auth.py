"""Who gets into ``mcec console``, and which requests may change a run.

* A console bound beyond the loopback interface needs a token (``--token`` or
  ``MCEC_CONSOLE_TOKEN``): a request carries it as ``Authorization: Bearer …``, as ``?token=…``
  (the link the command prints; the console then keeps it in an HttpOnly, SameSite=Strict cookie),
  or in that cookie. It is compared in constant time (:func:`hmac.compare_digest`).
* Bound to loopback without a token, a request must name a loopback host (``Host``): a site whose
  name was pointed at 127.0.0.1 (DNS rebinding) would otherwise be the console's own origin.
* Every request that changes something (answer, cancel, resume) is a POST that carries the
  console's CSRF token (a hidden field of each form, random per console process) and comes from
  the console's own origin (its ``Origin`` header, or its ``Referer`` when a browser sends no
  Origin, names the host it was sent to): another site can neither read the token nor pass as
  the console.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from dataclasses import dataclass
from typing import Final, final
from urllib.parse import urlsplit

__all__ = ["COOKIE", "Guard", "is_loopback"]

#: The cookie the console keeps its token in once a link with ``?token=`` was opened.
COOKIE: Final = "mcec_console_token"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only (``127.0.0.1``, ``::1``, ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@final
@dataclass(frozen=True, slots=True)
class Guard:
    """The console's access token (None: none needed, bound to loopback) and its CSRF token."""

    token: str | None
    csrf: str

    @staticmethod
    def made(token: str | None) -> Guard:
        """A guard with ``token`` and a new random CSRF token."""
        return Guard(token or None, secrets.token_urlsafe(32))

    def admits(self, bearer: str | None, query: str | None, cookie: str | None) -> bool:
        """Whether a request carrying these may be served."""
        if self.token is None:
            return True
        return any(_same(given, self.token) for given in (bearer, query, cookie))

    def serves_host(self, host: str | None) -> bool:
        """Whether a request sent to ``host`` (its ``Host`` header) is served: any, with a token
        (the token is the guard); without one (bound to loopback), only a loopback name, so that a
        page of another site whose name was made to point at 127.0.0.1 (DNS rebinding) is refused."""
        if self.token is not None:
            return True
        if not host:
            return False
        name = urlsplit(f"http://{host}").hostname or ""
        return is_loopback(name)

    def may_change(self, csrf: str | None, origin: str | None, referer: str | None, host: str | None) -> str | None:
        """None when a POST may change a run; else why not (shown to the user)."""
        if not _same(csrf, self.csrf):
            return "the form's CSRF token is missing or wrong: reload the page and try again"
        source = origin if origin and origin != "null" else referer
        if not source or host is None:
            return "the request names no Origin: refused (a cross-site request cannot be told apart)"
        if urlsplit(source).netloc.lower() != host.lower():
            return f"the request comes from another origin ({urlsplit(source).netloc or source}): refused"
        return None
