"""``each`` elements of a queued durable run, run by workers (docs/language.md, "`each` over
workers"): the element queues of a program, the distributor a queued run attaches, and what a
worker runs for one element (the ``mcec_element`` workflow's body).

Every ``each(limit=N)`` in a pipeline of the spec has a queue of its own,
``mcec-each.D12.FILE:LINE:COLUMN`` (D12: the first 12 hex digits of the spec's fingerprint), with
a concurrency of ``N`` across every worker listening to it: a worker that serves the spec listens
to the element queues of the spec version it has, so an element runs on a worker that compiled the
same spec, and finds its body there by name (the compiled body function) or by site (the
interpreter's ``each``).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    import types as pytypes

    from mcec.check import typed as t

    from agentmonad.durable.elements import ElementDistributor, ElementTypes
    from agentmonad.durable.journal import Record, Store

    from mcec.compiler import CompileResult

__all__ = ["ELEMENT_LOG", "element_queue", "element_queues", "each_sites", "find_each", "distributor", "execute_element"]

#: An environment variable naming a file a worker appends a line to (JSON: pid, element id,
#: ``started``/``ended``) for every element it runs: where the elements of a run went.
ELEMENT_LOG = "MCEC_ELEMENT_LOG"


def _site_text(span: Any) -> str:
    # the form of str(agentmonad.Site("each", …)): what the generated code and the interpreter give
    return f"{os.path.basename(span.path)}:{span.line}:{span.column} (each)"


def each_sites(program: t.Program) -> dict[str, t.TEach]:
    """Every ``each`` with a limit in the pipelines of ``program`` (not of the specs it uses: their
    ``each`` runs in the process that runs their pipeline), by site text."""
    from mcec.check import typed as t  # here: opening the run database (`runs list`) needs no compiler

    return {_site_text(node.span): node for node in t.limited_eaches(program)}


def element_queue(digest: str, site: str) -> str:
    """The queue of the ``each`` at ``site`` (its text) in the spec version ``digest``."""
    return f"mcec-each.{digest[:12]}.{site.removesuffix(' (each)')}"


def element_queues(program: t.Program, digest: str) -> list[tuple[str, int]]:
    """The element queues of ``program`` (of fingerprint ``digest``): name and concurrency (the ``each``'s limit)."""
    return [(element_queue(digest, site), node.limit) for site, node in each_sites(program).items()
            if node.limit is not None]


def find_each(program: t.Program, site: str) -> t.TEach:
    """The ``each`` at ``site`` (its text) in ``program``."""
    node = each_sites(program).get(site)
    if node is None:
        raise LookupError(f"no each(limit=…) at {site} in {program.path}")
    return node


def _element_types(program: t.Program) -> dict[str, ElementTypes]:
    from agentmonad.durable import SiteTypes
    from agentmonad.durable.elements import ElementTypes

    from mcec.run.pyobjects import error_classes, python_type

    state = python_type(program.state) if program.state is not None else type(None)
    return {site: ElementTypes(python_type(node.body.sig.input), SiteTypes(python_type(node.body.sig.output), state,
                                                                              error_classes(node.body.sig.errors)))
            for site, node in each_sites(program).items()}


def distributor(program: t.Program, request: dict[str, Any], run_id: str) -> ElementDistributor:
    """The element distributor of a queued run of ``program`` (``request``: the run's)."""
    from agentmonad.durable.dbos import ElementQueues
    from agentmonad.durable.elements import ElementDistributor

    from mcec.fingerprint import fingerprint

    digest = fingerprint(program).digest
    queues = {site: element_queue(digest, site) for site in each_sites(program)}
    base = {k: request.get(k) for k in ("spec", "pipeline", "fingerprint", "cwd", "models", "interpret")}
    return ElementDistributor(ElementQueues(), run_id, base, queues, _element_types(program))


# ----------------------------------------------------------------------------- in the worker


@final
@dataclass(frozen=True, slots=True)
class _Loaded:
    """A spec as a worker runs its elements: compiled once per process and version."""

    program: t.Program
    module: pytypes.ModuleType | None
    table: Any  # agentmonad.durable.TypeTable
    types: dict[str, ElementTypes]
    llm: Any  # agentmonad.llm.LLMConfig | None


_loaded: dict[tuple[str, str, bool], _Loaded] = {}
#: The interpreter's body of each ``each``, by loaded spec and site.
_arrows: dict[tuple[int, str], Callable[[Any], Any]] = {}


def _load(request: dict[str, Any]) -> _Loaded:
    from mcec.durable import DurableError, _compiled, _served
    from mcec.durable.types import type_table
    from mcec.fingerprint import SpecFingerprint, fingerprint
    from mcec.run.runner import llm_run_config, load_module

    wanted = SpecFingerprint.from_json(request["fingerprint"]).digest
    key = (str(request["spec"]), wanted, bool(request.get("interpret")))
    loaded = _loaded.get(key)
    if loaded is not None:
        return loaded
    generate = not request.get("interpret")
    # a worker has its specs compiled already (mcec.durable.worker): the one of the run's version
    # (the path the run started with may not exist on this machine)
    served = [c for (_, gen), c in _served.items() if gen == generate and c.program is not None
              and fingerprint(c.program).digest == wanted]
    compiled: CompileResult = served[0] if served else _compiled(str(request["spec"]), generate=generate)
    program = compiled.program
    assert program is not None
    if fingerprint(program).digest != wanted:
        raise DurableError(f"{request['spec']} changed since the run started: this worker has another version of it")
    module = load_module(program, compiled.generated) if compiled.generated is not None else None
    loaded = _Loaded(program, module, type_table(program), _element_types(program),
                     llm_run_config(program, list(request.get("models") or [])))
    _loaded[key] = loaded
    return loaded


def _log(event: str, request: dict[str, Any]) -> None:
    path = os.environ.get(ELEMENT_LOG)
    if path:
        from agentmonad.durable.dbos import workflow_id

        line = json.dumps({"pid": os.getpid(), "id": workflow_id(), "index": request.get("index"), "event": event,
                           "at": time.time()})
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


@final
class _Tokens:
    """The tokens of the model calls of one element (they go back with its result)."""

    __slots__ = ("calls",)

    def __init__(self) -> None:
        self.calls: list[list[object]] = []

    def add(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls.append([model, prompt_tokens, completion_tokens])


async def execute_element(request: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
    """Run one element (the ``mcec_element`` workflow's body): its body on its value and state,
    its effects recorded in ``store``; its Outcome (typed JSON) and tokens, or why it failed."""
    import asyncio

    from agentmonad import AgentMonad, Defect
    from agentmonad.context import current_run_context, hooks, reset_run_context, set_run_context
    from agentmonad.durable import DurableJournal
    from agentmonad.durable.codec import decode_value, encode_result
    from agentmonad.llm import llm_config, llm_scope
    from agentmonad.mcp import tool_scope

    from mcec.durable import DurableError
    from mcec.run.interpret import Interpreter, _has_llms
    from mcec.run.runner import RunError, describe_error, safe_text

    if request.get("cwd") and request["cwd"] not in sys.path:  # the spec's modules import as they did
        sys.path.insert(0, request["cwd"])
    _log("started", request)
    try:
        loaded = _load(request)
        site = str(request["site"])
        types = loaded.types[site]
        value = decode_value(types.value, request["value"], "element")
        state = decode_value(types.result.state, request["state"], "state")
        if loaded.module is not None:
            body = getattr(loaded.module, str(request["body"]))
            running: Callable[[], Awaitable[Any]] = lambda: body(state, value)  # noqa: E731
        else:
            arrow = _arrows.get((id(loaded), site))
            if arrow is None:  # one interpreter per spec version and site, as one compiled module
                arrow = _arrows[(id(loaded), site)] = Interpreter(loaded.program).arrow(find_each(loaded.program, site).body)
            program: AgentMonad[Any, Any, Any] = arrow(value)
            running = lambda: program.run(state)  # noqa: E731
    except (DurableError, RunError, LookupError, AttributeError, KeyError) as exc:
        return {"failed": f"this worker cannot run the element: {exc}"}
    journal = DurableJournal(store, loaded.table, records)
    tokens = _Tokens()
    deadline = request.get("deadline")

    async def run() -> Any:
        async with AsyncExitStack() as scopes:
            await scopes.enter_async_context(tool_scope())
            if _has_llms(loaded.program):
                await scopes.enter_async_context(llm_scope())
            return await running()

    try:
        with hooks(journal=journal), llm_config(loaded.llm) if loaded.llm is not None else _nothing():
            token = set_run_context(current_run_context().with_meter(tokens))
            try:
                if deadline is not None:  # the run's timeout: no effect of the element starts after it
                    left = float(deadline) - time.time()
                    try:
                        async with asyncio.timeout(max(left, 0.0)):
                            ended = await journal.until_waiting(run())
                    except TimeoutError:
                        await store.flush()
                        return {"expired": True}
                else:
                    ended = await journal.until_waiting(run())
            finally:
                reset_run_context(token)
        await store.flush()
    except Defect as defect:
        cause = defect.cause
        return {"defect": {"message": safe_text(defect), "site": str(defect.site) if defect.site is not None else None,
                           "cause": describe_error(cause) if cause is not None else None}}
    if isinstance(ended, list):
        return {"failed": "an each element run by a worker cannot wait for people (ask it outside the each, or run the each without a queue)"}
    _log("ended", request)
    return {"outcome": encode_result(ended, types.result), "usage": tokens.calls}


class _nothing:
    """A context manager that does nothing."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

