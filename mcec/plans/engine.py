"""The plan engine (docs/language.md §12): what ``agentmonad.plans`` finds through its entry point.

:func:`engine` reads a :class:`agentmonad.plans.Toolbox` once: it checks the
spec text the toolbox holds, exactly as ``mcec check`` does (reading the
Python classes it names), and keeps the toolbox's :class:`PlanScope`. Each plan
is then parsed and checked against that scope (:func:`mcec.plans.check.check_plan`);
a rejected plan becomes a :class:`~agentmonad.plans.PlanRejected` with its
diagnostics as the JSON objects of §8, an accepted one runs on the reference
interpreter's combinators, with the toolbox's pipelines called as compiled.
The same text is checked once (a bounded cache).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import types
import typing
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final, Never, assert_never

from agentmonad import AgentMonad, Defect, Ok, Outcome, Site, lift_step
from agentmonad.plans import PlanRejected, Toolbox

from mcec import syntax
from mcec.check import typed as t
from mcec.plans.check import PlanScope, check_plan, plan_scopes, plan_work
from mcec.check.pyindex import PythonIndex
from mcec.check.typed import Program, Sig, TExpr, TToolbox
from mcec.check.types import Builtin, ClassRef, Generic, Lit, Type, Union, members, render_errors
from mcec.diagnostics import Diagnostic
from mcec.render import DEFAULT_LIMIT, render_json, render_text
from mcec.run.interpret import Arrow, Interpreter
from mcec.run.pyobjects import error_classes, python_type, value_test
from mcec.span import SourceFile

__all__ = ["engine", "CheckedToolbox", "AcceptedPlan", "ToolboxUnreadable", "plan_file", "rejection", "shown"]

#: How many plan texts a toolbox remembers the verdict on.
CACHE_SIZE: Final = 256


class ToolboxUnreadable(Exception):
    """The spec a toolbox holds does not check here (its diagnostics, rendered, are the message)."""


def plan_file(toolbox: str) -> str:
    """The file name a plan's diagnostics and sites carry: ``<plan t>``."""
    return f"<plan {toolbox}>"


class AcceptedPlan:
    """A plan that checked: its typed body, run as an arrow of the interpreter (made at the
    first run: checking a plan is all a rejected one costs, and building is running's work)."""

    __slots__ = ("text", "body", "diagnostics", "_interpreter", "_arrow")

    def __init__(
        self, text: str, body: TExpr, interpreter: _PlanInterpreter, diagnostics: tuple[Diagnostic, ...]
    ) -> None:
        self.text = text
        self.body = body
        #: Warnings (an accepted plan has no errors).
        self.diagnostics = diagnostics
        self._interpreter = interpreter
        self._arrow: Arrow | None = None

    @property
    def arrow(self) -> Arrow:
        """The Kleisli arrow of the plan's body (made once)."""
        if self._arrow is None:
            self._arrow = self._interpreter.arrow(self.body)
        return self._arrow

    async def run(self, state: Any, value: Any) -> Outcome[Any, Any, Any]:
        """The plan's outcome on ``value`` from ``state`` (a plan that cannot be built — an
        implementation that cannot be imported here — is a Defect at the plan's start).

        The outcome is held to the toolbox's type (:class:`_Guard`): the check proved it, so a
        value or an error outside it is a Defect of what the plan ran, never the spawn's result.
        """
        start = Site("plan", self.file, 1, 1)
        try:
            arrow = self.arrow
            guard = self._interpreter.guard
        except Exception as exc:
            raise Defect(start, state, exc) from exc
        outcome = await arrow(value).run(state)
        guard.hold(outcome, start)
        return outcome

    @property
    def file(self) -> str:
        """The file name of the plan's sites (``<plan t>``)."""
        return self.body.span.path


