"""The error every durable-run operation raises for its user (:class:`DurableError`), and the one a
workflow's body raises when it cannot run in this process (:class:`RunNotStarted`)."""

__all__ = ["DurableError", "RunNotStarted"]


class DurableError(Exception):
    """A durable run cannot be started, resumed, answered, shown or cancelled: the message says why
    in one line (the commands print it and exit 2)."""


class RunNotStarted(Exception):
    """A workflow's body (a run's, or an ``each`` element's) could not run in this process, for a
    cause outside it (a module that fails to import, a model module missing, a spec that changed
    under it): nothing is recorded as its outcome. The workflow records a ``stopped`` record with
    the reason and cancels itself, so it stays resumable (DBOS resumes a cancelled workflow, never
    an ended one), and a resume with the cause fixed goes on from its last completed effect."""
