"""Values made once from an immutable object (a checked program, generated code), kept by the
object's identity: hashing a checked program would walk all of it, and equal programs made apart
are rare enough that identity is the right key."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar, final

__all__ = ["IdentityMemo"]

K = TypeVar("K")
V = TypeVar("V")


@final
class IdentityMemo(Generic[K, V]):
    """At most ``size`` values, each made by :meth:`get` from an object (and an optional hashable
    ``extra`` it is made with), the oldest dropped first: a long-lived process (a worker, the
    language server) keeps the latest. The object is kept beside its value, so that its id is not
    reused by another object while the entry lives."""

    __slots__ = ("_kept", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._kept: dict[tuple[int, Hashable], tuple[K, V]] = {}

    def get(self, obj: K, make: Callable[[], V], extra: Hashable = None) -> V:
        """The value made from ``obj`` (and ``extra``): kept, or ``make()`` now."""
        key = (id(obj), extra)
        kept = self._kept.get(key)
        if kept is not None and kept[0] is obj:
            return kept[1]
        value = make()
        if len(self._kept) >= self._size:
            self._kept.pop(next(iter(self._kept)))
        self._kept[key] = (obj, value)
        return value
