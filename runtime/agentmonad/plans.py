"""Checked plans (docs/language.md §12): ``spawn(t) p`` — a planner writes `.mce` text, it is checked, then run.

A generated module holds one :class:`Toolbox` per ``toolbox`` declaration and
calls :meth:`Toolbox.spawn` at each ``spawn(t) p``. The toolbox knows its spec
(the text, so that the module is all a deployment needs) and the compiled
pipelines it may hand a plan; checking and running a plan is the compiler's
work, done by a :class:`PlanEngine`, which the runtime finds through the
``agentmonad.plans`` entry point (mcec registers one). The runtime itself never
imports the compiler: without an engine a spawn is a Defect that says so.

What the planner sees is a :class:`PlanRequest`; what a rejected plan fails
with is :class:`PlanRejected`, carrying the diagnostics as data (the JSON
objects of docs/language.md §8) and as the text ``mcec check`` would print. Inside a
``retry``, an attempt after the first sees the error the one before it failed
with (:func:`agentmonad.control.previous_failure`), so a planner inside
``retry(3, on=PlanRejected)`` is shown its last rejection: a repair loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, final

from .context import current_run_context
from .contract import raised
from .events import PlanChecked
from .control import note_reached, previous_failure
from ._show import short_repr
from .errors import Defect, _ValueError
from .outcome import Err, Outcome, Site

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["PlanRejected", "PlanRequest", "Toolbox", "PlanEngine", "CheckedToolbox", "Plan", "ENTRY_POINT_GROUP"]

#: The entry-point group a plan engine registers under (mcec: ``mcec = "mcec.run.plans:engine"``).
ENTRY_POINT_GROUP = "agentmonad.plans"

#: A compiled pipeline or a planner: ``async (state, value) -> Outcome``.
Runnable = Callable[[Any, Any], Awaitable[Outcome[Any, Any, Any]]]


class PlanRejected(_ValueError):
    """A plan that did not check: ``plan`` is its text, ``diagnostics`` the errors (and
    warnings) as the JSON objects of docs/language.md §8, ``text`` the same rendered as
    ``mcec check`` prints them, ``toolbox`` the toolbox it was checked against.

    Like ``mcec check``, a rejection shows a bounded number of diagnostics (the
    engine's: 50, errors first): ``more`` counts those left off, and ``text``
    then ends with "… and K more", so a planner is never fed a rejection as big
    as a wild plan could make it.

    >>> rejected = PlanRejected("a >>= b", [{"code": "MCE002", "message": "unknown name `b`",
    ...                                      "line": 1, "column": 7, "severity": "error"}])
    >>> str(rejected)
    'plan rejected (1 error): 1:7 MCE002 unknown name `b`'
    >>> str(PlanRejected("…", rejected.diagnostics, more=12))
    'plan rejected (1 error, and 12 more diagnostics): 1:7 MCE002 unknown name `b`; and 12 more'
    """

    _fields = ("plan", "diagnostics")

    def __init__(
        self,
        plan: str,
        diagnostics: Sequence[Mapping[str, Any]],
        text: str = "",
        toolbox: str = "",
        more: int = 0,
    ) -> None:
        self.plan = plan
        self.diagnostics = tuple(dict(d) for d in diagnostics)
        self.text = text
        self.toolbox = toolbox
        #: How many diagnostics were left off ``diagnostics`` and ``text``.
        self.more = more
        super().__init__(plan, self.diagnostics)

    @property
    def errors(self) -> tuple[dict[str, Any], ...]:
        """The diagnostics that are errors (warnings never reject a plan)."""
        return tuple(d for d in self.diagnostics if d.get("severity") == "error")

    def __str__(self) -> str:
        errors = self.errors
        count = f"{len(errors)} error{'' if len(errors) == 1 else 's'}"
        if self.more:
            count += f", and {self.more} more diagnostic{'' if self.more == 1 else 's'}"
        if not errors:
            return f"plan rejected ({count})"
        first = errors[0]
        where = f"{first.get('line')}:{first.get('column')}"
        others = len(errors) - 1 + self.more
        more = "" if not others else f"; and {others} more"
        return f"plan rejected ({count}): {where} {first.get('code')} {first.get('message')}{more}"

    def __reduce__(self) -> tuple[Any, ...]:
        # every attribute, not only the compared fields: a rejection sent to another process is whole
        return (type(self), (self.plan, self.diagnostics, self.text, self.toolbox, self.more))


@final
@dataclasses.dataclass(frozen=True, slots=True)
class PlanRequest:
    """What ``spawn(t) p`` gives its planner ``p`` (every field readable from a template).

    ``input`` is the value the plan will run on and ``task`` that value as text
    (JSON for a pydantic model or a dataclass); ``toolbox`` lists what a plan may
    use, one ``name : A -> B ! E`` line each, and ``signature`` is the type a plan
    must have; ``rejection`` is the previous attempt's :class:`PlanRejected` (None
    on a first attempt) and ``attempt`` counts the attempts of the enclosing
    ``retry`` (1 outside one).
    """

    input: object
    task: str
    toolbox: str
    signature: str
    rejection: PlanRejected | None
    attempt: int


class Plan(Protocol):
    """A checked, accepted plan: run it on a value from a state."""

    async def run(self, state: Any, value: Any) -> Outcome[Any, Any, Any]:
        """The plan's outcome, as a pipeline with the plan as its body would give it."""
        ...


class CheckedToolbox(Protocol):
    """A toolbox its engine has read: what a planner is told, and the checker of plans."""

    @property
    def listing(self) -> str:
        """The toolbox's entries, one ``name : A -> B ! E`` line each."""
        ...

    @property
    def signature(self) -> str:
        """The type every plan over the toolbox must have, ``A -> B ! E``."""
        ...

    def check(self, text: str) -> Plan | PlanRejected:
        """``text`` parsed and checked: the plan to run, or why it is rejected."""
        ...


