"""The run database's URL (docs/language.md §13, "Where runs are kept"): which forms are accepted,
and how a URL is shown without its secrets.

Accepted: a ``postgresql://…`` URL; ``sqlite:///PATH`` (PATH relative to the current folder, as
SQLAlchemy reads it — unless that folder does not exist and ``/PATH``'s does: then ``/PATH``, the
file the user meant); ``sqlite:////PATH`` (absolute); a bare path (an SQLite file). An SQLite URL
is made absolute, so that every process — whatever folder it runs in — opens the same file.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

__all__ = ["SECRET_PARAMETERS", "file_identity", "redacted", "resolved", "shown"]

#: Query parameters of a database URL whose value is a secret (libpq's and psycopg's names).
SECRET_PARAMETERS = frozenset({"password", "passwd", "pass", "sslpassword", "sslkey_password"})


def file_identity(url: str) -> tuple[int, int] | None:
    """The SQLite file ``url`` opens, as its device and inode (None: not there yet, or not an
    SQLite file). A process that keeps connections open on a database compares it from call to
    call: a file deleted and made anew under the same path is another database, and a connection
    still open on the old one would write where nobody reads."""
    if not url.startswith("sqlite"):
        return None
    import sqlalchemy as sa

    database = sa.make_url(url).database
    if not database or database == ":memory:":
        return None
    try:
        found = Path(database).stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def resolved(chosen: str) -> str:
    """``chosen`` (a URL or a bare path) as the URL every process opens the same way."""
    if "://" not in chosen:
        return f"sqlite:///{Path(chosen).resolve()}"
    scheme, rest = chosen.split("://", 1)
    if not scheme.startswith("sqlite") or not rest.startswith("/") or rest.startswith("//") or rest == "/:memory:":
        return chosen
    path, _, query = rest[1:].partition("?")
    relative = Path(path)
    if not relative.resolve().parent.is_dir() and Path("/", path).parent.is_dir():
        absolute = Path("/", path)  # `sqlite:///srv/runs.sqlite` written for the file in /srv
    else:
        absolute = relative.resolve()
    return f"{scheme}:///{absolute}" + (f"?{query}" if query else "")


def _secrets(url: str) -> list[str]:
    """The secrets ``url`` holds: the password of its user part, and secret query parameters."""
    if "://" not in url:
        return []
    found: list[str] = []
    authority = url.split("://", 1)[1].split("/", 1)[0]
    if "@" in authority or "@" in url.split("://", 1)[1].split("?", 1)[0]:
        # a raw `@` in a password: everything up to the last `@` before the host is the user part
        credentials = url.split("://", 1)[1].split("?", 1)[0].rsplit("@", 1)[0]
        if ":" in credentials:
            found.append(credentials.split(":", 1)[1])
    query = urlsplit(url).query
    found += [value for name, value in parse_qsl(query, keep_blank_values=False) if name.lower() in SECRET_PARAMETERS]
    return [secret for secret in found if secret]


def shown(url: str) -> str:
    """``url`` as a message may show it: no password in its user part, none in its query."""
    text = url
    if "://" in text and "@" in text.split("://", 1)[1]:
        scheme, rest = text.split("://", 1)
        credentials, host = rest.rsplit("@", 1)
        text = f"{scheme}://{credentials.split(':', 1)[0]}@{host}"
    return redacted(text, url)


def redacted(text: str, url: str) -> str:
    """``text`` (a message, perhaps a driver's, that may quote ``url`` or parts of it) with every
    secret of ``url`` replaced by ``***``: in any encoding the driver may have quoted it in."""
    from urllib.parse import quote, unquote

    secrets = set(_secrets(url))
    # a raw `@` in a password makes a driver split it, and quote only its tail: each piece is secret too
    secrets |= {piece for secret in list(secrets) for piece in secret.split("@") if len(piece) >= 3}
    for secret in sorted(secrets, key=len, reverse=True):
        for form in {secret, unquote(secret), quote(secret, safe="")}:
            if form:
                text = text.replace(form, "***")
    return text
