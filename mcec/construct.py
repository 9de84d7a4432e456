"""Fast constructors for spans and syntax nodes, shared by both parsers.

A parse builds about twenty small frozen objects per source line, so how an
object is built is the largest single cost of parsing. A frozen dataclass's
``__init__`` sets each field through ``object.__setattr__`` (a generic name
lookup per field); :func:`fast_constructor` sets the slots through their member
descriptors instead, which does the same work about twice as fast. The result
is an ordinary instance, equal to what the class's own constructor makes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final, TypeVar

from mcec import syntax as s
from mcec.span import Span

__all__ = [
    "BIND",
    "BLOCK",
    "CATCH",
    "COMMENT",
    "EACH",
    "ERROR_LIST",
    "FN_DECL",
    "LOCAL",
    "NAME",
    "OR_ELSE",
    "PAR",
    "PIPELINE_DECL",
    "QUAL",
    "REF",
    "SPAN",
    "STATEMENT",
    "STEP_DECL",
    "TYPE_APPLY",
    "TYPE_NAME",
    "TYPE_UNION",
    "fast_constructor",
]

_T = TypeVar("_T")


def fast_constructor(cls: type[_T]) -> Callable[..., _T]:
    """A function building ``cls(*fields)`` without the dataclass ``__init__``.

    Only for slotted dataclasses with no ``__post_init__`` (nothing in
    ``__init__`` is skipped then); for any other class the class itself is
    returned, so the result is always right.
    """
    names = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or tuple(getattr(cls, "__slots__", ())) != tuple(names):
        return cls  # pragma: no cover - the plain constructor is always right
    namespace: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    lines = [f"def make({', '.join(names)}):", "    obj = _new(_cls)"]
    for index, name in enumerate(names):
        namespace[f"_set{index}"] = getattr(cls, name).__set__
        lines.append(f"    _set{index}(obj, {name})")
    lines.append("    return obj")
    exec("\n".join(lines), namespace)  # the same technique dataclasses uses to make __init__
    make: Callable[..., _T] = namespace["make"]
    return make


SPAN: Final = fast_constructor(Span)
NAME: Final = fast_constructor(s.Name)
QUAL: Final = fast_constructor(s.QualName)
TYPE_NAME: Final = fast_constructor(s.TypeName)
TYPE_APPLY: Final = fast_constructor(s.TypeApply)
TYPE_UNION: Final = fast_constructor(s.TypeUnion)
ERROR_LIST: Final = fast_constructor(s.ErrorList)
REF: Final = fast_constructor(s.Ref)
BIND: Final = fast_constructor(s.Bind)
PAR: Final = fast_constructor(s.Par)
EACH: Final = fast_constructor(s.Each)
LOCAL: Final = fast_constructor(s.Local)
CATCH: Final = fast_constructor(s.Catch)
OR_ELSE: Final = fast_constructor(s.OrElse)
STATEMENT: Final = fast_constructor(s.Statement)
BLOCK: Final = fast_constructor(s.Block)
STEP_DECL: Final = fast_constructor(s.StepDecl)
FN_DECL: Final = fast_constructor(s.FnDecl)
PIPELINE_DECL: Final = fast_constructor(s.PipelineDecl)
COMMENT: Final = fast_constructor(s.Comment)
