"""Recorded values as typed JSON: what an effect gave, written so a resumed run gets it back
with the types the spec declares today (docs/language.md §13). Never pickle.

The journal knows, per site, the step's output type, the spec's state type and the errors the
step declares (a :class:`SiteTypes`, given by whoever started the run: ``mcec`` builds them
from the checked program). A value is dumped and validated with pydantic's ``TypeAdapter``;
an error (an exception: user error classes rarely are pydantic types) as its class, its
``args`` and its attributes, each validated on the way back against the annotation of the
``__init__`` parameter of the same name, when there is one.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, TypedDict, final

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from ..outcome import Err, Ok, Site

__all__ = [
    "SiteTypes", "TypeTable", "RecordError", "RecordResult", "encode_result", "decode_result", "encode_error", "decode_error",
    "encode_value", "decode_value",
]


class RecordError(Exception):
    """A result cannot be recorded (its value is not serialisable as its type), or a recorded
    one no longer validates against today's types. A replayed one names the effect: ``key``,
    its identity, and ``record``, what was recorded there (None until the journal says)."""

    key: str | None = None
    record: Mapping[str, Any] | None = None


@final
@dataclass(frozen=True, slots=True)
class SiteTypes:
    """The types of what an effect at one site gives: its output ``value``, the ``state`` it
    leaves, and the ``errors`` it may fail with (classes)."""

    value: Any
    state: Any
    errors: tuple[type, ...]


@final
class TypeTable:
    """The :class:`SiteTypes` of every site of a run: by the exact site (``name``, file, line,
    column), else by the step's name (a checked plan's sites are in the plan's text)."""

    __slots__ = ("_by_site", "_by_name", "_found", "_by_id")

    def __init__(self, by_site: Mapping[str, SiteTypes], by_name: Mapping[str, SiteTypes]) -> None:
        self._by_site = dict(by_site)
        self._by_name = dict(by_name)
        #: What :meth:`get` found, by site: a run asks for the same sites again and again.
        self._found: dict[Site, SiteTypes | None] = {}
        #: The same by the site's id (with the site: a reused id is never taken for it). A generated
        #: module's sites are constants, and hashing a Site costs more than this lookup.
        self._by_id: dict[int, tuple[Site, SiteTypes | None]] = {}

    def get(self, site: Site | None) -> SiteTypes | None:
        """The types of ``site`` (None: a site this table does not know)."""
        if site is None:
            return None
        known = self._by_id.get(id(site))
        if known is not None and known[0] is site:
            return known[1]
        try:
            found = self._found[site]
        except KeyError:
            found = self._found[site] = self._by_site.get(str(site)) or self._by_name.get(site.step)
        if len(self._by_id) < 4096:  # sites made on the fly (a checked plan's) are looked up by value
            self._by_id[id(site)] = (site, found)
        return found


@cache
def _adapter(type_: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_)


def _dump(type_: Any, value: object, what: str) -> object:
    try:
        # the adapter's serializer itself (``dump_python`` with its defaults: a wrapper that costs a
        # few microseconds an effect)
        return _adapter(type_).serializer.to_python(value, mode="json")
    except Exception as exc:
        raise RecordError(f"{what} cannot be recorded as {_name(type_)}: {exc}") from exc


def _load(type_: Any, data: object, what: str) -> Any:
    try:
        return _adapter(type_).validate_python(data)
    except ValidationError as exc:
        raise RecordError(f"the recorded {what} is not a {_name(type_)} any more: {exc}") from exc


def encode_value(type_: Any, value: object, what: str) -> object:
    """``value`` as JSON, as a ``type_`` (an ``each`` element's value and state on their way to a worker)."""
    return _dump(type_, value, what)


def decode_value(type_: Any, data: object, what: str) -> Any:
    """What :func:`encode_value` wrote, validated as a ``type_``."""
    return _load(type_, data, what)


def _name(type_: Any) -> str:
    return getattr(type_, "__name__", None) or str(type_)


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def encode_error(error: BaseException) -> dict[str, object]:
    """An exception as JSON: its class, args and public attributes."""
    attributes = {k: v for k, v in vars(error).items() if not k.startswith("_")}
    return {
        "type": _qualified(type(error)),
        "args": to_jsonable_python(list(error.args), fallback=repr),
        "attrs": to_jsonable_python(attributes, fallback=repr),
    }


