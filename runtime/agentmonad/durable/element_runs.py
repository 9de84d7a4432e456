"""``each`` elements of a queued durable run, run by workers (docs/language.md, "`each` over
workers"): the distributor a queued run attaches, and what a worker runs for one element (the
``mcec_element`` workflow's body).

Every ``each(limit=N)`` in a pipeline of the spec has a queue of its own,
``mcec-each.D12.FILE:LINE:COLUMN`` (:func:`agentmonad.durable.version.element_queue`), with a
concurrency of ``N`` across every worker listening to it: a worker that serves the spec version
listens to its element queues, so an element runs on a worker that has the same version, and
finds its body there by name (the compiled body function; the interpreter's, by site, in mcec).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, final

from .request import BadRequest, RunRequest
from .version import VersionError, element_queue, loader

if TYPE_CHECKING:
    from .elements import ElementDistributor
    from .journal import Record, Store
    from .version import SpecVersion

__all__ = ["ELEMENT_LOG", "distributor", "element_identity", "execute_element"]

#: An environment variable naming a file a worker appends a line to (JSON: pid, element id,
#: ``started``/``ended``) for every element it runs: where the elements of a run went.
ELEMENT_LOG = "MCEC_ELEMENT_LOG"


def distributor(version: SpecVersion, request: RunRequest) -> ElementDistributor:
    """The element distributor of a queued run of ``version`` (``request``: the run's)."""
    from .dbos import ElementQueues
    from .elements import ElementDistributor

    queues = {site: element_queue(version.digest, site) for site in version.each_limits()}
    base = {"run": request.as_json()}  # an element runs under its run's request (module, version, models…)
    return ElementDistributor(ElementQueues(), request.run_id, base, queues, version.element_types())


def _log(event: str, request: dict[str, Any]) -> None:
    path = os.environ.get(ELEMENT_LOG)
    if path:
        from .dbos import workflow_id

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


async def execute_element(data: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
    """Run one element (the ``mcec_element`` workflow's body): its body on its value and state,
    its effects recorded in ``store``; its Outcome (typed JSON) and tokens, or why it failed."""
    from ..context import current_run_context, hooks, reset_run_context, set_run_context
    from ..errors import Defect
    from ..llm import llm_config, llm_scope
    from ..mcp import tool_scope
    from ..report import defect_payload
    from .codec import decode_value, encode_result
    from .journal import DurableJournal
    from .version import llm_config_for

    _log("started", data)
    try:
        request = RunRequest.from_json(data.get("run"))
        version = loader().load(request)
        if version.digest != request.digest:
            raise VersionError(f"{request.shown} changed since the run started: this worker has another version of it")
        site = str(data["site"])
        types = version.element_types()[site]
        value = decode_value(types.value, data["value"], "element")
        state = decode_value(types.result.state, data["state"], "state")
        body = data.get("body")
        function = version.element(site, body if isinstance(body, str) else None)
        llm = llm_config_for(version, list(request.models))
    except (BadRequest, VersionError, LookupError, ValueError) as exc:
        return {"failed": f"this worker cannot run the element: {exc}"}
    identity = element_identity(request.run_id)
    journal = DurableJournal(store, version.type_table(), records, _answers_to(request.run_id, identity))
    tokens = _Tokens()
    deadline = data.get("deadline")

    async def run() -> Any:
        async with AsyncExitStack() as scopes:
            await scopes.enter_async_context(tool_scope())
            if llm is not None:
                await scopes.enter_async_context(llm_scope())
            return await function(state, value)

    try:
        with hooks(journal=journal), llm_config(llm) if llm is not None else _Nothing():
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
        return {"defect": defect_payload(defect)["defect"]}
    if isinstance(ended, list):  # it waits for people: the run asks them (its workflow stops, resumable)
        _log("waiting", data)
        return {"waiting": [q.as_json() for q in ended], "refused": journal.refused}
    _log("ended", data)
    return {"outcome": encode_result(ended, types.result), "usage": tokens.calls}


def element_identity(run_id: str) -> str:
    """The identity, in its run's journal, of the element whose workflow runs here (its workflow id
    is ``RUN/IDENTITY``, :mod:`agentmonad.durable.elements`)."""
    from .dbos import workflow_id

    return (workflow_id() or "").removeprefix(f"{run_id}/")


def _answers_to(run_id: str, identity: str) -> dict[str, tuple[object, object]]:
    """The answers given to the run ``run_id``'s questions that this element asks, by its own keys."""
    from .dbos import given_answers
    from .elements import element_question_key

    answers: dict[str, tuple[object, object]] = {}
    for key, given in given_answers(run_id).items():
        own = element_question_key(identity, key)
        if own is not None:
            answers[own] = given
    return answers


class _Nothing:
    """A context manager that does nothing."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

