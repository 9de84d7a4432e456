"""A spec version as a process runs its durable runs: what the run's workflow body needs of it.

A durable run records the digest of the spec version it runs (:attr:`SpecVersion.digest`) and
runs it from its compiled module: :class:`CompiledVersion` reads everything from the module's
``SPEC_INFO`` (:mod:`agentmonad.spec`) — no ``.mce`` source, no compiler. A process finds a run's
version through the :class:`Loader` in charge (:func:`loader`): by default the one that imports
the module the run's request names; ``mcec`` installs one that also compiles (or interprets) a
run started from a spec path (``mcec run SPEC --durable``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, final

from ..outcome import Outcome
from ..spec import InputError, SpecInfo, spec_info
from .codec import SiteTypes, TypeTable
from .elements import ElementTypes

if TYPE_CHECKING:
    import types as pytypes

    from ..llm import LLMConfig
    from ..llm.streaming import Streaming
    from .request import RunRequest

__all__ = ["CompiledVersion", "Loader", "ModuleLoader", "SpecVersion", "VersionError", "loader", "set_loader",
           "element_queue", "llm_config_for"]

#: A pipeline or an ``each`` body as a run calls it: ``(state, value) -> Outcome``.
Body = Callable[[Any, Any], Awaitable[Outcome[Any, Any, Any]]]


class VersionError(Exception):
    """The spec version a run needs cannot be had in this process (its module does not import,
    it is another version): the message says why. The run is left as it was, resumable."""


class SpecVersion(Protocol):
    """One spec version as durable runs run it."""

    @property
    def digest(self) -> str:
        """Its fingerprint's digest (what a run records and is checked against on resume)."""
        ...

    @property
    def models(self) -> tuple[str, ...]:
        """The models it declares (``--model NAME=…`` names one of them)."""
        ...

    def prepare(self, pipeline: str, input_json: str, state_json: str | None) -> tuple[Any, Any]:
        """A run's starting value and state (:class:`~agentmonad.spec.InputError`: they do not fit)."""
        ...

    def type_table(self) -> TypeTable:
        """The types its effects are recorded with."""
        ...

    def pipeline(self, name: str) -> Body:
        """The pipeline ``name``."""
        ...

    def element(self, site: str, body: str | None) -> Body:
        """The body of the ``each`` at ``site`` (``body``: its compiled function's name)."""
        ...

    def element_types(self) -> dict[str, ElementTypes]:
        """The types of the elements of each ``each(limit=N)``, by site text."""
        ...

    def each_limits(self) -> dict[str, int]:
        """The limit of each ``each(limit=N)`` of its pipelines, by site text."""
        ...

    def streams(self) -> dict[str, Streaming]:
        """How each of its ``stream llm`` calls streams, by site text."""
        ...


def element_queue(digest: str, site: str) -> str:
    """The queue of the elements of the ``each`` at ``site`` (its text) of the version ``digest``:
    ``mcec-each.D12.FILE:LINE:COLUMN`` (workers of that version listen to it)."""
    return f"mcec-each.{digest[:12]}.{site.removesuffix(' (each)')}"


def llm_config_for(version: SpecVersion, options: list[str]) -> LLMConfig | None:
    """The model configuration ``--model NAME=VALUE …`` gives ``version``'s models (None: it
    declares none). :class:`VersionError` for a malformed option or an undeclared model."""
    import difflib

    if not version.models:
        if options:
            raise VersionError("--model: the spec declares no llm step")
        return None
    from ..llm import LLMConfig
    from ..llm.options import parse_model_option

    entries: dict[str, Any] = {}
    for option in options:
        try:
            name, entry = parse_model_option(option)
        except (ValueError, ImportError) as exc:
            raise VersionError(f"--model {option}: {exc}") from None
        if name != "*" and name not in version.models:
            close = difflib.get_close_matches(name, version.models, n=1)
            hint = f"; did you mean `{close[0]}`?" if close else f" (it declares {', '.join(version.models)})"
            raise VersionError(f"--model {option}: the spec declares no model `{name}`{hint}")
        entries[name] = entry
    return LLMConfig(models=entries)


