"""The types a durable run records its values with: one :class:`SiteTypes` per site of the
checked program (and of the specs it uses), from the checker's signatures resolved to Python
(docs/language.md §13: recorded values are typed JSON, validated against today's types)."""

from __future__ import annotations

from typing import Any

from agentmonad.durable import SiteTypes, TypeTable

from mcec.check import typed as t
from mcec.run.pyobjects import error_classes, python_type
from mcec.sites import site_text


def _state_type(program: t.Program) -> Any:
    return python_type(program.state) if program.state is not None else type(None)


def _programs(program: t.Program) -> list[t.Program]:
    """``program`` and every spec it uses, directly or not, each once."""
    seen: dict[str, t.Program] = {program.path: program}
    stack = [program]
    while stack:
        for used in stack.pop().uses:
            if used.program.path not in seen:
                seen[used.program.path] = used.program
                stack.append(used.program)
    return list(seen.values())


def type_table(program: t.Program) -> TypeTable:
    """The types of every effect site of ``program``: its step, tool, llm and spawn uses (by
    site), and its steps, tools, llms and toolbox pipelines by name (a checked plan's sites)."""
    by_site: dict[str, SiteTypes] = {}
    by_name: dict[str, SiteTypes] = {}
    for spec in reversed(_programs(program)):  # this spec's names win over the ones it uses
        state = _state_type(spec)

        def types(sig: t.Sig) -> SiteTypes:
            return SiteTypes(python_type(sig.output), state, error_classes(sig.errors))

        for name, span, sig in t.recorded_effects(spec):
            if span is None:
                by_name[name] = types(sig)
            else:
                by_site[site_text(name, span)] = types(sig)
    return TypeTable(by_site, by_name)
