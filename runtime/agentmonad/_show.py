"""Text of user values for messages: never raises, and can be bounded.

Error messages quote user values (a step's result, an error, a field's branch
values). Those values are arbitrary objects: their ``__repr__``/``__str__`` may
raise, or return something enormous. A message must neither let such an
exception escape in place of the error it describes nor copy megabytes into a
string nobody reads, so the runtime formats user values only through these
functions, and only when a message is actually rendered.

A failing ``__repr__``/``__str__`` gives ``<unprintable T object>``, as the
standard ``traceback`` module used to print for an exception whose ``__str__``
raises.

>>> class Bad:
...     def __repr__(self) -> str:
...         raise RuntimeError("no")
>>> safe_repr(Bad())
'<unprintable Bad object>'
>>> short_repr("x" * 1000, 12)
"'xxxxxxxxxx…"
>>> exception_text(KeyError("k"))
"KeyError: 'k'"
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

__all__ = ["type_name", "safe_repr", "safe_str", "truncate", "short_repr", "callable_name", "exception_text", "bounded_list", "VALUE_LIMIT"]

#: How many characters a message shows of one user value.
VALUE_LIMIT = 200


def type_name(value: object) -> str:
    """The name of ``value``'s class (``"object"`` if even that cannot be read)."""
    try:
        name = type(value).__name__
    except Exception:
        return "object"
    return name if type(name) is str else "object"


def _text(render: Callable[[object], str], value: object) -> str:
    try:
        text = render(value)
    except Exception:
        return f"<unprintable {type_name(value)} object>"
    # A str subclass could override its own formatting; hand on a plain str.
    return text if type(text) is str else str.__str__(text)


def safe_repr(value: object) -> str:
    """``repr(value)``, or ``<unprintable T object>`` if that raises."""
    return _text(repr, value)


def safe_str(value: object) -> str:
    """``str(value)``, or ``<unprintable T object>`` if that raises."""
    return _text(str, value)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked with ``…``."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def short_repr(value: object, limit: int = VALUE_LIMIT) -> str:
    """``safe_repr(value)`` cut to at most ``limit`` characters."""
    return truncate(safe_repr(value), limit)


def callable_name(f: object) -> str:
    """A function's qualified name for messages, else its (safe) repr.

    >>> callable_name(len), callable_name(3)
    ('len', '3')
    """
    for attr in ("__qualname__", "__name__"):
        try:
            name = getattr(f, attr, None)
        except Exception:
            continue
        if type(name) is str and name:
            return name
    return short_repr(f)


def exception_text(exc: BaseException) -> str:
    """``Type: message`` for an exception, its message rendered defensively."""
    return f"{type_name(exc)}: {safe_str(exc)}"


def bounded_list(values: Sequence[object], shown: int = 8, limit: int = VALUE_LIMIT) -> str:
    """A list's repr showing at most ``shown`` items, each cut to ``limit`` characters.

    >>> bounded_list(list(range(12)), shown=3)
    '[0, 1, 2, … and 9 more]'
    """
    try:
        count = len(values)
        head = [short_repr(v, limit) for v in values[:shown]]
    except Exception:
        return f"<unprintable {type_name(values)} object>"
    more = f", … and {count - len(head)} more" if count > len(head) else ""
    return f"[{', '.join(head)}{more}]"
