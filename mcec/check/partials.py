"""The partial types of a streaming ``llm`` step (docs/language.md §14).

While ``stream llm answer : Q -> Answer = …`` streams, the run's event sink gets
``PartialOutput`` events whose value is an ``AnswerPartial``: ``Answer`` with every
field optional, a field holding another record class holding that class's
partial, a list of them a list of partials. The generated module defines these
classes (:mod:`mcec.codegen.emitter`), so mypy knows the partial's fields; this
module finds what they are made of: every record class (pydantic model or
dataclass) the output type names, and every record class their fields hold, with
the fields read from source (:meth:`~mcec.check.pyindex.PythonIndex.record_fields`).

A class whose fields cannot be read statically (a base class built at run time,
no index) has no generated partial: the runtime makes the same partial type from
the class itself when the step is built (``agentmonad.llm.partial.partial_model``).
"""

from __future__ import annotations

from typing import assert_never

from mcec.check.pyindex import PythonIndex
from mcec.check.typed import TPartial
from mcec.check.types import Builtin, ClassRef, Generic, Lit, Type, Union

__all__ = ["partial_classes"]


def partial_classes(output: Type, index: PythonIndex | None) -> tuple[TPartial, ...]:
    """The partial types a streaming step answering ``output`` needs, each class once, a class
    before the classes that hold it (so the generated module defines it first)."""
    if index is None:
        return ()
    found: dict[str, TPartial] = {}
    visiting: set[str] = set()

    def visit(tp: Type | None) -> None:
        match tp:
            case None | Builtin() | Lit():
                return
            case Generic(args=args):
                for arg in args:
                    visit(arg)
            case Union(members=members):
                for member in members:
                    visit(member)
            case ClassRef(path=path):
                if path in found or path in visiting:
                    return
                fields = index.record_fields(path)
                if fields is None:
                    return  # not a record (an enum, a datetime), or unreadable: kept as it is
                visiting.add(path)
                for field in fields:
                    visit(field.type)
                found[path] = TPartial(tp, tuple((f.name, f.type) for f in fields))
            case _:
                assert_never(tp)

    visit(output)
    return tuple(found.values())
