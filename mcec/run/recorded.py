"""Recorded runs from a spec (docs/language.md §17): ``mcec run --record``, ``mcec replay`` and
the pytest plugin's recordings, over :mod:`agentmonad.record`.

A run is recorded or replayed as ``mcec run`` runs it (the compiled module, or the reference
interpreter with ``--interpret``), with a journal attached: a :class:`~agentmonad.record.Recorder`
or a :class:`~agentmonad.record.Replayer`. A replay that fails at an effect is a diagnostic
(MCE040) at the spec's line of the effect the run asked for, saying which recorded effect was
expected there.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import types as pytypes
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agentmonad import Defect, Outcome, Site
from agentmonad.context import HumanInput, hooks
from agentmonad.durable import RecordError, ReplayMismatch, TypeTable
from agentmonad.observe import run_observed
from agentmonad.record import (
    CANCELLED, EffectDifference, NotRecorded, Recorder, Recording, Replayer, encode_outcome, model_secrets, same_outcome,
)
from agentmonad.spec import SpecInfo, spec_info

from mcec.check.typed import Program
from mcec.diagnostics import Code, Diagnostic, Label, error
from mcec.sites import site_text
from mcec.span import Span

__all__ = ["REPLAY_CODE", "Ran", "Replayed", "record_run", "replay_run", "replay_diagnostic", "site_spans",
           "outcome_diff", "resolve_spec", "model_namespaces", "state_as_json"]

#: The code of a replay that fails at an effect (docs/language.md §8, §17).
REPLAY_CODE: Final[Code] = "MCE040"


@dataclass(frozen=True, slots=True)
class Ran:
    """A finished run: its Outcome (or the Defect it ended with) and that as typed JSON."""

    result: Outcome[Any, Any, Any] | Defect
    encoded: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Replayed:
    """A finished replay: the run, whether its Outcome is the recorded one, how many effects were
    answered from the file and how many ran for real (``live`` kinds), and the differences of
    those from the recording."""

    ran: Ran
    same: bool
    replayed: int
    performed: int
    differences: tuple[EffectDifference, ...]

    @property
    def failure(self) -> Exception | None:
        """The replay failure the run ended with (an effect the recording does not hold, holds as
        another effect, or holds with a value of another type), if it did."""
        result = self.ran.result
        if isinstance(result, Defect) and isinstance(result.cause, (NotRecorded, ReplayMismatch, RecordError)):
            return result.cause
        return None


def _types(module: pytypes.ModuleType) -> TypeTable:
    """The types a run records its effects with: its compiled module's (``SPEC_INFO``), which are
    those of the checked program too (tests/codegen/test_spec_info.py), so the interpreter's run
    of the same spec records with them as well."""
    return spec_info(module).type_table()


def model_namespaces(module: pytypes.ModuleType) -> list[object]:
    """What may be a model the spec or a spec it uses declares: the generated modules' globals
    (what :func:`agentmonad.record.model_secrets` reads)."""
    found: list[object] = list(vars(module).values())
    for used in spec_info(module).uses:
        if used in sys.modules:
            found.extend(vars(sys.modules[used]).values())
    return found


def _run(module: pytypes.ModuleType, program: Program, pipeline: str, state: Any, value: Any, interpreted: bool,
         journal: Any, human: HumanInput | None, site: Site | None) -> Outcome[Any, Any, Any] | Defect:
    if interpreted:
        from mcec.run.interpret import interpret

        def start() -> Any:
            return interpret(program, pipeline, state, value)
    else:
        function = getattr(module, pipeline)

        def start() -> Any:
            return function(state, value)

    with hooks(journal=journal, human=human):
        try:
            return asyncio.run(run_observed(pipeline, site, start))
        except Defect as defect:
            return defect


def _encoded(module: pytypes.ModuleType, pipeline: str, result: Outcome[Any, Any, Any] | Defect) -> dict[str, Any]:
    info = spec_info(module)
    declared = info.pipeline(pipeline)
    assert declared is not None
    return encode_outcome(result, declared.output, info.state, declared.errors)


@contextlib.contextmanager
def _configured(llm: Any) -> Iterator[None]:
    if llm is None:
        yield
        return
    from agentmonad.llm import llm_config

    with llm_config(llm):
        yield


def record_run(module: pytypes.ModuleType, program: Program, *, spec: str, pipeline: str, input_json: str,
               state_json: str | None, state: Any, value: Any, interpreted: bool, llm: Any = None,
               models: tuple[str, ...] = (), human: HumanInput | None = None,
               site: Site | None = None) -> tuple[Ran, Recording]:
    """Run ``pipeline`` as ``mcec run`` does, recording it: the run, and its recording (no secret
    in it: the keys and URL credentials of the models the run may call are masked)."""
    recorder = Recorder(_types(module))
    with _configured(llm):
        result = _run(module, program, pipeline, state, value, interpreted, recorder.journal, human, site)
        secrets = model_secrets(model_namespaces(module))
    encoded = _encoded(module, pipeline, result)
    info = spec_info(module)
    recording = recorder.recording(
        spec=spec, spec_sha256=info.source_sha256, pipeline=pipeline, runner="interpreted" if interpreted else "compiled",
        input=json.loads(input_json), state=json.loads(state_json) if state_json is not None else state_as_json(info, state),
        outcome=encoded, secrets=secrets, models=models,
    )
    return Ran(result, encoded), recording


def state_as_json(info: SpecInfo, state: Any) -> object:
    """The first state as JSON (the state type's defaults when the run was given none)."""
    from agentmonad.durable.codec import encode_value

    return encode_value(info.state if info.state is not None else type(None), state, "the state")


def replay_run(module: pytypes.ModuleType, program: Program, recording: Recording, *, interpreted: bool,
               live: Collection[str] = (), llm: Any = None, site: Site | None = None) -> Replayed:
    """Run the recording's pipeline on its input with every effect answered from it (those of the
    kinds in ``live`` run for real and compared)."""
    info = spec_info(module)
    state_text = json.dumps(recording.state)
    value, state = info.prepare(recording.pipeline, json.dumps(recording.input), state_text)
    replayer = Replayer(recording, _types(module), live)
    with _configured(llm):
        result = _run(module, program, recording.pipeline, state, value, interpreted, replayer, None, site)
    encoded = _encoded(module, recording.pipeline, result)
    return Replayed(Ran(result, encoded), same_outcome(recording.outcome, encoded), replayer.replayed,
                    replayer.performed, tuple(replayer.differences))


# -- diagnostics ----------------------------------------------------------------------------------


def site_spans(program: Program) -> dict[str, Span]:
    """The span of every effect site of ``program`` and of the specs it uses, by the site's text
    (what the journal records as ``site``)."""
    from mcec.check.typed import recorded_effects

    spans: dict[str, Span] = {}
    stack, seen = [program], {program.path}
    while stack:
        spec = stack.pop()
        for name, span, _ in recorded_effects(spec):
            if span is not None:
                spans.setdefault(site_text(name, span), span)
        for used in spec.uses:
            if used.program.path not in seen:
                seen.add(used.program.path)
                stack.append(used.program)
    return spans


def _described(record: Any) -> str:
    """A recorded effect as a message names it: ``the model `decide` at research.mce:60:5 (effect 3)``."""
    site = record.get("site")
    kind, step, key = record.get("kind"), record.get("step"), record.get("key")
    where = f" at {site.rsplit(' (', 1)[0]}" if isinstance(site, str) else ""
    return f"the {kind} `{step}`{where} (effect {key})"


def replay_diagnostic(failure: Exception, defect: Defect, program: Program, recording: Recording) -> Diagnostic:
    """The diagnostic of a replay that failed at an effect: at the spec line of the effect the run
    asked for, saying what the recording holds there (and where that recorded effect's site is now)."""
    spans = site_spans(program)
    site = defect.site
    span = spans.get(str(site)) if site is not None else None
    if span is None:
        span = Span.file_start(program.path)
    asked = f"the {failure.effect.kind} `{site.step}`" if isinstance(failure, NotRecorded) and site is not None \
        else f"`{site.step}`" if site is not None else "an effect"
    labels: tuple[Label, ...] = ()
    if isinstance(failure, NotRecorded):
        message = (f"the replay asks for {asked} (effect {failure.key}), which the recording does not hold: it holds "
                   f"{failure.branch} effect{'s' if failure.branch != 1 else ''} in that branch")
        help_text = "the spec runs more effects than the recorded run did here; record the run again if this is intended"
    else:
        record = getattr(failure, "record", None) or {}
        expected = _described(record) if record else "another effect"
        if isinstance(failure, ReplayMismatch) and CANCELLED in (record.get("result") or {}):
            message = (f"the recording holds {expected} here as cancelled (a sibling failed, or a deadline fired, "
                       f"while it ran), and nothing cancelled it in the replay")
        elif isinstance(failure, ReplayMismatch):
            message = f"the replay asks for {asked} here, where the recording holds {expected}"
        else:
            message = (f"the recording holds {expected} here, with a value that is not of the type this effect gives now "
                       f"({_validation(failure)})")
        recorded_span = spans.get(str(record.get("site"))) if record else None
        if recorded_span is not None and recorded_span != span:
            labels = (Label(recorded_span, "the recorded effect was made here"),)
        help_text = "the spec changed before this effect; record the run again if the change is intended"
    return error(REPLAY_CODE, message, span, labels, help=help_text)


def _validation(failure: Exception) -> str:
    """What did not validate, in pydantic's words without its links (the error's cause)."""
    from pydantic import ValidationError

    cause = failure.__cause__
    if isinstance(cause, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'the value'}: {e['msg']}" for e in cause.errors())
    return str(failure)


def outcome_diff(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """The two Outcomes' JSON, line by line (a unified diff)."""
    import difflib

    before = json.dumps(recorded, indent=2, ensure_ascii=False, sort_keys=True).splitlines()
    after = json.dumps(now, indent=2, ensure_ascii=False, sort_keys=True).splitlines()
    return "\n".join(difflib.unified_diff(before, after, "recorded outcome", "replayed outcome", lineterm=""))


def resolve_spec(recording: Recording, recording_path: Path, spec: str | None) -> Path:
    """The spec a replay runs: ``spec`` (``--spec``), else the recorded path — as written (from
    the working directory), else beside the recording."""
    if spec is not None:
        return Path(spec)
    written = Path(recording.spec)
    if written.exists() or written.is_absolute():
        return written
    beside = recording_path.parent / written
    return beside if beside.exists() else written
