"""Typed partial answers of a streaming LLM step (docs/language.md §14).

While ``stream llm answer : Q -> Answer = …`` streams, what has arrived of the
model's JSON is read as an ``AnswerPartial``: ``Answer`` with every field
optional (default ``None``), a field holding a record class holding that class's
partial, lists (and sets, tuples) of them lists of partials, a ``dict`` of them
a ``dict`` of partials; anything else as it is. The compiler writes these classes
into the generated module (so mypy knows their fields), deriving from
:class:`Partial`; :func:`partial_model` makes the same classes at run time, for
the interpreter and for a class whose fields the compiler could not read.

:class:`PartialReader` turns the growing text of one answer into partials: it
reads it as ``pydantic_core.from_json(…, allow_partial=…)`` reads the whole text
so far (first keeping an unfinished string, then, when that does not validate —
a ``Literal`` half written —, dropping it), incrementally
(:mod:`agentmonad.llm.partial_json`: each piece is parsed once), and validates
the result as the partial type. A prefix
that does not validate even so gives no partial: the final answer is validated
as the step's output type exactly as without streaming.

This module imports pydantic: the generated module of a spec with a streaming
step imports it, nothing else in the runtime does.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model

from .partial_json import JsonPrefix, Mode

__all__ = ["Partial", "PartialReader", "partial_model"]


class Partial(BaseModel):
    """The base of every partial type: fields the model has not written yet are ``None``;
    keys that are not fields are ignored (a model writing more than asked)."""

    model_config = ConfigDict(extra="ignore")


def _is_record(tp: object) -> bool:
    return isinstance(tp, type) and (
        (issubclass(tp, BaseModel) and not issubclass(tp, Partial)) or dataclasses.is_dataclass(tp)
    )


def _record_fields(cls: type) -> dict[str, Any]:
    """A pydantic model's or dataclass's fields and their annotations, in order."""
    if issubclass(cls, BaseModel):
        return {name: info.annotation for name, info in cls.model_fields.items()}
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}  # type: ignore[arg-type]


#: What a JSON array is read as (``typing.get_origin`` gives the runtime class of each).
_SEQUENCES: frozenset[Any] = frozenset({list, set, frozenset, tuple, cabc.Sequence, cabc.MutableSequence, cabc.Set})
_MAPPINGS: frozenset[Any] = frozenset({dict, cabc.Mapping, cabc.MutableMapping})


def _partial_of(tp: Any) -> Any:
    """The type a partial holds where the full answer holds ``tp``."""
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    if _is_record(tp):
        return partial_model(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return functools.reduce(lambda a, b: a | b, (_partial_of(a) for a in args))
    if origin in _SEQUENCES:  # what has arrived of an array is a list, whatever it becomes
        items = [_partial_of(a) for a in args if a is not Ellipsis] or [Any]
        return list[functools.reduce(lambda a, b: a | b, items)]  # type: ignore[misc]
    if origin in _MAPPINGS and len(args) == 2:
        return dict[str, _partial_of(args[1])]  # type: ignore[misc]
    return tp  # a scalar, a Literal, an enum, any other class: as it is


@functools.cache
def partial_model(cls: type) -> type[Partial]:
    """The partial type of the pydantic model or dataclass ``cls`` (see the module docstring),
    named ``{cls.__name__}Partial``; made once per class. The classes a field holds get theirs."""
    fields: dict[str, Any] = {name: (_partial_of(tp) | None, None) for name, tp in _record_fields(cls).items()}
    made = create_model(f"{cls.__name__}Partial", __base__=Partial, __module__=cls.__module__, **fields)
    made.__doc__ = f"What has arrived of a `{cls.__module__}.{cls.__qualname__}` while a streaming llm step answers."
    return made


class PartialReader:
    """Reads the growing JSON text of one answer as partials of one partial type.

    The text is read incrementally (:class:`~agentmonad.llm.partial_json.JsonPrefix`): each
    piece once, each read as ``from_json`` reads the whole text so far (issue 47)."""

    __slots__ = ("adapter", "_json", "_last")

    def __init__(self, partial: type[Partial]) -> None:
        self.adapter: TypeAdapter[Any] = _adapter(partial)
        self._json = JsonPrefix()
        self._last: object = None

    def feed(self, chunk: str) -> object | None:
        """Add ``chunk`` to the text read so far; the partial it now reads as, or None when
        it reads as nothing new (or nothing valid yet)."""
        self._json.feed(chunk)
        for mode in _MODES:
            data = self._json.read(mode)
            if not isinstance(data, dict) or data == self._last:
                return None  # not a JSON object (yet): a fence, prose before it; or nothing new
            try:
                value: object = self.adapter.validate_python(data)
            except ValidationError:
                continue
            self._last = data
            return value
        return None


#: An unfinished string kept, then (when that does not validate: a ``Literal`` half written) dropped.
_MODES: tuple[Mode, ...] = ("trailing-strings", True)


@functools.cache
def _adapter(partial: type[Partial]) -> TypeAdapter[Any]:
    return TypeAdapter(partial)


def partials_for(output_classes: Mapping[str, type], given: Mapping[type, type] | None) -> dict[str, type[Partial]]:
    """The partial type of each output class (by class name): the generated one when given,
    else made at run time."""
    given = given or {}
    found: dict[str, type[Partial]] = {}
    for name, cls in output_classes.items():
        made = given.get(cls)
        found[name] = made if isinstance(made, type) and issubclass(made, Partial) else partial_model(cls)
    return found
