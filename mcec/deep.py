"""Run compiler phases with room for deeply nested specs.

The parser, checker and generator walk trees recursively because that is the
clearest way to write them. A spec may nest ``par``/``each``/parentheses tens of
thousands deep, which would overflow CPython's default recursion limit and,
past that, the C stack of the main thread. :func:`with_deep_stack` runs a
function in a helper thread whose stack is large enough for such depths and
raises the recursion limit while it runs, so every phase can stay recursive.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Stack size of the helper thread; 1 GiB is virtual memory, only touched pages count.
STACK_BYTES = 1024 * 1024 * 1024
#: Recursion limit inside the helper thread (enough for 100,000-deep nesting at a few frames a level).
RECURSION_LIMIT = 1_000_000

_limit_lock = threading.Lock()


def with_deep_stack(function: Callable[[], T]) -> T:
    """Call ``function()`` in a thread with a large stack and a high recursion limit.

    Exceptions raised by ``function`` are re-raised in the caller, unchanged.
    """
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(function())
        except BaseException as exc:  # re-raised in the caller below
            failure.append(exc)

    with _limit_lock:
        old_stack = threading.stack_size(STACK_BYTES)
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
        try:
            thread = threading.Thread(target=target, name="mcec-deep")
            thread.start()
            thread.join()
        finally:
            threading.stack_size(old_stack)
            sys.setrecursionlimit(old_limit)
    if failure:
        raise failure[0]
    return result[0]
