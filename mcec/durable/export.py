"""``mcec runs export ID -o FILE``: a durable run that ended, as a recording (docs/language.md §17).

A durable run's journal already holds every effect it performed, typed, by identity and site
(§13): the recording is those records (not the ones that say why a run stopped), the run's spec,
pipeline, input and first state, and its Outcome as typed JSON. The run's database keeps its
Outcome as the report ``mcec run`` prints, not typed; so the export replays the records
(:func:`mcec.run.recorded.replay_run`, every effect answered from them) and keeps the Outcome
that replay gives only when its report is the one the run ended with: an export that would not
replay to the run's own result is refused, never written.
"""

from __future__ import annotations

import contextlib
import json
import os

from agentmonad import Defect
from agentmonad.durable.journal import NOT_EFFECTS
from agentmonad.record import Recording, kept_of, model_secrets
from agentmonad.spec import spec_info

__all__ = ["export"]

#: The fields of the report a run ended with that are not its Outcome.
_NOT_OUTCOME = ("run_id", "usage")


def export(run_id: str, *, db: str | None = None) -> Recording:
    """The recording of the durable run ``run_id`` (:class:`mcec.durable.DurableError`: no such
    run, one that has not ended, or one whose records do not replay to its result)."""
    from agentmonad.durable.runs import _known, engine_for, request_of, status_of

    from mcec.durable import DurableError, _compiled
    from mcec.run.recorded import model_namespaces, replay_run, state_as_json
    from agentmonad.report import report

    from mcec.run.runner import RunError, defect_report, llm_run_config, load_module

    with engine_for(db) as engine:
        info = _known(engine, run_id)
        records = engine.steps(run_id)
        status = status_of(info, records)
        request = request_of(info)
    if status not in ("finished", "failed") or info.result is None:
        raise DurableError(f"run {run_id} is {status}: only a run that ended can be exported")
    if request.spec is None:
        raise DurableError(f"run {run_id} ran the module {request.module}: export a run started from a spec "
                           "(`mcec run SPEC --durable`)")
    spec, pipeline = request.spec, request.pipeline
    interpreted = request.interpret
    models = request.models
    compiled = _compiled(spec, generate=True)
    assert compiled.program is not None and compiled.generated is not None
    module = load_module(compiled.program, compiled.generated)
    described = spec_info(module)
    state_json = request.state
    _, state = described.prepare(pipeline, request.input, state_json)
    effects = tuple(kept_of(r) for r in records if r["kind"] not in NOT_EFFECTS)
    first_state = json.loads(state_json) if state_json is not None else state_as_json(described, state)
    draft = Recording(_shown(spec), described.source_sha256, pipeline, "interpreted" if interpreted else "compiled",
                      json.loads(request.input), first_state, effects, {}, models)
    replayed = replay_run(module, compiled.program, draft, interpreted=interpreted)
    ended = replayed.ran.result
    shown = (defect_report(ended) if isinstance(ended, Defect) else report(ended)).payload
    kept = {k: v for k, v in info.result.items() if k not in _NOT_OUTCOME}
    if replayed.failure is not None or shown != kept:
        raise DurableError(f"run {run_id}: its records do not replay to the result it ended with "
                           f"({replayed.failure or 'another Outcome'}); its spec or code changed since it ran")
    try:
        llm = llm_run_config(compiled.program, list(models))
    except RunError:
        llm = None
    with _configured(llm):
        secrets = model_secrets(model_namespaces(module))
    exported = Recording(draft.spec, draft.spec_sha256, pipeline, draft.runner, draft.input, draft.state, effects,
                         replayed.ran.encoded, models)
    return exported.redacted(secrets)


def _configured(llm: object) -> contextlib.AbstractContextManager[object]:
    """The run's model configuration installed (nothing when the spec has no llm step)."""
    if llm is None:
        return contextlib.nullcontext()
    from agentmonad.llm import LLMConfig, llm_config

    assert isinstance(llm, LLMConfig)
    return llm_config(llm)


def _shown(spec: str) -> str:
    """The spec's path relative to the working directory when it is inside it (a recording is
    replayed from the project's folder), else as the run has it."""
    relative = os.path.relpath(spec)
    return spec if relative.startswith("..") else relative