@final
@dataclass(frozen=True, slots=True)
class CompiledVersion:
    """A spec version from its compiled module: everything from ``SPEC_INFO``."""

    module: pytypes.ModuleType
    info: SpecInfo
    _table: list[TypeTable] = field(default_factory=list, compare=False, repr=False)

    @classmethod
    def of(cls, module: pytypes.ModuleType) -> CompiledVersion:
        """The version of ``module`` (:class:`VersionError`: not a module mcec compiled)."""
        try:
            return cls(module, spec_info(module))
        except TypeError as exc:
            raise VersionError(str(exc)) from None

    @property
    def digest(self) -> str:
        """``SPEC_INFO.fingerprint``."""
        return self.info.fingerprint

    @property
    def models(self) -> tuple[str, ...]:
        """``SPEC_INFO.models``."""
        return self.info.models

    def prepare(self, pipeline: str, input_json: str, state_json: str | None) -> tuple[Any, Any]:
        """:meth:`SpecInfo.prepare`."""
        return self.info.prepare(pipeline, input_json, state_json)

    def type_table(self) -> TypeTable:
        """:meth:`SpecInfo.type_table`, made once."""
        if not self._table:
            self._table.append(self.info.type_table())
        return self._table[0]

    def pipeline(self, name: str) -> Body:
        """The generated function of the pipeline ``name``."""
        found = self.info.pipeline(name)
        if found is None:
            raise InputError(f"no pipeline named {name!r} in {self.module.__name__}")
        return found.function

    def element(self, site: str, body: str | None) -> Body:
        """The generated body function ``body`` of the module."""
        function = getattr(self.module, body, None) if body is not None else None
        if function is None:
            raise VersionError(f"{self.module.__name__} has no body {body!r} for the each at {site}")
        return function  # type: ignore[no-any-return]

    def element_types(self) -> dict[str, ElementTypes]:
        """From ``SPEC_INFO.each`` and the effect sites (an element's result types are its site's)."""
        table = self.type_table()
        state = self.info.state if self.info.state is not None else type(None)
        found: dict[str, ElementTypes] = {}
        for each in self.info.each:
            site = str(each.site)
            result = table.get(each.site) or SiteTypes(Any, state, ())
            found[site] = ElementTypes(each.value, result)
        return found

    def each_limits(self) -> dict[str, int]:
        """From ``SPEC_INFO.each``."""
        return {str(each.site): each.limit for each in self.info.each}

    def streams(self) -> dict[str, Streaming]:
        """From ``SPEC_INFO.streams`` and the output types of those sites."""
        if not self.info.streams:
            return {}
        from ..llm.output import output_shape
        from ..llm.streaming import Streaming

        table = self.type_table()
        found: dict[str, Streaming] = {}
        for site in self.info.streams:
            types = table.get(site)
            if types is not None:
                found[str(site)] = Streaming(output_shape(types.value), None)
        return found


class Loader(Protocol):
    """How a process finds the spec version a run needs, and tells a changed one."""

    def load(self, request: RunRequest) -> SpecVersion:
        """The version ``request`` runs (:class:`VersionError`: not here)."""
        ...

    def changed(self, request: RunRequest, version: SpecVersion | None) -> str | None:
        """What changed in the spec since ``request``'s run started (None: nothing, or not known:
        ``version`` could not be loaded here)."""
        ...


@final
class ModuleLoader:
    """The runtime's :class:`Loader`: imports the module a run's request names (from the folder
    the run was started in too, as it imported then)."""

    def load(self, request: RunRequest) -> SpecVersion:
        """``request.module`` imported, as a :class:`CompiledVersion`."""
        if request.module is None:
            raise VersionError(f"run {request.run_id} was started from the spec {request.spec} and has no compiled "
                               "module: resume it with mcec (`mcec runs resume`)")
        importable_from(request.cwd)
        try:
            module = importlib.import_module(request.module)
        except Exception as exc:
            raise VersionError(f"importing {request.module} failed: {type(exc).__name__}: {first_line(exc)}") from None
        return CompiledVersion.of(module)

    def changed(self, request: RunRequest, version: SpecVersion | None) -> str | None:
        """The digests differ: which module version the run started with, which is here."""
        if version is None or request.digest == version.digest:
            return None
        return (f"{request.module or request.spec} changed since the run started (fingerprint {request.digest[:12]}, "
                f"now {version.digest[:12] or 'unknown'})")


def importable_from(cwd: str | None) -> None:
    """Put ``cwd`` (the folder a run was started from) on ``sys.path``: the run's modules import
    as they did then, whichever folder resumes, answers or expires it."""
    if cwd and cwd not in sys.path:
        sys.path.insert(0, cwd)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name when it has none)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


_loader: list[Loader] = [ModuleLoader()]


def loader() -> Loader:
    """The :class:`Loader` in charge in this process."""
    return _loader[0]


def set_loader(chosen: Loader) -> None:
    """Put ``chosen`` in charge (``mcec`` does, to run runs started from a spec path)."""
    _loader[0] = chosen
