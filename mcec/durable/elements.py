"""What a checked program says about its ``each(limit=N)`` and ``stream llm`` sites, for a durable
run the reference interpreter runs (:class:`mcec.durable.InterpretedVersion`); a compiled module
says the same in its ``SPEC_INFO`` (``tests/codegen/test_spec_info.py`` holds the two to agreement)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcec.check import typed as t
from mcec.sites import site_text

if TYPE_CHECKING:
    from agentmonad.durable.elements import ElementTypes
    from agentmonad.llm.streaming import Streaming

__all__ = ["each_sites", "element_types", "find_each", "stream_sites"]


def each_sites(program: t.Program) -> dict[str, t.TEach]:
    """Every ``each`` with a limit in the pipelines of ``program`` (not of the specs it uses: their
    ``each`` runs in the process that runs their pipeline), by site text."""
    return {site_text("each", node.span): node for node in t.limited_eaches(program)}


def find_each(program: t.Program, site: str) -> t.TEach:
    """The ``each`` at ``site`` (its text) in ``program``."""
    node = each_sites(program).get(site)
    if node is None:
        raise LookupError(f"no each(limit=…) at {site} in {program.path}")
    return node


def element_types(program: t.Program) -> dict[str, ElementTypes]:
    """The types of the elements of each ``each(limit=N)`` of ``program``, by site text."""
    from agentmonad.durable import SiteTypes
    from agentmonad.durable.elements import ElementTypes

    from mcec.run.pyobjects import error_classes, python_type

    state = python_type(program.state) if program.state is not None else type(None)
    return {site: ElementTypes(python_type(node.body.sig.input), SiteTypes(python_type(node.body.sig.output), state,
                                                                              error_classes(node.body.sig.errors)))
            for site, node in each_sites(program).items()}


def stream_sites(program: t.Program) -> dict[str, Streaming]:
    """Every site (as ``str(Site)``) where ``program``, or a spec it uses, calls a ``stream llm``
    step, with how that step streams its answer."""
    from agentmonad.llm.output import output_shape
    from agentmonad.llm.streaming import Streaming

    from mcec.durable.types import _programs
    from mcec.run.pyobjects import python_type

    sites: dict[str, Streaming] = {}
    for spec in _programs(program):
        made: dict[str, Streaming] = {}
        outputs = {llm.name: llm.sig.output for llm in spec.llms}
        for ref in t.stream_calls(spec):
            if ref.name not in made:
                made[ref.name] = Streaming(output_shape(python_type(outputs[ref.name])), None)
            sites[site_text(ref.name, ref.span)] = made[ref.name]
    return sites
