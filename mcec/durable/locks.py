"""The run lock (:mod:`agentmonad.durable.locks`, where it lives: the runtime takes it too)."""

from agentmonad.durable.locks import HeldLock, LockBusy, run_lock

__all__ = ["HeldLock", "LockBusy", "run_lock"]
