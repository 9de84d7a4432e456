"""What a compiled module says about its spec: the facts a run needs that the compiler knew.

``mcec compile`` ends each generated module with ``SPEC_INFO = SpecInfo(...)``: the spec's file
and source digest, its state type, each pipeline with its function and types, the types of every
effect site (what an effect there gives, the errors it may fail with), each ``ask`` with its
question and answer types, each ``each(limit=N)`` a worker may run, and the specs it uses
(docs/language.md §7). A process that runs the module reads them here instead of checking the
``.mce`` source: validating a run's input and state (:meth:`SpecInfo.prepare`), recording typed
values (:meth:`SpecInfo.type_table`), handing ``each`` elements to workers.

Every type here is the Python type the generated code annotates with (a class, ``list[int]``,
``A | B``, ``Literal["x"]``...); nothing in this module imports the compiler.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, final

from .outcome import Outcome, Site

if TYPE_CHECKING:
    from .durable.codec import TypeTable

__all__ = ["SpecInfo", "PipelineInfo", "EffectSite", "AskInfo", "EachInfo", "InputError", "spec_info", "run_values",
           "validated"]


@final
@dataclass(frozen=True, slots=True)
class PipelineInfo:
    """A pipeline of the spec: its generated ``function`` (``(state, value) -> Outcome``), the
    types of its input and output, the error classes it declares (or the checker inferred), and
    where it is declared."""

    name: str
    function: Callable[[Any, Any], Awaitable[Outcome[Any, Any, Any]]]
    input: Any
    output: Any
    errors: tuple[type, ...]
    site: Site


@final
@dataclass(frozen=True, slots=True)
class EffectSite:
    """An effect the journal records (a step, tool or model call, a ``spawn``, an ``each``
    element, a person's answer): where it is, the type of what it gives and its error classes.
    ``site`` None: known by name only (a checked plan's sites are in the plan's own text)."""

    name: str
    site: Site | None
    output: Any
    errors: tuple[type, ...]


@final
@dataclass(frozen=True, slots=True)
class AskInfo:
    """An ``ask`` (docs/language.md §15): where it is declared, the type of the question its
    payload is, and of the answer a person gives."""

    name: str
    site: Site
    question: Any
    answer: Any


@final
@dataclass(frozen=True, slots=True)
class EachInfo:
    """An ``each(limit=N)`` of a pipeline of this spec, whose elements a queued durable run hands
    to workers: its site, its limit, and the type of one element's value (its result's types are
    the :class:`EffectSite` of the same site)."""

    site: Site
    limit: int
    value: Any


class InputError(ValueError):
    """A run's input or state does not fit its pipeline's types (the message says where)."""


@final
@dataclass(frozen=True, slots=True)
class SpecInfo:
    """A compiled spec (see the module docstring). ``state`` is its state type (None: the spec
    declares none); ``uses`` the generated modules of the specs it uses (imported by the module
    already)."""

    file: str
    source_sha256: str
    state: Any
    pipelines: tuple[PipelineInfo, ...]
    effects: tuple[EffectSite, ...] = ()
    asks: tuple[AskInfo, ...] = ()
    each: tuple[EachInfo, ...] = ()
    models: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    #: The digest of the spec's fingerprint when it was compiled (its checked program and the shapes
    #: of the classes its runs record, with the specs it uses): what a durable run records of the
    #: version it runs, and checks again when it resumes ("": not known, the module cannot run durably).
    fingerprint: str = ""
    #: The sites of its ``stream llm`` calls (a watched durable run tells a replayed answer there whole).
    streams: tuple[Site, ...] = ()
    _by_name: Mapping[str, PipelineInfo] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {p.name: p for p in self.pipelines})

    def pipeline(self, name: str) -> PipelineInfo | None:
        """The pipeline ``name`` (None: the spec has none of that name)."""
        return self._by_name.get(name)

    def used(self) -> list[SpecInfo]:
        """This spec and every spec it uses, directly or not, each once (this one first)."""
        found: dict[str, SpecInfo] = {self.file + ":" + self.source_sha256: self}
        stack = [self]
        while stack:
            for module in stack.pop().uses:
                info = spec_info(importlib.import_module(module))
                key = info.file + ":" + info.source_sha256
                if key not in found:
                    found[key] = info
                    stack.append(info)
        return list(found.values())

    def type_table(self) -> TypeTable:
        """The types a durable run records this spec's effects with (those of the specs it uses
        too): by site, and by name for sites a table does not name (a checked plan's)."""
        from .durable.codec import SiteTypes, TypeTable

        by_site: dict[str, SiteTypes] = {}
        by_name: dict[str, SiteTypes] = {}
        for spec in reversed(self.used()):  # this spec's names win over the ones it uses
            state = spec.state if spec.state is not None else type(None)
            for effect in spec.effects:
                types = SiteTypes(effect.output, state, effect.errors)
                if effect.site is None:
                    by_name[effect.name] = types
                else:
                    by_site[str(effect.site)] = types
        return TypeTable(by_site, by_name)

    def prepare(self, pipeline: str, input_json: str, state_json: str | None = None) -> tuple[Any, Any]:
        """The value and state a run of ``pipeline`` starts with (:func:`run_values`);
        :class:`InputError` says what does not fit, as ``mcec run`` says it."""
        found = self._by_name.get(pipeline)
        if found is None:
            known = ", ".join(sorted(self._by_name)) or "none"
            raise InputError(f"no pipeline named {pipeline!r} (pipelines: {known})")
        return run_values(found.input, self.state, input_json, state_json)


def validated(type_: Any, text: str, what: str) -> Any:
    """``text`` (JSON) as a value of ``type_``; :class:`InputError` names ``what`` (``--input``)
    and each place that does not fit."""
    from pydantic import TypeAdapter, ValidationError

    try:
        return TypeAdapter(type_).validate_json(text)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<root>'}: {err['msg']}" for err in exc.errors()
        )
        raise InputError(f"invalid {what}: {details}") from None


def run_values(input_type: Any, state_type: Any, input_json: str, state_json: str | None) -> tuple[Any, Any]:
    """The value and state a run starts with: ``input_json`` validated against ``input_type``,
    ``state_json`` against ``state_type`` (None: the spec declares no state), else the state type
    built with its defaults."""
    value = validated(input_type, input_json, "--input")
    if state_json is not None:
        return value, validated(state_type if state_type is not None else type(None), state_json, "--state")
    if state_type is None:
        return value, None
    try:
        return value, state_type()  # the declared state class, built with its defaults
    except Exception as exc:
        raise InputError(f"the state type cannot be built without arguments ({exc}); pass --state") from None


def spec_info(module: Any) -> SpecInfo:
    """The :class:`SpecInfo` of a generated module (``TypeError``: not a module mcec compiled)."""
    info = getattr(module, "SPEC_INFO", None)
    if not isinstance(info, SpecInfo):
        raise TypeError(f"{getattr(module, '__name__', module)!r} is not a module mcec compiled (no SPEC_INFO)")
    return info
