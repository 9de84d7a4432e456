"""``mcec eval … --record DIR``: every run of the eval recorded, one ``*.mcerun.json`` file a run
(docs/language.md §17), each replayable by ``mcec replay`` and collected by the pytest plugin.

A run is recorded as ``mcec run --record`` records it (:class:`agentmonad.record.Recorder`'s
journal attached to that run only: the runs in flight at once each have their own, and the
judges, which run after it, are not recorded). Its file is named by its case —
``<case>.mcerun.json``, ``<case>.<k>.mcerun.json`` with ``--repeat`` — and written as soon as
the run ends, before its evaluators run: a killed eval keeps the recordings of the runs it
finished.
"""

from __future__ import annotations

import re
import types as pytypes
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from agentmonad import Defect, Outcome
from agentmonad.context import hooks
from agentmonad.durable.codec import encode_value
from agentmonad.record import RECORDING_SUFFIX, Recorder, encode_outcome, model_secrets
from agentmonad.spec import spec_info

__all__ = ["CURRENT_RUN", "EvalRecorder", "RecordingClash", "recording_name"]

#: The run (case name, repeat from 1) the task running in this context is for: set by the eval's
#: case lifecycle before the task runs (pydantic-evals hands the task only the case's inputs).
CURRENT_RUN: ContextVar[tuple[str, int] | None] = ContextVar("mcec_eval_current_run", default=None)

#: What a file name keeps of a case's name as it is; anything else becomes ``_``.
_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]")


def recording_name(case: str, repeat: int, repeats: int) -> str:
    """The file name of the recording of ``case``'s run ``repeat`` (of ``repeats``): the case's
    name (characters a file name may not safely hold as ``_``), then ``.<k>`` when repeated."""
    stem = _UNSAFE.sub("_", case).lstrip(".") or "_"
    return f"{stem}{f'.{repeat}' if repeats > 1 else ''}{RECORDING_SUFFIX}"


class RecordingClash(Exception):
    """Two cases whose recordings would have the same file name."""


class EvalRecorder:
    """Records the eval's runs of ``pipeline`` (of the compiled ``module``, from the spec at the
    path ``spec`` as the command line named it) into ``folder``; ``models`` are the ``--model``
    options of the spec (what ``mcec replay --live-models`` calls again)."""

    def __init__(self, folder: Path, module: pytypes.ModuleType, *, spec: str, pipeline: str,
                 models: tuple[str, ...], repeats: int, state: Any) -> None:
        from mcec.run.recorded import state_as_json

        self.folder = folder
        self.spec = spec
        self.pipeline = pipeline
        self.models = models
        self.repeats = repeats
        self._module = module
        self._info = spec_info(module)
        declared = self._info.pipeline(pipeline)
        assert declared is not None  # the command checked it names a pipeline of the spec
        self._declared = declared
        self._types = self._info.type_table()
        self._state = state_as_json(self._info, state)
        self._secrets: tuple[str, ...] | None = None

    def check_names(self, cases: Iterable[str]) -> None:
        """:class:`RecordingClash` when two of ``cases`` would be recorded to the same file."""
        seen: dict[str, str] = {}
        for case in cases:
            name = recording_name(case, 1, self.repeats)
            if name in seen:
                raise RecordingClash(f"--record: the cases `{seen[name]}` and `{case}` would both be recorded "
                                     f"as {name}; give them names that differ in letters or digits")
            seen[name] = case

    def path(self, case: str, repeat: int) -> Path:
        """Where the recording of ``case``'s run ``repeat`` goes."""
        return self.folder / recording_name(case, repeat, self.repeats)

    async def run(self, call: Callable[[], Awaitable[Outcome[Any, Any, Any]]], value: Any) -> Outcome[Any, Any, Any]:
        """``await call()`` (the run of the current case, :data:`CURRENT_RUN`) with a recorder's
        journal attached, then its recording written; the Outcome (a Defect is raised again)."""
        from mcec.run.recorded import model_namespaces

        current = CURRENT_RUN.get()
        assert current is not None, "a recorded eval run outside the eval's case lifecycle"
        if self._secrets is None:  # under the run's model configuration (the task's llm_config)
            self._secrets = model_secrets(model_namespaces(self._module))
        recorder = Recorder(self._types)
        result: Outcome[Any, Any, Any] | Defect
        with hooks(journal=recorder.journal):
            try:
                result = await call()
            except Defect as defect:
                result = defect
        encoded = encode_outcome(result, self._declared.output, self._info.state, self._declared.errors)
        recording = recorder.recording(
            spec=self.spec, spec_sha256=self._info.source_sha256, pipeline=self.pipeline, runner="compiled",
            input=encode_value(self._declared.input, value, "the input"), state=self._state, outcome=encoded,
            secrets=self._secrets, models=self.models,
        )
        self.folder.mkdir(parents=True, exist_ok=True)
        recording.write(self.path(*current))
        if isinstance(result, Defect):
            raise result
        return result