@cache
def _init_hints(cls: type) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The ``__init__`` parameter names of ``cls`` in order, and their resolved annotations."""
    try:
        init = cls.__init__  # type: ignore[misc]  # the class's own constructor
        names = tuple(p for p in inspect.signature(init).parameters if p != "self")
    except (TypeError, ValueError):
        names = ()
    try:
        hints = typing.get_type_hints(cls.__init__)  # type: ignore[misc]
    except Exception:  # an annotation that does not resolve: values stay as recorded
        hints = {}
    hints.pop("return", None)
    return names, hints


def decode_error(data: Mapping[str, Any], errors: tuple[type, ...]) -> BaseException:
    """The exception ``data`` records; its class must be one of ``errors`` (those the site
    declares today), and its fields validate against their ``__init__`` annotations."""
    wanted = data.get("type")
    cls = next((c for c in errors if _qualified(c) == wanted), None)
    if cls is None:
        declared = ", ".join(c.__name__ for c in errors) or "none"
        raise RecordError(f"the recorded error {wanted} is not one the step declares now ({declared})")
    names, hints = _init_hints(cls)
    args = list(data.get("args", []))
    if len(args) == len(names):  # args are the __init__'s arguments (LLMFailed's, …)
        args = [_load(hints[n], a, f"{cls.__name__}.{n}") if n in hints else a for n, a in zip(names, args)]
    error: BaseException = cls.__new__(cls)  # type: ignore[call-overload]  # an exception class (the step declares it)
    error.args = tuple(args)
    for name, value in dict(data.get("attrs", {})).items():
        typed = _load(hints[name], value, f"{cls.__name__}.{name}") if name in hints else value
        try:
            setattr(error, name, typed)
        except AttributeError:  # a read-only property over the args: the args restored it
            pass
    return error


class RecordResult(TypedDict, total=False):
    """What an effect gave, as its record keeps it (its values typed JSON): a step's ``Ok`` as
    ``ok``, its ``Err`` as ``err`` (with the failing step's ``site``), a bare ``value`` (a tool's,
    a model's output, a person's answer), or ``raised`` (a declared
    error the step raised), ``none`` (a pause), ``timeout`` (a deadline that fired); in a
    recording also ``defect`` (an error no site declares) or ``cancelled`` (cancelled while it
    ran). With the state after it: ``state`` whole, or ``delta`` (what changed, :func:`state_delta`)."""

    ok: object
    err: dict[str, object]
    site: list[object]
    value: object
    raised: dict[str, object]
    none: bool
    timeout: bool
    defect: dict[str, object]
    cancelled: bool
    state: object
    delta: dict[str, object]


def encode_result(result: object, types: SiteTypes) -> RecordResult:
    """What a step returned (an ``Ok``, a declared ``Err``, or a bare value), as JSON."""
    if type(result) is Ok:
        return {"ok": _dump(types.value, result.value, "the value"), "state": _dump(types.state, result.state, "the state")}
    if type(result) is Err:
        encoded: RecordResult = {"err": encode_error(result.error), "state": _dump(types.state, result.state, "the state")}
        if result.site is not None:  # the step that failed (an each element's: the step inside its body)
            site = result.site
            encoded["site"] = [site.step, site.file, site.line, site.column]
        return encoded
    return {"value": _dump(types.value, result, "the value")}


def _recorded_site(data: list[object]) -> Site:
    match data:
        case [str() as step, str() as file, int() as line, int() as column]:
            return Site(step, file, line, column)
    raise RecordError(f"a recorded site is not [step, file, line, column]: {str(data)[:200]}")


def decode_result(data: RecordResult, types: SiteTypes) -> object:
    """What :func:`encode_result` recorded, validated against ``types``."""
    if "ok" in data:
        return Ok(_load(types.value, data["ok"], "value"), _load(types.state, data["state"], "state"))
    if "err" in data:
        site = _recorded_site(data["site"]) if "site" in data else None
        return Err(decode_error(data["err"], types.errors), _load(types.state, data["state"], "state"), site)
    return _load(types.value, data["value"], "value")
