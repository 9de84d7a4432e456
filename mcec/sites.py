"""A spec's sites as the runtime names them: the one place mcec turns a declaration's or a use's
span into an :class:`agentmonad.Site` (the form the generated code's site constants take), so the
interpreter, the durable run's type table, its ``each`` sites, the recorded runs and the upgrade
classifier all key a site by the same text."""

from __future__ import annotations

import os

from agentmonad import Site

from mcec.span import Span

__all__ = ["site_of", "site_text"]


def site_of(name: str, span: Span) -> Site:
    """The runtime's :class:`~agentmonad.Site` of ``name`` (a step, tool, model call, ask, ``each``
    or pipeline) at ``span``: the spec file by its name, the line and the column."""
    return Site(name, os.path.basename(span.path), span.line, span.column)


def site_text(name: str, span: Span) -> str:
    """``str(site_of(name, span))``: what a journal, a recording and a queue name look a site up by."""
    return str(site_of(name, span))
