"""A journal for tests of the effect seam: it runs every call and hands each result to
:meth:`PassThroughJournal.record`, which a test overrides to note what it needs."""

from __future__ import annotations

from typing import Any


class PassThroughJournal:
    """The journal protocol (``agentmonad.context.Journal``) with nothing recorded for replay:
    every effect runs; its result goes to :meth:`record`."""

    def record(self, effect: Any, result: object) -> None:
        """Note that ``effect`` gave ``result`` (nothing by default)."""

    async def perform(self, effect: Any, call: Any) -> Any:
        result = await call()
        self.record(effect, result)
        return result

    def perform_sync(self, effect: Any, call: Any) -> Any:
        result = call()
        self.record(effect, result)
        return result

    def branches(self, context: Any) -> _Indexed:
        return _Indexed(context)

    def deadline_entered(self, deadline: Any) -> None:
        pass

    def deadline_expired(self, deadline: Any) -> None:
        pass


class _Indexed:
    """A group's branches with nothing but their element index (``agentmonad.context.Branches``)."""

    def __init__(self, context: Any) -> None:
        self._context = context

    def context(self, index: int) -> Any:
        return self._context.with_index(index)

    def ended(self, index: int) -> None:
        pass