class _Guard:
    """What a plan over a toolbox ``t : A -> B ! E`` may give: a ``B`` (as far as a run-time test
    can tell: a class, a builtin, ``None``, a literal; a generic by its class, ``list[str]`` as a
    list; nothing for ``Any``, a ``Protocol`` or a ``TypedDict``) or an error of ``E``.

    Defence in depth behind the check, which proves every relation in a plan: what it cannot see
    is an entry declared ``-> Any`` (which flows anywhere, in a spec as in a plan) or an
    implementation that breaks its declaration. One ``isinstance`` of each per run.
    """

    __slots__ = ("toolbox", "output", "errors", "_is_output", "_errors")

    def __init__(self, toolbox: str, sig: Sig) -> None:
        self.toolbox = toolbox
        self.output = sig.output
        self.errors = sig.errors
        self._is_output = _instance_test(sig.output)
        self._errors = error_classes(sig.errors)

    def hold(self, outcome: Outcome[Any, Any, Any], start: Site) -> None:
        """Raise a Defect when ``outcome`` is outside the toolbox's type."""
        if isinstance(outcome, Ok):
            if self._is_output is None or self._is_output(outcome.value):
                return
            value = outcome.value
            raise Defect(
                start,
                outcome.state,
                reason=f"the plan gave {_short(value)} ({type(value).__name__}), but toolbox "
                f"`{self.toolbox}` gives {self.output}",
            )
        error = outcome.error
        if isinstance(error, self._errors):
            return
        declared = f"declares only {render_errors(self.errors)}" if self.errors else "declares no errors"
        raise Defect(
            outcome.site or start,
            outcome.state,
            error if isinstance(error, BaseException) else None,
            reason=f"the plan failed with {_short(error)}, but toolbox `{self.toolbox}` {declared}",
        )


