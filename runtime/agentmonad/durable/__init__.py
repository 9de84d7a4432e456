"""Durable runs (docs/language.md §13): the journal a durable run attaches to its run context,
and the stores that keep its records. A run with no journal attached never imports this package.

- :class:`DurableJournal`: the :class:`~agentmonad.context.Journal` the effect seam consults
  (replays a recorded effect, records any other), over a :class:`Store`;
- :class:`MemoryStore`: records in a list (tests);
- :mod:`agentmonad.durable.dbos`: records in DBOS's database (SQLite or Postgres); the only
  module of the runtime that imports ``dbos`` (the ``agentmonad[durable]`` extra);
- :class:`SiteTypes`/:class:`TypeTable`: the types a recorded value is written and read back with.
"""

from .codec import RecordError, SiteTypes, TypeTable
from .journal import DurableJournal, MemoryStore, Record, ReplayMismatch, Store

__all__ = ["DurableJournal", "MemoryStore", "Record", "RecordError", "ReplayMismatch", "SiteTypes", "Store", "TypeTable"]
