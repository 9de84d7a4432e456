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

import json
import os
import time
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any, final

from .request import RunRequest
from .version import SpecVersion, VersionError, element_queue, loader

if TYPE_CHECKING:
    from ..concurrency import ElementsHook
    from .journal import Record, Store

__all__ = ["ELEMENT_LOG", "distributor", "execute_element"]

#: An environment variable naming a file a worker appends a line to (JSON: pid, element id,
#: ``started``/``ended``) for every element it runs: where the elements of a run went.
ELEMENT_LOG = "MCEC_ELEMENT_LOG"


def distributor(version: SpecVersion, request: RunRequest) -> ElementsHook | None:
    """The element distributor of a run enqueued for workers (its request names its queue) or
    started with ``elements=True``: its ``each(limit=N)`` elements go on their queues (None: a run
    started in-process runs them itself, resumed or not)."""
    from ..concurrency import ElementsHook
    from .dbos import ElementQueues
    from .elements import ElementDistributor

    if not (request.elements or request.queue) or not version.each_limits():
        return None
    queues = {site: element_queue(version.digest, site) for site in version.each_limits()}
    base = {"run": request.as_json()}  # an element runs under its run's request (module, version, models…)
    return ElementsHook(ElementDistributor(ElementQueues(), request.run_id, base, queues, version.element_types()))


def _log(event: str, request: dict[str, Any]) -> None:
    path = os.environ.get(ELEMENT_LOG)
    if path:
        from .dbos import workflow_id

        line = json.dumps({"pid": os.getpid(), "id": workflow_id(), "index": request.get("index"), "event": event,
                           "at": time.time()})
        with open(path, "a", encoding="utf-8") as out:
            out.write(line + "\n")


@final
class _Tokens(list[list[object]]):
    """The tokens of each model call of one element (they go back with its result): a meter."""

    def add(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.append([model, prompt_tokens, completion_tokens])


async def execute_element(data: dict[str, Any], store: Store, records: dict[str, Record]) -> dict[str, Any]:
    """Run one element (the ``mcec_element`` workflow's body, :func:`agentmonad.durable.body.execute_body`):
    its body on its value and state, its effects recorded in ``store``; its Outcome (typed JSON)
    and tokens (:class:`~agentmonad.durable.elements.ElementEnded`), or why it did not end."""
    from ..mcp import tool_scope
    from .body import Workload, execute_body
    from .codec import decode_value, encode_result
    from .version import llm_config_for

    def load() -> Workload:
        from ..llm import llm_scope

        request = RunRequest.from_json(data.get("run"))
        version = loader().load(request)
        if version.digest != request.digest:
            raise VersionError(f"{request.shown} changed since the run started: this worker has another version of it")
        types = version.element_types()[str(data["site"])]
        value = decode_value(types.value, data["value"], "element")
        state = decode_value(types.result.state, data["state"], "state")
        function = version.element(str(data["site"]), data["body"] if isinstance(data.get("body"), str) else None)
        llm = llm_config_for(version, list(request.models))
        tokens = _Tokens()

        async def call() -> Any:
            async with AsyncExitStack() as scopes:
                await scopes.enter_async_context(tool_scope())
                if llm is not None:
                    await scopes.enter_async_context(llm_scope())
                return await function(state, value)

        def ended(outcome: Any) -> dict[str, Any]:
            return {"outcome": encode_result(outcome, types.result), "usage": tokens}

        deadline = data.get("deadline")  # the run's timeout: no effect of the element starts after it
        return Workload(version, call, _answers_to(request.run_id), llm, tokens,
                        ended, deadline=float(deadline) if deadline is not None else None)

    _log("started", data)
    result = await execute_body(str(data.get("run_id")), load, store, records)
    if result.get("status") == "waiting" or "outcome" in result:  # it waits for people (the run asks them), or ended
        _log("waiting" if "outcome" not in result else "ended", data)
    return result


def _answers_to(run_id: str) -> dict[str, tuple[object, object]]:
    """The answers given to the run ``run_id``'s questions that the element running here asks, by its
    own keys (its identity in the run's journal: its workflow id is ``RUN/IDENTITY``)."""
    from .dbos import given_answers, workflow_id
    from .elements import element_question_key

    identity = (workflow_id() or "").removeprefix(f"{run_id}/")
    return {own: given for key, given in given_answers(run_id).items()
            if (own := element_question_key(identity, key)) is not None}
