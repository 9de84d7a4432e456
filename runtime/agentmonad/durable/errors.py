"""The error every durable-run operation raises for its user (:class:`DurableError`)."""

__all__ = ["DurableError"]


class DurableError(Exception):
    """A durable run cannot be started, resumed, answered, shown or cancelled: the message says why
    in one line (the commands print it and exit 2)."""
