"""The run scope of LLM steps: one client per model, closed when the run ends.

The *outermost* ``llm_scope()`` of a run owns the clients (the run context,
:mod:`agentmonad.context`, holds it, so ``par`` branches share it; nested scopes own nothing). A
model's client is made at its first call in the scope — with the settings
in force there (:mod:`agentmonad.llm.config`) — and every later call of that
model with the same endpoint settings reuses it, so concurrent calls share
its connection pool. When the outermost scope exits — normally, on an error,
a ``Defect`` or a cancellation — every client is closed and awaited (also if
the closing task is cancelled again meanwhile).

The scope also counts the run's token usage: ``async with llm_scope() as run``
gives an :class:`LLMRun` whose ``usage`` holds every call's tokens when the
block ends. A nested scope yields the outer run.

``llm_scope(config)`` also installs a configuration (laid over any outer
one) for the code inside, at any depth.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from ..context import Scope, current_run_context, reset_run_context, set_run_context
from .config import LLMConfig, Model, Resolved, resolve, set_config
from .openai_backend import OpenAIBackend
from ..usage import Usage
from .wire import Backend

__all__ = ["LLMRun", "llm_scope", "current_run"]


@dataclass
class LLMRun:
    """What a run scope holds that callers may read: the run's token usage."""

    usage: Usage = field(default_factory=Usage)


class _Scope(Scope):
    """The clients of one run (the outermost ``llm_scope``), kept in the run context
    under this class."""

    __slots__ = ("run", "clients", "_resolved")

    def __init__(self) -> None:
        self.run = LLMRun()
        #: (model name, endpoint settings) → the client's backend.
        self.clients: dict[tuple[object, ...], OpenAIBackend] = {}
        #: (id(model), id(config)) → (model, config, resolved, backend): the objects are kept,
        #: so their ids are not reused while the entry lives.
        self._resolved: dict[tuple[int, int], tuple[Model, LLMConfig, Resolved, Backend]] = {}

    def backend(self, model: Model, config: LLMConfig) -> tuple[Resolved, Backend]:
        """Model ``model``'s settings and backend under ``config`` (``Misconfigured`` if it has none)."""
        key = (id(model), id(config))
        found = self._resolved.get(key)
        if found is not None:
            return found[2], found[3]
        settings, replacement = config.settings_for(model.name)
        resolved = resolve(model, settings, need_endpoint=replacement is None)
        backend: Backend
        if replacement is not None:
            backend = replacement
        else:
            # No await between the lookup and the insert: concurrent first calls share one client.
            client_key = (model.name, *resolved.endpoint())
            made = self.clients.get(client_key)
            if made is None:
                made = self.clients[client_key] = OpenAIBackend(resolved)
            backend = made
        self._resolved[key] = (model, config, resolved, backend)
        return resolved, backend

    def closing(self) -> list[Awaitable[object]]:
        """Start closing every client (the shared :meth:`Scope.close` waits for them)."""
        clients = list(self.clients.values())
        self.clients.clear()
        self._resolved.clear()
        return [c.close() for c in clients]


def current_scope() -> _Scope | None:
    """The model scope open here, if any."""
    return current_run_context().part(_Scope)


def current_run() -> LLMRun | None:
    """The run of the scope open here, if any."""
    scope = current_run_context().part(_Scope)
    return scope.run if scope is not None else None


@asynccontextmanager
async def llm_scope(config: LLMConfig | None = None) -> AsyncIterator[LLMRun]:
    """The run scope of model clients (see the module docstring); yields the :class:`LLMRun`."""
    config_token = set_config(config) if config is not None else None
    try:
        outer = current_run_context().part(_Scope)
        if outer is not None:
            yield outer.run
            return
        scope = _Scope()
        token = set_run_context(current_run_context().with_part(_Scope, scope).with_meter(scope.run.usage))
        abandoned = False
        try:
            yield scope.run
        except GeneratorExit:
            abandoned = True
            raise
        finally:
            reset_run_context(token)  # one closed from another context, which never saw this scope, is ignored
            # A dropped run's coroutine (being garbage collected) may not await any more.
            if not abandoned:
                await scope.close()
    finally:
        if config_token is not None:
            reset_run_context(config_token)