class PlanEngine(Protocol):
    """What reads a toolbox (once) and checks plans over it: the compiler's side."""

    def __call__(self, toolbox: Toolbox[Any, Any, Any, Any]) -> CheckedToolbox:
        """Read ``toolbox``'s spec and make its plan checker."""
        ...


_S = TypeVar("_S")
_A = TypeVar("_A")
_B = TypeVar("_B")
_E = TypeVar("_E")
_E2 = TypeVar("_E2")


@final
class Toolbox(Generic[_S, _A, _B, _E]):
    """One ``toolbox t : A -> B ! E`` declaration of a generated module (docs/language.md §12),
    typed ``Toolbox[S, A, B, E]`` so that mypy checks what a spawn over it gives back.

    ``spec`` is the spec's file name (for messages and sites) and ``source`` its
    text; ``module`` the generated module's name; ``pipelines`` the compiled
    functions of the pipelines and the llm steps the toolbox lists (a plan calls
    them as generated code does; steps, fns and tools are the spec's own
    implementations). The engine reads the spec at the first spawn.
    """

    __slots__ = ("name", "spec", "source", "module", "pipelines", "path", "_checked", "_lock")

    def __init__(
        self, name: str, spec: str, source: str, module: str, pipelines: Mapping[str, Runnable], path: str = ""
    ) -> None:
        self.name = name
        self.spec = spec
        self.source = source
        self.module = module
        self.pipelines = dict(pipelines)
        #: Where the spec's file is, when the maker knows (the interpreter does); else the engine
        #: looks beside the module. Messages name the spec by ``spec`` either way.
        self.path = path
        self._checked: CheckedToolbox | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Toolbox({self.name!r}, spec={self.spec!r})"

    def checked(self) -> CheckedToolbox:
        """The engine's reading of this toolbox, made once (raises if there is no engine)."""
        checked = self._checked
        if checked is None:
            with self._lock:
                if self._checked is None:
                    self._checked = _engine()(self)
                checked = self._checked
        return checked

    async def spawn(
        self,
        state: _S,
        value: _A,
        planner: Callable[[_S, PlanRequest], Awaitable[Outcome[_S, _E2, str]]],
        site: Site,
    ) -> Outcome[_S, _E | _E2 | PlanRejected, _B]:
        """``spawn(t) p`` on ``value`` from ``state``: ask the planner, check its text, run it.

        A failure of the planner is the outcome; a rejected plan is
        ``Err(PlanRejected(…), state after the planner, site)``; an accepted
        plan's outcome is the outcome. A problem of the engine itself is a
        Defect at ``site``.
        """
        try:
            checked = self.checked()
        except Exception as exc:  # no engine, or the spec does not check here: the spawn's defect
            return raised(exc, site, state, ())
        failed = previous_failure()
        rejection = None
        attempt = 1
        if failed is not None:
            attempt = failed.attempt + 1
            if isinstance(failed.error, PlanRejected) and failed.error.toolbox == self.name:
                rejection = failed.error
        request = PlanRequest(value, _as_text(value), checked.listing, checked.signature, rejection, attempt)
        written = await planner(state, request)
        if isinstance(written, Err):
            return written
        text, planned = written.value, written.state
        if not isinstance(text, str):
            raise Defect(site, planned, TypeError(f"the planner gave {short_repr(text)}, not plan text (str)"))
        try:
            plan = checked.check(text)
        except Exception as exc:
            return raised(exc, site, planned, ())
        _told(plan, site)
        if isinstance(plan, PlanRejected):
            return Err(plan, planned, site)
        try:
            # the plan checked against this toolbox's type: it gives a B, or fails with an E
            return cast(Outcome[_S, _E, _B], await plan.run(planned, value))
        except asyncio.CancelledError as cancelled:
            note_reached(planned)  # a deadline keeps the state the plan started from
            raise


def _told(plan: Plan | PlanRejected, site: Site) -> None:
    """Tell the event sink attached here, if any, that a plan was checked at ``site``: accepted, or
    rejected with its errors (those shown and those left off)."""
    run = current_run_context()
    if run.events is not None:
        opened = run.span
        if isinstance(plan, PlanRejected):
            event = PlanChecked(site, False, len(plan.errors) + plan.more, opened.span if opened else None)
        else:
            event = PlanChecked(site, True, 0, opened.span if opened else None)
        run.events.emit(event)


def _as_text(value: object) -> str:
    """A plan's input as a planner reads it: JSON for a pydantic model or dataclass, a str as it is."""
    if isinstance(value, str):
        return value
    dump = getattr(value, "model_dump_json", None)
    if callable(dump):
        try:
            return str(dump())
        except Exception:
            return short_repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return json.dumps(dataclasses.asdict(value), default=repr, ensure_ascii=False)
        except Exception:
            return short_repr(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return short_repr(value)


_ENGINE: PlanEngine | None = None


def entry_points(group: str) -> Sequence[EntryPoint]:
    """The installed entry points of ``group``. importlib.metadata is imported here, when a plan is
    first checked, not with agentmonad: it is about a tenth of the runtime's import time (benchmarks/README.md,
    "Start-up of a compiled run")."""
    from importlib.metadata import entry_points as installed

    return tuple(installed(group=group))


def _engine() -> PlanEngine:
    """The registered plan engine (the first of the ``agentmonad.plans`` entry points)."""
    global _ENGINE
    if _ENGINE is None:
        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
        if not found:
            raise LookupError(
                "checking plans needs mcec: no engine is registered under the "
                f"{ENTRY_POINT_GROUP!r} entry point (pip install mcec)"
            )
        _ENGINE = found[0].load()
    return _ENGINE
