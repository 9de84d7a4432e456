"""Runs handed out to workers (:mod:`agentmonad.durable.queues`); ``enqueue`` here takes a spec path."""

from agentmonad.durable.queues import DEFAULT_QUEUE, check_queue_name, queue_name
from agentmonad.durable.runs import result

from mcec.durable import enqueue

__all__ = ["DEFAULT_QUEUE", "check_queue_name", "enqueue", "queue_name", "result"]