def _short(value: object) -> str:
    """``repr(value)``, cut to 80 characters (a Defect's message names what a plan gave)."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:79] + "…"


def _instance_test(type_: Type) -> Callable[[object], bool] | None:
    """A shallow run-time test of "a value of ``type_``" (:class:`_Guard`), or None when no test
    can tell (then the check's proof stands alone)."""
    classes: list[Any] = []
    tests: list[Callable[[object], bool]] = []
    for member in members(type_):
        match member:
            case Builtin(name="Any"):
                return None
            case Builtin(name="Never"):
                continue
            case Builtin(name="None"):
                tests.append(lambda v: v is None)
                continue
            case Lit():
                tests.append(value_test(member))
                continue
            case ClassRef() if member.info is not None and member.info.structural:
                return None
            case Builtin() | Generic() | ClassRef():
                try:
                    found = python_type(member)
                except Exception:
                    return None  # a name that cannot be resolved here: the plan's run reports it
                found = typing.get_origin(found) or found
                if not isinstance(found, (type, types.UnionType)):
                    return None  # an alias of something `isinstance` cannot take (a Literal, …)
                classes.append(found)
                if found is float:
                    classes.append(int)  # an int flows where a float is expected (mypy's promotion, §4)
            case Union():
                raise AssertionError("members() flattens unions")
            case _:
                assert_never(member)
    checked = tuple(classes)
    try:
        isinstance(None, checked)  # a Protocol that is not runtime_checkable raises here
    except TypeError:
        return None
    return lambda v: isinstance(v, checked) or any(test(v) for test in tests)


class CheckedToolbox:
    """One toolbox, read: what its planner is told, and its plans' checker."""

    def __init__(self, toolbox: Toolbox[Any, Any, Any, Any], scope: PlanScope) -> None:
        self.toolbox = toolbox
        self.scope = scope
        self.file = plan_file(toolbox.name)
        self.interpreter = _PlanInterpreter(scope.program, dict(toolbox.pipelines), scope.toolbox)
        self._verdicts: OrderedDict[str, AcceptedPlan | PlanRejected] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def listing(self) -> str:
        """The toolbox's entries, one ``name : A -> B ! E`` line each."""
        return self.scope.listing

    @property
    def signature(self) -> str:
        """The type every plan must have."""
        return self.scope.signature

    def check(self, text: str) -> AcceptedPlan | PlanRejected:
        """The verdict on ``text`` (remembered for the last :data:`CACHE_SIZE` texts)."""
        with self._lock:
            verdict = self._verdicts.get(text)
            if verdict is not None:
                self._verdicts.move_to_end(text)
                return verdict
            verdict = self._check(text)
            self._verdicts[text] = verdict
            if len(self._verdicts) > CACHE_SIZE:
                self._verdicts.popitem(last=False)
            return verdict

    def _check(self, text: str) -> AcceptedPlan | PlanRejected:
        source = SourceFile(self.file, text)
        checked = check_plan(self.scope, source)
        if checked.body is None:
            return rejection(self.toolbox.name, text, checked.diagnostics)
        return AcceptedPlan(text, checked.body, self.interpreter, checked.diagnostics)


class _PlanInterpreter(Interpreter):
    """The interpreter of one toolbox's plans: a step's or fn's implementation is looked up
    (its Python path imported and walked) once per toolbox, not at each of its uses in each plan
    checked; generated code, too, binds an implementation once, at import.

    A plan's ``loop`` rounds and ``retry`` attempts are *paced*: a run of sync steps never
    suspends, so after about :data:`PACE` step runs of them the plan lets the event loop run
    (``asyncio.sleep(0)``), and a ``timeout`` around the spawn, or inside the plan, fires on time.
    """

    def __init__(self, program: Program, overrides: Mapping[str, Callable[..., Any]], toolbox: TToolbox) -> None:
        super().__init__(program, overrides=overrides)
        self._implementations: dict[tuple[str, str], Callable[..., Any]] = {}
        #: Step runs of rounds and attempts since the last pause (shared by the toolbox's plans:
        #: any of them pausing lets the event loop run).
        self.owed = 0
        #: The toolbox whose plans this interpreter runs (their type is held by :attr:`guard`).
        self.plans_of = toolbox
        self._guard: _Guard | None = None

    @property
    def guard(self) -> _Guard:
        """What the toolbox's plans may give (made at the first run: it imports the classes)."""
        if self._guard is None:
            self._guard = _Guard(self.plans_of.name, self.plans_of.sig)
        return self._guard

    def implementation(self, name: str, path: str) -> Callable[..., Any]:
        found = self._implementations.get((name, path))
        if found is None:
            found = self._implementations[(name, path)] = super().implementation(name, path)
        return found

    def arrow(self, expr: t.TExpr) -> Arrow:
        """The interpreter's arrow, with ``loop`` and ``retry`` paced (their semantics unchanged)."""
        match expr:
            case t.TLoop():
                body = self._paced(expr.body, self.site("loop", expr.span))
                return AgentMonad.loop(body, expr.bound, value_test(expr.continues), self.site("loop", expr.span))
            case t.TRetry():
                attempt = self._paced(expr.body, self.site("retry", expr.span))
                on = error_classes(frozenset(expr.on)) if expr.on is not None else None
                attempts, backoff = expr.attempts, expr.backoff
                # the retried program is `pure(v) >>= attempt`, so that each attempt calls `attempt`
                return lambda v: AgentMonad.pure(v).then(attempt).retry(attempts, on=on, backoff=backoff)
            case _:
                return super().arrow(expr)

    def _paced(self, body: t.TExpr, site: Site) -> Arrow:
        """``body``'s arrow, counting its work (:func:`~mcec.plans.check.plan_work`, up to the loops
        and retries inside it, which count their own) at each call, and pausing first once the
        count reaches :data:`PACE`."""
        inner = self.arrow(body)
        weight = max(1, plan_work(body, repeats=False))
        pause = lift_step(_pause, name="plan", errors=(), site=site, is_async=True)

        def paced(value: Any) -> AgentMonad[Any, Any, Any]:
            self.owed += weight
            if self.owed < PACE:
                return inner(value)
            self.owed = 0
            return pause(value).then(inner)

        return paced


#: How many step runs of a plan's loop rounds and retry attempts may pass between two pauses
#: (about 2 ms of sync steps; a pause is one pass of the event loop, a few µs).
PACE: Final = 1_000


async def _pause(state: Any, value: Any) -> Outcome[Any, Never, Any]:
    """Let the event loop run (a deadline fire), then go on with ``value``."""
    await asyncio.sleep(0)
    return Ok(value, state)


def rejection(toolbox: str, text: str, diagnostics: tuple[Diagnostic, ...]) -> PlanRejected:
    """The :class:`PlanRejected` of ``diagnostics``: as §8's JSON objects and as ``mcec check``'s text,
    bounded as ``mcec check`` bounds them (:func:`shown`)."""
    kept, more = shown(diagnostics)
    records = [json.loads(render_json(d)) for d in kept]
    return PlanRejected(text, records, _rendered(kept, more), toolbox, more=more)


def shown(diagnostics: tuple[Diagnostic, ...]) -> tuple[tuple[Diagnostic, ...], int]:
    """The diagnostics a rejection shows, in order, and how many it leaves off: at most
    ``mcec check``'s default (:data:`~mcec.render.DEFAULT_LIMIT`), errors first (a warning never
    takes the place of the error that rejects the plan); a wild plan may have a thousand, and the
    planner reads them all on its next attempt."""
    if len(diagnostics) <= DEFAULT_LIMIT:
        return diagnostics, 0
    ranked = [d for d in diagnostics if d.is_error] + [d for d in diagnostics if not d.is_error]
    kept = tuple(sorted(ranked[:DEFAULT_LIMIT], key=Diagnostic.sort_key))
    return kept, len(diagnostics) - len(kept)


def engine(toolbox: Toolbox[Any, Any, Any, Any]) -> CheckedToolbox:
    """Read ``toolbox``'s spec (the ``agentmonad.plans`` entry point): check it, keep its plan scope.

    Raises :class:`ToolboxUnreadable` when the spec does not check here (a
    class it names cannot be read, say): every spawn over it is then a Defect.
    """
    path = _spec_path(toolbox)
    # spans name the spec as sites do (its file name), wherever it is read from
    source = SourceFile(os.path.basename(toolbox.spec), toolbox.source)
    parsed = syntax.parse(source)
    if parsed.module is None:
        raise ToolboxUnreadable(_rendered(parsed.diagnostics))
    index = PythonIndex.for_directory(spec=path)
    scopes, diagnostics = plan_scopes(parsed.module, source, index)
    scope = scopes.get(toolbox.name)
    if scope is None:
        raise ToolboxUnreadable(_rendered(diagnostics) or f"the spec declares no toolbox `{toolbox.name}`")
    return CheckedToolbox(toolbox, scope)


def _spec_path(toolbox: Toolbox[Any, Any, Any, Any]) -> str:
    """Where the toolbox's spec is: where its maker says, else beside its generated module, else
    its name (the index looks for the Python modules it names, and the specs it uses, from there)."""
    if toolbox.path and os.path.isfile(toolbox.path):
        return toolbox.path
    module = sys.modules.get(toolbox.module) if toolbox.module else None
    module_file = getattr(module, "__file__", None)
    if isinstance(module_file, str) and os.path.isfile(module_file):
        beside = os.path.join(os.path.dirname(module_file), os.path.basename(toolbox.spec))
        if os.path.isfile(beside):
            return beside
    return toolbox.spec


def _rendered(diagnostics: tuple[Diagnostic, ...], more: int = 0) -> str:
    """The diagnostics as ``mcec check`` prints them, each with its source line (its span's own),
    then "… and K more" when ``more`` were left off."""
    text = render_text(diagnostics, {}, color=False, limit=None)
    if more:
        text += f"… and {more} more\n"  # mcec check's words (mcec.render.render_text)
    return text.rstrip("\n")
