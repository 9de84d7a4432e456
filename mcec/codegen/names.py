"""Fresh names for the generated module.

Generated code lives in the same namespace as the spec's names (module globals)
and Python's builtins. :class:`NameAllocator` hands out names that collide with
neither: every spec name is reserved up front, and a builtin that the generated
code needs but the spec shadows is reached through an allocated ``builtins``
alias instead.
"""

from __future__ import annotations

import builtins
import keyword


class NameAllocator:
    """Allocates identifiers that are unique in one scope (module or function)."""

    def __init__(self, reserved: set[str], parent: NameAllocator | None = None) -> None:
        self._taken = set(reserved)
        self._parent = parent
        # next suffix to try per preferred name: keeps ``fresh`` O(1) amortised
        # when one prefix is used thousands of times (``r``, ``v`` in long chains)
        self._next: dict[str, int] = {}
        self._shared: dict[str, str] = {}

    def is_taken(self, name: str) -> bool:
        """True when ``name`` is used in this scope or an enclosing one."""
        return name in self._taken or (self._parent is not None and self._parent.is_taken(name))

    def fresh(self, preferred: str) -> str:
        """``preferred`` if free, else ``preferred_2``, ``preferred_3`` … (never a keyword)."""
        counter = self._next.get(preferred, 1)
        candidate = preferred if counter == 1 else f"{preferred}_{counter}"
        while self.is_taken(candidate) or keyword.iskeyword(candidate):
            counter += 1
            candidate = f"{preferred}_{counter}"
        self._next[preferred] = counter + 1
        self._taken.add(candidate)
        return candidate

    def shared(self, preferred: str) -> str:
        """One fresh name per scope for ``preferred``, the same each time it is asked for
        (``except Exception as exc`` reuses one name in a function: Python unbinds it after
        each handler)."""
        name = self._shared.get(preferred)
        if name is None:
            name = self._shared[preferred] = self.fresh(preferred)
        return name

    def shared_as(self, preferred: str) -> str | None:
        """The name :meth:`shared` gave ``preferred`` in this scope so far (None: not asked for)."""
        return self._shared.get(preferred)

    def child(self) -> NameAllocator:
        """A nested scope (a function body) that sees this scope's names as taken."""
        return NameAllocator(set(), parent=self)


def shadows_builtin(name: str) -> bool:
    """True when ``name`` is also the name of a Python builtin."""
    return hasattr(builtins, name)
