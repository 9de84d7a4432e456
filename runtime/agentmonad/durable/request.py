"""What a durable run was asked to run: its :class:`RunRequest`, the input of its DBOS workflow.

Written once, when the run starts or is enqueued, as a JSON object (docs/language.md §13, "What
the run database holds"); read back — and validated — by every process that resumes, answers,
shows or works on the run. A row that is not one is refused (:class:`BadRequest`), never guessed at.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, final

__all__ = ["BadRequest", "RunRequest"]


class BadRequest(ValueError):
    """A run's recorded request is not one this version reads (another program's workflow, a
    row written by hand): the message says what is wrong."""


@final
@dataclass(frozen=True, slots=True)
class RunRequest:
    """A durable run's request.

    ``module``: the import name of the compiled module it runs (None: a run started from a spec
    that only ``mcec`` can compile); ``spec``: the absolute path of the ``.mce`` it was compiled
    from (shown, and what ``mcec`` compiles); ``digest``: the fingerprint digest of that version;
    ``input``/``state``: JSON texts; ``models``: its ``--model`` options; ``cwd``: the folder it
    was started from (its modules import from there); ``interpret``: run by mcec's reference
    interpreter; ``elements``: its ``each(limit=N)`` elements go on queues; ``queue``: the DBOS
    queue it was enqueued on (a worker's run); ``fingerprint``/``declarations``: what ``mcec``
    keeps to say what changed in the spec (opaque here)."""

    run_id: str
    pipeline: str
    input: str
    digest: str
    module: str | None = None
    spec: str | None = None
    state: str | None = None
    models: tuple[str, ...] = ()
    cwd: str | None = None
    interpret: bool = False
    elements: bool = False
    queue: str | None = None
    fingerprint: str | None = None
    declarations: Any = None

    def as_json(self) -> dict[str, Any]:
        """As the workflow's input (a JSON object)."""
        data = asdict(self)
        data["models"] = list(self.models)
        return data

    @staticmethod
    def from_json(data: object) -> RunRequest:
        """``data`` (a recorded workflow input) as a request; :class:`BadRequest` when it is not one."""
        if not isinstance(data, Mapping):
            raise BadRequest("its request is not a JSON object")
        text = {"run_id", "pipeline", "input", "digest"}
        optional_text = {"module", "spec", "state", "cwd", "queue", "fingerprint"}
        for key in text:
            if not isinstance(data.get(key), str):
                raise BadRequest(f"its request has no {key}")
        for key in optional_text:
            if data.get(key) is not None and not isinstance(data.get(key), str):
                raise BadRequest(f"its request's {key} is not text")
        for key in ("interpret", "elements"):
            if not isinstance(data.get(key, False), bool):
                raise BadRequest(f"its request's {key} is not true or false")
        models = data.get("models", [])
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise BadRequest("its request's models are not a list of texts")
        if data.get("module") is None and data.get("spec") is None:
            raise BadRequest("its request names neither a module nor a spec")
        return RunRequest(
            run_id=data["run_id"], pipeline=data["pipeline"], input=data["input"], digest=data["digest"],
            module=data.get("module"), spec=data.get("spec"), state=data.get("state"), models=tuple(models),
            cwd=data.get("cwd"), interpret=bool(data.get("interpret", False)), elements=bool(data.get("elements", False)),
            queue=data.get("queue"), fingerprint=data.get("fingerprint"), declarations=data.get("declarations"),
        )

    @property
    def shown(self) -> str:
        """What the run runs, for people: its spec's path, else its module."""
        return self.spec or self.module or "?"
